import pytest
import pytorch_lightning as pl
import torch

from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet
from featlearn.models.networks import TwoLayerNetwork

from ..conftest import grouped  # noqa: TID252


def glasgow_step_by_hand(w, a, x, y, eta):
    """One step of Glasgow (2023), Section 2.2, written from the paper's formulas (float64).

    l'(x) = -2 y e^{-y f} / (1 + e^{-y f}),
    grad_w = (1/m) sum_i a_w l'(x_i) 1[w.x_i > 0] x_i,  grad_a = (1/m) sum_i l'(x_i) relu(w.x_i),
    w <- w - eta grad_w,  a <- a - eta grad_a   (gradients already scaled by p).
    """
    w, a, x, y = (t.double() for t in (w, a, x, y))
    p = w.shape[0]
    pre = x @ w.T  # (m, p)
    f = (torch.relu(pre) @ a) / p  # (m,)
    lprime = -2 * y * torch.exp(-y * f) / (1 + torch.exp(-y * f))  # (m,)
    grad_w = ((lprime[:, None] * (pre > 0)) * a[None, :]).T @ x / x.shape[0]  # (p, d)
    grad_a = (lprime[:, None] * torch.relu(pre)).mean(0)  # (p,)
    return w - eta * grad_w, a - eta * grad_a


def test_defaults_are_glasgows_model():
    model = TwoLayerNet(16, **grouped(32, lr=0.1, init_scale=0.3))
    net = model.net
    assert net.scale == pytest.approx(1 / 32) and net.b is None and net.activation == "relu"
    assert model.loss_name == "logistic" and model.gradient_scale == 32
    # Sphere initialisation: ||w_j|| = theta, a_j = +-||w_j||.
    norms = net.w[0].norm(dim=1)
    torch.testing.assert_close(norms, torch.full((32,), 0.3))
    torch.testing.assert_close(net.a[0].abs(), norms)
    assert (net.a > 0).any() and (net.a < 0).any()


@pytest.mark.parametrize("steps", [1, 3])
def test_sgd_update_matches_paper_formulas(fit, steps):
    dm = BooleanXOR(dim=12, batch_size=64, seed=3)
    model = TwoLayerNet(12, **grouped(10, lr=0.7, init_scale=0.5, seed=1))
    w, a = model.net.w[0].detach().clone(), model.net.a[0].detach().clone()
    for t in range(1, steps + 1):
        x, y = dm.train_batch(t)  # the batch of step t is a pure function of t
        w, a = glasgow_step_by_hand(w, a, x[0], y[0], eta=0.7)
    fit(model, dm, steps)
    torch.testing.assert_close(model.net.w[0].double(), w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.net.a[0].double(), a, rtol=1e-5, atol=1e-6)


def test_weight_decay_is_explicit_l2_and_lambda_half_over_eta_forgets(fit):
    """Shi et al.: lambda_w = 1/(2 eta) makes w^(1) = -eta grad L (old weights forgotten)."""
    dm = BooleanXOR(dim=8, batch_size=32)
    eta = 0.5
    model = TwoLayerNet(
        8,
        **grouped(
            6,
            lr=eta,
            weight_decay_w=1 / (2 * eta),
            train_second_layer=False,
            mean_field_gradient=False,
            output_scale="standard",
            seed=0,
        ),
    )
    reference = TwoLayerNet(
        8, **grouped(6, lr=eta, train_second_layer=False, mean_field_gradient=False, output_scale="standard", seed=0)
    )
    w0 = reference.net.w.detach().clone()
    fit(model, dm, 1)
    fit(reference, BooleanXOR(dim=8, batch_size=32), 1)
    # reference: w0 - eta g ; decayed: w0 - eta (g + 2 lambda w0) = -eta g
    torch.testing.assert_close(model.net.w, reference.net.w - w0, rtol=1e-5, atol=1e-6)
    assert model.net.a.requires_grad is False


