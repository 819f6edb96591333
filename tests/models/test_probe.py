import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from featlearn.datamodules import SparseCoding
from featlearn.models import SteppedFeatureProbe, TwoLayerNet
from featlearn.models.probe import hinge_sgd, weighted_gram, whitening_map

from ..conftest import grouped  # noqa: TID252
from .test_linearized import SHI_NET


def data_model(**kwargs):
    options = dict(d=16, D=8, k=3, train_size=400, test_size=200, val_size=0, batch_size=100, seed=2)
    return SparseCoding(**{**options, **kwargs})


@pytest.mark.parametrize("steps", [1, 2])
def test_probe_first_layer_is_the_networks_after_k_steps(fit, steps):
    net = TwoLayerNet(16, **grouped(12, lr=0.2, seed=4, ensemble_size=2, **SHI_NET))
    probe = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, ensemble_size=2, **SHI_NET))
    fit(net, data_model(ensemble_size=2), steps)
    fit(probe, data_model(ensemble_size=2), steps)
    torch.testing.assert_close(probe.net.w, net.net.w)
    torch.testing.assert_close(probe.net.b, net.net.b)
    assert int(probe.probed_at) == steps


def test_probe_is_the_converged_logistic_regression(fit):
    """The probe's classifier equals scikit-learn's on the same standardised features and objective."""
    data = data_model(ensemble_size=2)
    probe = SteppedFeatureProbe(
        16, **grouped(12, lr=0.2, seed=4, ensemble_size=2, probe_l2=1e-2, probe_tol=1e-9, **SHI_NET)
    )
    fit(probe, data, 2)
    x, y = data.train_set()  # (S, n, d), (S, n)
    n = x.shape[1]
    with torch.no_grad():
        hidden, scores = probe.net.hidden(x).double(), probe.scores(x).double()  # (S, n, p), (S, n)
    for s in range(2):
        h = hidden[s].numpy()
        mu, sd = h.mean(0), h.std(0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        u = (h - mu) / sd
        # sklearn minimises C sum_i log(1 + e^{-y_i f_i}) + ||v||^2 / 2: the same problem with C = 1 / (lambda n).
        reference = LogisticRegression(C=1.0 / (1e-2 * n), tol=1e-10, max_iter=10_000).fit(u, y[s].numpy())
        expected = reference.decision_function(u)  # (n,)
        np.testing.assert_allclose(scores[s].numpy(), expected, rtol=1e-4, atol=1e-4)
    assert probe.probe_report["grad_max"] <= 1e-9
    assert probe.probe_report["train_error"] == pytest.approx(
        float((y * probe.scores(x) <= 0).double().mean()), abs=1e-12
    )


def test_the_hessian_in_blocks_of_rows_equals_its_one_product_form():
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(3, 1000, 7, generator=generator, dtype=torch.float64)  # (S, n, p)
    weight = torch.rand(3, 1000, generator=generator, dtype=torch.float64)
    h_vv, h_vc = weighted_gram(u, weight, block_bytes=3 * 7 * 8 * 64)  # 64 rows a block, the last one short
    torch.testing.assert_close(h_vv, torch.bmm(u.transpose(1, 2), u * weight.unsqueeze(-1)), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(h_vc, torch.bmm(u.transpose(1, 2), weight.unsqueeze(-1)), rtol=1e-12, atol=1e-12)
    whole = weighted_gram(u, weight)  # one block
    torch.testing.assert_close(whole[0], h_vv, rtol=1e-12, atol=1e-12)


def test_probe_scores_a_set_from_kept_preactivations_with_its_output_bias(fit):
    data = data_model()
    probe = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, train_first_layer=False, **SHI_NET))
    fit(probe, data, 1)
    probe.trainer = None  # detached, so not at its last step: W is kept fixed, evaluations may come
    x, y = data.eval_set("test")
    assert probe.set_scorer(x) is not None and float(probe.output_bias.abs().max()) > 0
    torch.testing.assert_close(probe.evaluate_dataset(x, y, chunk=64), probe.evaluate_scores(probe.scores(x), y))


def test_probe_warns_when_the_stopping_rule_is_not_met(fit):
    probe = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, probe_max_iter=1, probe_tol=1e-12, **SHI_NET))
    with pytest.warns(UserWarning, match="probe_max_iter"):
        fit(probe, data_model(), 1)


def test_probe_in_online_mode_fits_on_its_own_fixed_sample(fit):
    data = data_model(train_size=None)
    probe = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, probe_samples=300, **SHI_NET))
    fit(probe, data, 1)
    x, _ = data.probe_set(300)
    assert x.shape == (1, 300, 16)
    torch.testing.assert_close(data.probe_set(300)[0], x)  # drawn once, reproducibly


@pytest.mark.parametrize(
    "override, match",
    [
        ({"probe_l2": -1.0}, "probe_l2"),
        ({"probe_max_iter": 0}, "probe_max_iter"),
        ({"probe_tol": 0.0}, "probe_tol"),
        ({"probe_samples": 0}, "probe_samples"),
        ({"probe_solver": "adam"}, "probe_solver"),
        ({"probe_whiten": True}, "probe_whiten"),  # Newton's method does not see a change of basis
        ({"probe_solver": "sgd", "probe_whiten": "yes"}, "probe_whiten"),
        ({"probe_solver": "sgd", "probe_sgd_lr": 0.0}, "probe_sgd_lr"),
        ({"probe_solver": "sgd", "probe_sgd_steps": 0}, "probe_sgd_steps"),
        ({"probe_solver": "sgd", "probe_sgd_batch": 0}, "probe_sgd_batch"),
    ],
)
def test_probe_rejects_bad_settings(override, match):
    with pytest.raises(ValueError, match=f"model.{match}"):
        SteppedFeatureProbe(16, **grouped(12, lr=0.2, **SHI_NET, **override))


