"""Any nn.Module trained by scheduled SGD (ModuleClassifier), and ResNet(m)."""

import pytest
import torch
from torchvision.models import resnet18

from featlearn.datamodules import ImageDataModule
from featlearn.models import ModuleClassifier, ScaledResNet18


def test_resnet64_is_resnet18_with_the_small_image_stem():
    ours = sum(p.numel() for p in ScaledResNet18(64, in_channels=3, num_outputs=1).parameters())
    theirs = sum(p.numel() for p in resnet18(num_classes=1).parameters())
    assert ours == theirs - 7 * 7 * 3 * 64 + 3 * 3 * 3 * 64  # only the stem's kernel differs


def test_resnet_widths_scale_with_m():
    net = ScaledResNet18(5, in_channels=1, num_outputs=1)
    widths = [stage[-1].conv2.out_channels for stage in net.stages]
    assert widths == [5, 10, 20, 40] and net.first_filters().shape == (5, 9)
    assert net(torch.randn(7, 1, 8, 8)).shape == (7, 1)
    for kwargs, name in (
        (dict(width=0), "width"),
        (dict(in_channels=0), "in_channels"),
        (dict(num_outputs=0), "num_outputs"),
    ):
        with pytest.raises(ValueError, match=f"model.network.{name}"):
            ScaledResNet18(**kwargs)
    for kwargs, name in (
        (dict(lr=-0.1), "model.lr"),
        (dict(lr=0.1, seed=-1), "model.seed"),
        (dict(lr=0.1, momentum=1.0), "model.momentum"),
    ):
        with pytest.raises(ValueError, match=name):
            ModuleClassifier(ScaledResNet18(2), **kwargs)


def _digits(ensemble_size=1, seed=0):
    return ImageDataModule(
        source="digits",
        classes=[0, 1],
        flatten=False,
        standardize="global",
        batch_size=32,
        ensemble_size=ensemble_size,
        seed=seed,
    )


def _learner(ensemble_size=1, seed=0, **kwargs):
    options = dict(lr=0.02, momentum=0.9, ensemble_size=ensemble_size, seed=seed)
    options.update(kwargs)
    return ModuleClassifier(ScaledResNet18(4, in_channels=1, num_outputs=1), **options)


def test_a_small_resnet_learns_digits_zero_and_one(fit):
    data, model = _digits(), _learner()
    fit(model, data, 15)
    _, error = model.evaluate_dataset(*data.eval_set("test"), chunk=512)
    assert float(error.max()) < 0.1


def test_ensemble_member_equals_the_single_run_with_its_seeds(fit):
    pair, data = _learner(ensemble_size=2, seed=3), _digits(ensemble_size=2)
    fit(pair, data, 4)
    single, data = _learner(seed=4), _digits(seed=1)  # member 1: model seed 3 + 1, data stream 0 + 1
    fit(single, data, 4)
    for p_pair, p_single in zip(pair.net[1].parameters(), single.net[0].parameters(), strict=True):
        torch.testing.assert_close(p_pair, p_single, rtol=1e-5, atol=1e-6)
    assert not torch.equal(next(pair.net[0].parameters()), next(pair.net[1].parameters()))


def test_evaluation_runs_in_eval_mode_and_leaves_batch_norm_statistics_alone():
    model, data = _learner(), _digits()
    x, _ = data.eval_set("test")
    stats = model.net[0].stem[1].running_mean.clone()
    model.train()
    model.scores(x)
    assert torch.equal(model.net[0].stem[1].running_mean, stats) and model.net.training


def test_networks_with_several_outputs_are_refused_for_binary_tasks():
    model = ModuleClassifier(ScaledResNet18(2, in_channels=1, num_outputs=2), lr=0.1)
    with pytest.raises(ValueError, match="one output unit"):
        model.scores(_digits().eval_set("test")[0])
    with pytest.raises(ValueError, match="model.network must be an nn.Module"):
        ModuleClassifier("resnet", lr=0.1)


def test_a_network_built_for_other_images_is_refused_with_the_fix():
    model = ModuleClassifier(ScaledResNet18(2, in_channels=3), lr=0.1)
    with pytest.raises(ValueError, match="in_channels: 1"):
        model.scores(_digits().eval_set("test")[0])


def test_every_network_learner_takes_the_sign_update_rule():
    from featlearn.models import MulticlassClassifier, QuadraticFC

    binary = ModuleClassifier(QuadraticFC(5, 4, 1), lr=0.1, update_rule="sign")
    multi = MulticlassClassifier(QuadraticFC(5, 4, 3), num_classes=3, lr=0.1, update_rule="sign")
    assert binary.sgd.rule == multi.sgd.rule == "sign"
    assert ModuleClassifier(QuadraticFC(5, 4, 1), lr=0.1).sgd.rule == "sgd"
    with pytest.raises(ValueError, match="model.update_rule"):
        ModuleClassifier(QuadraticFC(5, 4, 1), lr=0.1, update_rule="adam")