def test_frozen_first_layer_does_not_move(fit):
    model = TwoLayerNet(8, **grouped(6, lr=0.3, train_first_layer=False, seed=0))
    w0, a0 = model.net.w.detach().clone(), model.net.a.detach().clone()
    fit(model, BooleanXOR(dim=8, batch_size=32), 3)
    assert torch.equal(model.net.w, w0) and not torch.equal(model.net.a, a0)


def test_per_layer_rates_and_schedules_are_applied(fit):
    """eta_a = 0 from step 2 on: a moves once only; w keeps moving."""
    model = TwoLayerNet(
        8, **grouped(6, lr_w=0.3, lr_a=[{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "value": 0.0}], seed=0)
    )
    fit(model, BooleanXOR(dim=8, batch_size=32), 1)
    a1, w1 = model.net.a.detach().clone(), model.net.w.detach().clone()
    model2 = TwoLayerNet(
        8, **grouped(6, lr_w=0.3, lr_a=[{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "value": 0.0}], seed=0)
    )
    fit(model2, BooleanXOR(dim=8, batch_size=32), 4)
    assert torch.equal(model2.net.a, a1) and not torch.equal(model2.net.w, w1)
    assert model2.scheduled_values(1)["lr_a"] == 0.3 and model2.scheduled_values(2)["lr_a"] == 0.0


def test_noise_is_injected_into_preactivations_and_reproducible(fit):
    def run(noise):
        model = TwoLayerNet(8, **grouped(6, lr=0.3, noise_std=noise, seed=0))
        fit(model, BooleanXOR(dim=8, batch_size=32), 2)
        return model.net.w.detach().clone()

    quiet, noisy, noisy_again = run(0.0), run(0.5), run(0.5)
    assert not torch.equal(quiet, noisy)
    assert torch.equal(noisy, noisy_again)


def test_ensemble_member_equals_single_run(fit):
    """Member s of an S-ensemble (seeds 10+s, data seed 5+s) == a single run with those seeds."""
    S, steps = 4, 6
    ensemble = TwoLayerNet(10, **grouped(8, lr=0.4, noise_std=0.1, ensemble_size=S, seed=10))
    fit(ensemble, BooleanXOR(dim=10, batch_size=48, seed=5, ensemble_size=S), steps)
    for s in range(S):
        single = TwoLayerNet(10, **grouped(8, lr=0.4, noise_std=0.1, seed=10 + s))
        fit(single, BooleanXOR(dim=10, batch_size=48, seed=5 + s), steps)
        torch.testing.assert_close(ensemble.net.w[s], single.net.w[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ensemble.net.a[s], single.net.a[0], rtol=1e-5, atol=1e-6)


def test_same_seed_same_weights(fit):
    def run():
        model = TwoLayerNet(10, **grouped(8, lr=0.4, noise_std=0.05, seed=3))
        fit(model, BooleanXOR(dim=10, batch_size=48, train_size=100), 7)
        return model.net.w.detach().clone()

    assert torch.equal(run(), run())


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(width=0, lr=0.1), "model.network.width"),
        (dict(width=4), "model.training.lr_w is missing"),
        (dict(width=4, lr=-0.1), "model.training.lr"),
        (dict(width=4, lr=0.1, activation="tanh"), "model.network.activation"),
        (dict(width=4, lr=0.1, loss="mse"), "model.loss"),
        (dict(width=4, lr=0.1, init="xavier"), "model.init.scheme"),
        (dict(width=4, lr=0.1, init="gaussian_symmetric"), "model.init.sigma_w"),
        (dict(width=5, lr=0.1, init="gaussian_symmetric", sigma_w=1, sigma_b=1, sigma_a=1), "even"),
        (dict(width=4, lr=0.1, init_scale=0.0), "model.init.scale"),
        (dict(width=4, lr=0.1, ensemble_size=0), "model.ensemble_size"),
        (dict(width=4, lr=0.1, bias="yes"), "model.network.bias"),
        (dict(width=4, lr=0.1, seed=-1), "model.seed"),
        (dict(width=4, lr=0.1, train_first_layer=False, train_second_layer=False), "nothing would train"),
        (dict(width=4, lr=[{"start": 1, "end": 2, "value": 0.1}, {"start": 4, "value": 0.1}]), "gap"),
        (dict(width=4, lr=0.1, noise_std=-1.0), "model.training.noise_std"),
    ],
)
def test_bad_model_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TwoLayerNet(8, **grouped(**kwargs))


