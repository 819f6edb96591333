import pytest
import torch
import torch.nn.functional as F

from featlearn.datamodules import LabelledTensors
from featlearn.models import MulticlassClassifier, QuadraticFC, ScaledResNet18
from featlearn.models.multiclass import balance_entropy_regularizer


def test_fc_is_a_quadratic_hidden_layer_and_a_linear_head():
    net = QuadraticFC(in_features=6, width=4, num_outputs=3)
    x = torch.randn(5, 2, 3)  # flattened to d = 6
    z = x.flatten(1) @ net.hidden.weight.T + net.hidden.bias
    expected = (z**2) @ net.head.weight.T + net.head.bias
    assert torch.allclose(net(x), expected, atol=1e-6)
    assert sum(p.numel() for p in net.parameters()) == 6 * 4 + 4 + 4 * 3 + 3


def test_the_regulariser_is_the_papers_r1_plus_lambda_r2():
    logits = torch.randn(2, 7, 4, dtype=torch.float64)
    got = balance_entropy_regularizer(logits, entropy_weight=0.3)
    for s in range(2):
        p = torch.softmax(logits[s], -1)
        mean = p.mean(0)
        r1 = sum(mean[j] * torch.log(mean[j]) for j in range(4))
        r2 = -sum(p[i, j] * torch.log(p[i, j]) for i in range(7) for j in range(4)) / 7
        assert got[s].item() == pytest.approx((r1 + 0.3 * r2).item(), rel=1e-10)
    # R1 is smallest (-log C) when the classes are balanced on average; R2 is 0 for one-hot predictions.
    balanced = torch.eye(4).repeat(2, 1).unsqueeze(0) * 50
    assert balance_entropy_regularizer(balanced, 1.0).item() == pytest.approx(
        -torch.log(torch.tensor(4.0)).item(), abs=1e-6
    )


def toy_classes(n=300, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = 3 * torch.randn(3, 5, generator=gen)
    y = torch.arange(n) % 3
    return centres[y] + 0.5 * torch.randn(n, 5, generator=gen), y


def test_members_minimise_the_cross_entropy_and_learn_separable_classes(fit):
    x, y = toy_classes()
    data = LabelledTensors((x, y), (x, y), num_classes=3, batch_size=32, ensemble_size=2)
    model = MulticlassClassifier(QuadraticFC(5, 8, 3), num_classes=3, lr=0.02, momentum=0.9, ensemble_size=2, seed=0)
    logits = model.scores(x.expand(2, -1, -1))
    expected = torch.stack([F.cross_entropy(logits[s], y) for s in range(2)])
    assert torch.allclose(model.member_losses(logits, y.expand(2, -1)), expected)
    assert not torch.equal(model.net[0].hidden.weight, model.net[1].hidden.weight)  # members start apart
    fit(model, data, 300)
    loss, error = model.evaluate_scores(model.scores(x.expand(2, -1, -1)), y.expand(2, -1))
    assert (error < 0.05).all() and (loss < 0.3).all()


def test_the_regulariser_balances_the_predictions_on_unlabelled_inputs(fit):
    x, y = toy_classes()
    gen = torch.Generator().manual_seed(1)
    centre = x[y == 0].mean(0)
    u = centre + torch.randn(600, 5, generator=gen)  # unlabelled inputs around class 0 only
    shares, accuracy = {}, {}
    for weight in (0.0, 1.0):
        data = LabelledTensors((x, y), (x, y), unlabelled=u, unlabelled_batch_size=128, batch_size=32)
        model = MulticlassClassifier(
            QuadraticFC(5, 8, 3), num_classes=3, lr=0.005, momentum=0.9, regularizer_weight=weight, seed=0
        )
        fit(model, data, 300)
        shares[weight] = torch.softmax(model.scores(u.unsqueeze(0))[0], -1).mean(0)  # R1's average p on U
        accuracy[weight] = (model.predict_classes(x.unsqueeze(0))[0] == y).double().mean()
    assert shares[0.0][0] > 0.9  # a plain teacher calls all of U class 0
    assert shares[1.0][0] < 0.75 and shares[1.0].min() > 0.08  # R1 spreads U over the classes
    assert accuracy[1.0] > 0.95  # while L is still fitted


def test_a_regulariser_without_unlabelled_inputs_and_other_mismatches_are_refused(fit):
    x, y = toy_classes(30)
    data = LabelledTensors((x, y), (x, y), num_classes=3, batch_size=8)
    with pytest.raises(ValueError, match="regularizer_weight"):
        fit(MulticlassClassifier(QuadraticFC(5, 4, 3), num_classes=3, lr=0.1, regularizer_weight=1.0), data, 2)
    unstated = LabelledTensors((x, y), (x, y), batch_size=8)  # states no number of classes
    with pytest.raises(ValueError, match="num_outputs to 4"):
        fit(MulticlassClassifier(QuadraticFC(5, 4, 3), num_classes=4, lr=0.1), unstated, 2)
    with pytest.raises(ValueError, match="num_classes"):
        fit(MulticlassClassifier(QuadraticFC(5, 4, 2), num_classes=2, lr=0.1), data, 2)
    with pytest.raises(ValueError, match="model.num_classes"):
        MulticlassClassifier(QuadraticFC(5, 4, 3), num_classes=1, lr=0.1)
    with pytest.raises(ValueError, match="model.entropy_weight"):
        MulticlassClassifier(QuadraticFC(5, 4, 3), num_classes=3, lr=0.1, entropy_weight=-1)
    with pytest.raises(ValueError, match="network.width"):
        QuadraticFC(5, 0, 3)


def test_a_resnet_with_c_outputs_trains_as_a_member(fit):
    x = torch.rand(12, 3, 8, 8)
    y = torch.arange(12) % 4
    data = LabelledTensors((x, y), (x, y), num_classes=4, batch_size=4, ensemble_size=2)
    model = MulticlassClassifier(ScaledResNet18(width=2, num_outputs=4), num_classes=4, lr=0.01, ensemble_size=2)
    before = [p.detach().clone() for p in model.parameters()]
    fit(model, data, 2)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert model.scores(x.expand(2, *x.shape)).shape == (2, 12, 4)
    assert set(model.filter_banks()) >= {"stem.0"}