def test_probe_fits_after_the_last_step_with_several_updates_per_batch(fit):
    one = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, **SHI_NET))
    chunked = SteppedFeatureProbe(16, **grouped(12, lr=0.2, seed=4, **SHI_NET))
    fit(one, data_model(), 5)
    fit(chunked, data_model(updates_per_batch=3), 5)
    assert int(chunked.probed_at) == 5
    torch.testing.assert_close(chunked.net.a, one.net.a)


def test_a_float64_run_forgets_the_initial_weights_at_a_step_float32_cannot_carry(fit):
    """Eq. (276)'s step: eta tiny, lambda = 1/(2 eta): w^(1) = -eta grad in float64 (trainer precision 64-true).

    The data model draws float32 inputs; the network casts them to its own dtype. In float32 the
    L2 gradient 2 lambda w = w / eta swamps the loss gradient, and w^(1) is not -eta grad.
    """
    eta = 1e-9
    steps = dict(lr_w=eta, lr_b=eta, lr_a=eta, weight_decay_w=1 / (2 * eta), weight_decay_b=0.0, weight_decay_a=0.0)
    options = {**SHI_NET, **steps}
    probes = {}
    for precision in ("64-true", "32-true"):
        probe = SteppedFeatureProbe(16, **grouped(12, seed=4, ensemble_size=1, **options))
        w0 = probe.net.w.detach().double().clone()
        fit(probe, data_model(), 1, precision=precision)
        probes[precision] = (probe, w0)
    probe, w0 = probes["64-true"]
    assert probe.net.w.dtype == torch.float64 and int(probe.probed_at) == 1
    step = probe.net.w.detach() / eta  # -grad, O(1): nothing of w^(0) is left in it
    cos_w0 = torch.nn.functional.cosine_similarity(step.flatten(), w0.flatten(), dim=0)
    assert 0 < float(step.abs().max()) < 1e3 and abs(float(cos_w0)) < 0.5
    single, w0 = probes["32-true"]
    left = torch.nn.functional.cosine_similarity(single.net.w.detach().double().flatten(), w0.flatten(), dim=0)
    assert abs(float(left)) > 0.5  # float32 kept w^(0)'s line: it could not carry the step


def test_whitened_features_have_unit_second_moment_in_every_direction():
    generator = torch.Generator().manual_seed(0)
    scales = torch.tensor([1.0, 1e-2, 1e-4, 3.0], dtype=torch.float64)
    u = torch.randn(2, 5000, 4, generator=generator, dtype=torch.float64) * scales  # (S, n, p), badly scaled
    u = u - u.mean(dim=1, keepdim=True)
    z = torch.bmm(u, whitening_map(u, eps=1e-14))
    second_moment = torch.bmm(z.transpose(1, 2), z) / 5000
    torch.testing.assert_close(second_moment, torch.eye(4).expand(2, 4, 4).double(), rtol=0, atol=1e-5)


def test_first_order_sgd_misses_a_badly_scaled_direction_that_whitening_restores():
    """The label lives on a feature 1e-3 the scale of the other: SGD at a rate stable on the large one moves the
    small one a million times slower; on whitened features the same rate fits it (the E.1.1 readout diagnostic)."""
    generator = torch.Generator().manual_seed(1)
    n = 4000
    signal = torch.randn(1, n, generator=generator, dtype=torch.float64)
    y = torch.sign(signal)  # (1, n)
    u = torch.stack([1e-3 * signal, torch.randn(1, n, generator=generator, dtype=torch.float64)], dim=-1)
    u = u - u.mean(dim=1, keepdim=True)  # (1, n, 2): the label's feature tiny, a noise feature at scale 1

    def accuracy(v, c, features):
        return float(((torch.bmm(features, v.unsqueeze(-1)).squeeze(-1) + c.unsqueeze(1)) * y > 0).double().mean())

    v, c, report = hinge_sgd(u, y, 0.5, 300, 100, torch.Generator().manual_seed(0))
    assert accuracy(v, c, u) < 0.75 and report["iterations"] == 300
    whitened = torch.bmm(u, whitening_map(u))
    v, c, _ = hinge_sgd(whitened, y, 0.5, 300, 100, torch.Generator().manual_seed(0))
    assert accuracy(v, c, whitened) > 0.98


def test_the_sgd_probe_writes_back_a_classifier_on_the_standardised_features(fit):
    data = data_model()
    probe = SteppedFeatureProbe(
        16, **grouped(12, lr=0.2, seed=4, probe_solver="sgd", probe_whiten=True, probe_sgd_steps=50, **SHI_NET)
    )
    fit(probe, data, 2)
    x, y = data.train_set()
    assert probe.probe_report["iterations"] == 50.0
    assert probe.probe_report["train_error"] == pytest.approx(
        float((y * probe.scores(x) <= 0).double().mean()), abs=1e-12
    )
    assert probe.probe_report["train_error"] < 0.5  # the written-back scores are the fitted classifier's