def test_noise_mode_expectation_trains_deterministically(fit):
    def run():
        model = TwoLayerNet(8, **grouped(6, lr=0.3, noise_std=0.2, noise_mode="expectation", seed=0))
        fit(model, BooleanXOR(dim=8, batch_size=32), 2)
        return model.net.w.detach().clone()

    assert torch.equal(run(), run())
    with pytest.raises(ValueError, match="model.noise_mode"):
        TwoLayerNet(8, **grouped(6, lr=0.3, noise_mode="mean"))


def test_bias_rate_can_differ_from_the_first_layer_rate(fit):
    model = TwoLayerNet(
        8,
        **grouped(
            6, lr=0.3, lr_b=[{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "value": 0.0}], bias=True, seed=0
        ),
    )
    fit(model, BooleanXOR(dim=8, batch_size=32), 1)
    b1, w1 = model.net.b.detach().clone(), model.net.w.detach().clone()
    again = TwoLayerNet(
        8,
        **grouped(
            6, lr=0.3, lr_b=[{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "value": 0.0}], bias=True, seed=0
        ),
    )
    fit(again, BooleanXOR(dim=8, batch_size=32), 3)
    assert torch.equal(again.net.b, b1) and not torch.equal(again.net.w, w1)
    assert again.scheduled_values(2)["lr_b"] == 0.0 and again.scheduled_values(2)["lr_w"] == 0.3
    with pytest.raises(ValueError, match="model.training.lr_b"):
        TwoLayerNet(8, **grouped(6, lr=0.3, lr_b=-1.0, bias=True))


def test_a_learner_built_from_the_dataclasses_resumes_and_loads_from_its_checkpoint(fit, tmp_path):
    from featlearn.callbacks import StepCheckpoint
    from featlearn.models.networks import Initialization, TwoLayerArchitecture

    def make():
        return TwoLayerNet(
            8, network=TwoLayerArchitecture(6, bias=True), init=Initialization(scale=0.5), training=dict(lr=0.3), seed=1
        )

    first = make()
    ckpt = StepCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1)
    fit(first, BooleanXOR(dim=8, batch_size=16), 2, enable_checkpointing=True, callbacks=[ckpt])
    path = tmp_path / "epoch=0-step=2.ckpt"
    resumed = make()
    fit(resumed, BooleanXOR(dim=8, batch_size=16), 4, ckpt_path=str(path))
    loaded = TwoLayerNet.load_from_checkpoint(path)
    assert loaded.hparams["network"]["width"] == 6 and torch.equal(loaded.net.w, first.net.w)


# ---------------------------------------------------------------- the frozen first layer's pre-activations
FEATURE_STEPS = [{"start": 1, "end": 2, "value": 0.3}, {"start": 3, "value": 0.0}]  # then only a trains


def _shi_like(cache_mb, ensemble_size=2, **kwargs):
    """Two feature steps then the classifier stage, on a finite training set of 64 samples."""
    options = dict(lr_w=FEATURE_STEPS, lr_a=0.2, bias=True, noise_std=0.05, ensemble_size=ensemble_size, seed=3)
    options.update(kwargs)
    model = TwoLayerNet(8, **grouped(10, preactivation_cache_mb=cache_mb, **options))
    data = BooleanXOR(dim=8, batch_size=16, train_size=64, ensemble_size=ensemble_size)
    return model, data


def _count_products(monkeypatch):
    """Rows of every x W^T product the two-layer networks compute."""
    rows, product = [], TwoLayerNetwork.preactivation
    monkeypatch.setattr(TwoLayerNetwork, "preactivation", lambda net, x: rows.append(x.shape[1]) or product(net, x))
    return rows


def test_frozen_first_layer_uses_the_sets_preactivations_and_trains_the_same_weights(fit, monkeypatch):
    rows = _count_products(monkeypatch)
    cached, data = _shi_like(cache_mb=64)
    fit(cached, data, 12)
    assert rows == [16, 16, 64]  # steps 1-2 on their batches, then Z of the 64 samples once for steps 3-12
    rows.clear()
    plain, data = _shi_like(cache_mb=0)
    fit(plain, data, 12)
    assert rows == [16] * 12
    for p_cached, p_plain in zip(cached.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(p_cached, p_plain, rtol=1e-5, atol=1e-6)  # the same up to round-off
    assert not torch.equal(cached.net.a, _shi_like(cache_mb=64)[0].net.a)  # a did train


def test_random_features_use_the_cache_from_the_first_step(fit, monkeypatch):
    rows = _count_products(monkeypatch)
    model, data = _shi_like(cache_mb=64, lr_w=None, lr=0.2, train_first_layer=False, noise_std=0.0)
    fit(model, data, 6)
    assert rows == [64]


def test_the_cache_follows_changes_of_the_first_layer_and_the_set():
    model, data = _shi_like(cache_mb=64, ensemble_size=1, train_first_layer=False, lr_w=None, lr=0.1, noise_std=0.0)
    batch = data.train_batch(3)
    x, _ = batch
    with torch.no_grad():
        assert torch.allclose(model.training_output(x, 3, batch.rows), model.net(x), atol=1e-6)
        model.net.w.add_(0.5)  # e.g. a callback or a loaded checkpoint changed W
        assert torch.allclose(model.training_output(x, 3, batch.rows), model.net(x), atol=1e-6)
        other = BooleanXOR(dim=8, batch_size=16, train_size=64, seed=9).train_batch(3)
        assert torch.allclose(model.training_output(other[0], 3, other.rows), model.net(other[0]), atol=1e-6)


def test_the_cache_is_skipped_where_it_does_not_pay(monkeypatch):
    # Frozen for 2 steps of 16 rows: 32 < 64 rows, cheaper to multiply.
    short = [{"start": 1, "end": 2, "value": 0.0}, {"start": 3, "value": 0.3}]
    model, data = _shi_like(cache_mb=64, lr_w=short)
    batch = data.train_batch(1)
    model.net.w.requires_grad_(False), model.net.b.requires_grad_(False)  # as during an update at rate 0
    assert model.frozen_preactivations(batch.rows, 1) is None
    model, _ = _shi_like(cache_mb=1e-4)  # Z would take 2 x 64 x 10 x 4 bytes, over the budget
    model.net.w.requires_grad_(False), model.net.b.requires_grad_(False)
    assert model.frozen_preactivations(batch.rows, 3) is None
    assert _shi_like(cache_mb=64)[0].frozen_preactivations(batch.rows, 3) is None  # W trains: no cache
    assert _shi_like(cache_mb=64)[0].frozen_preactivations(None, 3) is None  # online batches


class _EvaluateEveryStep(pl.Callback):
    """Evaluates the data model's test set after every update, as HeldOutAccuracy's curve does."""

    def __init__(self, data):
        self.data, self.results = data, []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        x, y = self.data.eval_set("test")
        self.results.append(pl_module.evaluate_dataset(x, y, chunk=24))


def _evaluated_run(fit, cache_mb, **kwargs):
    model, _ = _shi_like(cache_mb, **kwargs)
    data = BooleanXOR(dim=8, batch_size=16, train_size=64, test_size=40, ensemble_size=2)
    watcher = _EvaluateEveryStep(data)
    fit(model, data, 6, callbacks=[watcher])
    return watcher.results


def test_held_out_evaluations_read_the_frozen_first_layers_preactivations_once(fit, monkeypatch):
    rows = _count_products(monkeypatch)
    cached = _evaluated_run(fit, cache_mb=64)
    # Step 1: its batch, then the test set in two chunks (W trains at step 2). Step 2: its
    # batch, then the test set's Z whole, kept (W stays from step 3 on). Step 3: the
    # training set's Z. Steps 4-6 and their evaluations: no product.
    assert rows == [16, 24, 16, 16, 40, 64]
    rows.clear()
    plain = _evaluated_run(fit, cache_mb=0)
    assert rows == [16, 24, 16] * 6
    for (loss, error), (plain_loss, plain_error) in zip(cached, plain, strict=True):
        torch.testing.assert_close(loss, plain_loss, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(error, plain_error)


def test_the_training_and_held_out_caches_share_one_budget(fit, monkeypatch):
    rows = _count_products(monkeypatch)
    # Z of the 40 test rows takes 2 x 40 x 10 x 4 = 3200 bytes, of the 64 training rows 5120: either fits
    # 6000 bytes alone, not both. The test set's, kept first (after step 2), leaves no room for the other.
    _evaluated_run(fit, cache_mb=6000 / 2**20)
    assert rows == [16, 24, 16, 16, 40, 16, 16, 16, 16]


def test_a_kept_held_out_preactivation_is_dropped_when_the_first_layer_moves():
    model, _ = _shi_like(cache_mb=64, train_first_layer=False, lr_w=None, lr=0.1, noise_std=0.0)
    x, y = BooleanXOR(dim=8, batch_size=16, test_size=40, ensemble_size=2).eval_set("test")
    expected = model.evaluate_scores(model.scores(x), y)
    assert model.set_scorer(x) is not None  # no trainer: W never trains, evaluations to come
    torch.testing.assert_close(model.evaluate_dataset(x, y), expected)
    with torch.no_grad():
        model.net.w.mul_(-1.0)  # e.g. a loaded checkpoint changed W
    torch.testing.assert_close(model.evaluate_dataset(x, y), model.evaluate_scores(model.scores(x), y))
    assert not torch.equal(model.evaluate_scores(model.scores(x), y)[0], expected[0])
    assert _shi_like(cache_mb=64)[0].set_scorer(x) is None  # W trains at the next step
    assert _shi_like(cache_mb=1e-4, train_first_layer=False, lr_w=None, lr=0.1)[0].set_scorer(x) is None  # budget


def test_preactivation_cache_budget_is_checked():
    with pytest.raises(ValueError, match="model.preactivation_cache_mb"):
        _shi_like(cache_mb=-1)


# ---------------------------------------------------------------- momentum
def test_momentum_zero_is_plain_sgd_bit_for_bit(fit):
    def run(**kwargs):
        model = TwoLayerNet(8, **grouped(6, lr=0.3, seed=0, **kwargs))
        fit(model, BooleanXOR(dim=8, batch_size=32), 4)
        return [p.detach().clone() for p in model.parameters()]

    for plain, zero in zip(run(), run(momentum=0.0), strict=True):
        assert torch.equal(plain, zero)


def test_momentum_follows_the_heavy_ball_rule_and_its_schedule(fit):
    """b_t = mu(t) b_{t-1} + g_t, theta_t = theta_{t-1} - eta b_t, with mu from a per-step schedule."""
    mu = [{"start": 1, "end": 2, "value": 0.0}, {"start": 3, "value": 0.9}]
    data = BooleanXOR(dim=8, batch_size=32)
    model = TwoLayerNet(8, **grouped(6, lr=0.2, seed=1, momentum=mu, mean_field_gradient=False))
    w, a = model.net.w.detach().clone().requires_grad_(True), model.net.a.detach().clone().requires_grad_(True)
    buffers = [torch.zeros_like(w), torch.zeros_like(a)]
    for step in range(1, 6):  # the same update by hand
        x, y = data.train_batch(step)
        f = torch.relu(torch.bmm(x, w.transpose(1, 2))) @ a.unsqueeze(-1) / 6
        loss = model.member_losses(f.squeeze(-1), y).sum()
        grads = torch.autograd.grad(loss, [w, a])
        m = 0.0 if step <= 2 else 0.9
        with torch.no_grad():
            for param, buf, grad in zip((w, a), buffers, grads, strict=True):
                buf.mul_(m).add_(grad)
                param -= 0.2 * buf
    fit(model, data, 5)
    torch.testing.assert_close(model.net.w, w.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.net.a, a.detach(), rtol=1e-5, atol=1e-6)
    assert model.scheduled_values(3)["momentum"] == 0.9


@pytest.mark.parametrize("momentum", [1.0, -0.1, [{"start": 1, "value": 0.5, "end_value": 1.2, "end": 9}]])
def test_momentum_outside_zero_one_is_refused(momentum):
    with pytest.raises(ValueError, match="model.momentum"):
        TwoLayerNet(8, **grouped(6, lr=0.1, momentum=momentum))


def test_class_weighted_loss_is_eq_295_mixed_by_its_schedule():
    model = TwoLayerNet(
        4,
        **grouped(3, lr=0.1),
        loss="hinge",
        positive_rate=0.2,
        class_weighting=[
            {"start": 1, "end": 1, "value": 1.0},
            {"start": 2, "end": 2, "value": 0.5},
            {"start": 3, "value": 0.0},
        ],
    )
    f = torch.tensor([[0.3, -2.0, 0.5, 0.1]])
    y = torch.tensor([[1.0, -1.0, -1.0, 1.0]])
    per_sample = torch.clamp(1 - y * f, min=0)  # the hinge loss
    alpha = torch.where(y > 0, 1 / (2 * 0.2), 1 / (2 * 0.8))  # 2.5 for +1, 0.625 for -1
    torch.testing.assert_close(model.training_losses(f, y, 1), (alpha * per_sample).mean(dim=1))
    torch.testing.assert_close(model.training_losses(f, y, 2), ((1 + 0.5 * (alpha - 1)) * per_sample).mean(dim=1))
    torch.testing.assert_close(model.training_losses(f, y, 3), model.member_losses(f, y))  # omega = 0: the plain mean
    assert model.scheduled_values(1)["class_weighting"] == 1.0
    # balanced classes: alpha = 1 whatever omega is
    balanced = TwoLayerNet(4, **grouped(3, lr=0.1), positive_rate=0.5, class_weighting=1.0)
    torch.testing.assert_close(balanced.training_losses(f, y, 1), balanced.member_losses(f, y))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"class_weighting": 1.5}, r"class_weighting must lie in \[0, 1\]"),
        ({"class_weighting": -0.1}, r"model.class_weighting: value must be >= 0"),
        ({"positive_rate": 0.0}, "positive_rate"),
        ({"positive_rate": 1.0}, "positive_rate"),
    ],
)
def test_bad_class_weights_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TwoLayerNet(4, **grouped(3, lr=0.1), **kwargs)


def test_class_weights_without_a_prior_fail_before_the_first_step(fit):
    model = TwoLayerNet(8, **grouped(3, lr=0.1), class_weighting=1.0)
    with pytest.raises(ValueError, match="model.class_weighting needs Pr\\[y = \\+1\\]: set model.positive_rate"):
        fit(model, BooleanXOR(dim=8, batch_size=16), 2)


def test_the_learner_is_handed_one_members_network_and_trains_s_members_of_it():
    """As ModuleClassifier: the network given is one member's; the learner draws S members from init."""
    from featlearn.models import TwoLayerNetwork

    handed = TwoLayerNet(
        network=TwoLayerNetwork(6, 8, activation="truncated_relu", bias=True),
        training=dict(lr=0.1),
        ensemble_size=3,
        seed=2,
    )
    spelled = TwoLayerNet(
        6,
        network={"width": 8, "activation": "truncated_relu", "bias": True},
        training=dict(lr=0.1),
        ensemble_size=3,
        seed=2,
    )
    for p, q in zip(handed.net.parameters(), spelled.net.parameters(), strict=True):
        assert torch.equal(p, q)
    assert handed.net.w.shape == (3, 8, 6) and handed.hparams["input_dim"] == 6
    assert handed.hparams["network"] == {
        "width": 8,
        "activation": "truncated_relu",
        "bias": True,
        "output_scale": "mean_field",
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"input_dim": 5}, "model.input_dim = 5 but the network's input_dim is 6"),
        ({"network_members": 2}, "model.network.ensemble_size is 2"),
        ({"network": None}, "model.network is missing"),
    ],
)
def test_a_handed_network_that_disagrees_with_the_learner_is_refused(kwargs, match):
    from featlearn.models import TwoLayerNetwork

    members = kwargs.pop("network_members", 1)
    network = kwargs.pop("network", TwoLayerNetwork(6, 4, ensemble_size=members))
    with pytest.raises(ValueError, match=match):
        TwoLayerNet(network=network, training=dict(lr=0.1), **kwargs)


def test_a_group_given_as_a_mapping_names_a_key_it_does_not_have():
    with pytest.raises(ValueError, match=r"model.training takes no 'lrx': its fields are lr, lr_w, lr_b, lr_a"):
        TwoLayerNet(input_dim=4, network={"width": 4}, training={"lr": 0.1, "lrx": 1.0})
    with pytest.raises(ValueError, match=r"model.init takes no 'sigma'"):
        TwoLayerNet(input_dim=4, network={"width": 4}, init={"sigma": 1.0}, training={"lr": 0.1})


def test_sign_sgd_is_an_update_rule_the_learner_takes(fit):
    """update_rule: sign steps each coordinate by c eta sign(g): the plain step's size would follow |g|."""
    dm = BooleanXOR(dim=12, batch_size=64, seed=3)
    plain = TwoLayerNet(12, **grouped(10, lr=0.05, init_scale=0.5, seed=1))
    signed = TwoLayerNet(12, **grouped(10, lr=0.05, init_scale=0.5, seed=1, update_rule="sign"))
    w0 = signed.net.w[0].detach().clone()
    fit(plain, dm, 1)
    fit(signed, dm, 1)
    moved = (signed.net.w[0].detach() - w0).abs()  # c eta = p eta = 0.5 on every coordinate with g != 0
    assert moved.max().item() == pytest.approx(0.5, rel=1e-5)
    assert set(torch.unique(moved.round(decimals=5)).tolist()) <= {0.0, 0.5}
    sign = torch.sign(signed.net.w[0].detach() - w0)
    torch.testing.assert_close(sign, torch.sign(plain.net.w[0].detach() - w0))  # same direction per coordinate
    with pytest.raises(ValueError, match="model.update_rule"):
        TwoLayerNet(12, **grouped(10, lr=0.05, update_rule="signum"))
    with pytest.raises(ValueError, match="model.momentum to 0"):
        TwoLayerNet(12, **grouped(10, lr=0.05, update_rule="sign", momentum=0.9))


def test_the_first_layer_gradient_is_the_data_losss_gradient_without_decay_or_noise():
    model = TwoLayerNet(6, **grouped(8, lr=0.1, weight_decay_w=0.3, noise_std=0.5, seed=2), ensemble_size=2)
    x = torch.randn(2, 50, 6)
    y = torch.sign(torch.randn(2, 50))
    w = model.net.w.detach().clone().requires_grad_(True)
    pre = torch.einsum("snd,spd->snp", x, w)  # (S, n, p)
    f = (torch.relu(pre) * model.net.a.detach()[:, None, :]).sum(-1) / 8  # mean-field scale 1/p
    loss = torch.nn.functional.softplus(-y * f).mul(2).mean(dim=1).sum()  # the logistic loss, 2 log(1 + e^-yf)
    (expected,) = torch.autograd.grad(loss, w)
    got = model.first_layer_gradient(x, y, chunk=17)  # in chunks: the same mean
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-7)
    assert model.net.w.requires_grad and model.net.w.grad is None  # nothing left behind
