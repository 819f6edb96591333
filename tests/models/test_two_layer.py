import re

import pytest
import torch

from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet

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
    assert model.loss_name == "logistic" and model.gradient_scale() == 32
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


@pytest.mark.parametrize("train_size, updates_per_batch", [(None, 1), (100, 1), (100, 4)])
def test_stop_and_resume_equals_uninterrupted(fit, tmp_path, train_size, updates_per_batch):
    from featlearn.callbacks import StepCheckpoint

    def make():
        model = TwoLayerNet(
            10,
            **grouped(
                8,
                lr=[{"start": 1, "end": 4, "value": 0.5}, {"start": 5, "value": 0.2}],
                noise_std=0.05,
                seed=3,
            ),
        )
        dm = BooleanXOR(
            dim=10,
            batch_size=[{"start": 1, "end": 2, "value": 200}, {"start": 3, "value": 16}],
            train_size=train_size,
            updates_per_batch=updates_per_batch,
        )
        return model, dm

    full, dm = make()
    fit(full, dm, 10)

    first, dm = make()
    ckpt = StepCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=5, save_top_k=-1)
    fit(first, dm, 5, enable_checkpointing=True, callbacks=[ckpt])
    resumed, dm = make()
    fit(resumed, dm, 10, ckpt_path=str(tmp_path / "ckpt" / "epoch=0-step=5.ckpt"))
    torch.testing.assert_close(resumed.net.w, full.net.w, rtol=0, atol=0)
    torch.testing.assert_close(resumed.net.a, full.net.a, rtol=0, atol=0)


def test_divergence_stops_with_step_and_rate(fit):
    model = TwoLayerNet(8, **grouped(6, lr=[{"start": 1, "end": 2, "value": 0.1}, {"start": 3, "value": 1e30}], seed=0))
    with pytest.raises(FloatingPointError, match=r"step (3|4|5).*lr_w=1e\+30"):
        fit(model, BooleanXOR(dim=8, batch_size=32), 20, log_every_n_steps=1)


@pytest.mark.parametrize(
    "jump, log_every, updates_per_batch, check_every",
    [(3, 50, 1, 256), (3, 7, 1, 256), (3, 50, 4, 256), (12, 5, 1, 256), (12, 50, 3, 4), (12, 50, 1, 5)],
)
def test_divergence_between_log_steps_names_the_same_first_step(
    fit, monkeypatch, jump, log_every, updates_per_batch, check_every
):
    """Losses are checked in batches, off the hot path; the step named is the first bad one all the same.

    With the rate jump at step 12 the divergence falls after earlier checks have
    flushed the pending losses, so the window's first step must have moved on.
    """

    def first_bad_step(log_every_n_steps, updates=1):
        rates = [{"start": 1, "end": jump - 1, "value": 0.1}, {"start": jump, "value": 1e30}]
        model = TwoLayerNet(8, **grouped(6, lr=rates, seed=0))
        with pytest.raises(FloatingPointError, match="update step") as error:
            fit(
                model,
                BooleanXOR(dim=8, batch_size=32, updates_per_batch=updates),
                30,
                log_every_n_steps=log_every_n_steps,
            )
        return int(re.search(r"update step (\d+)", str(error.value)).group(1))

    reference = first_bad_step(1)
    assert reference > jump - 1
    monkeypatch.setattr(TwoLayerNet, "_CHECK_EVERY", check_every)
    assert first_bad_step(log_every, updates_per_batch) == reference


def test_diverged_weights_are_not_checkpointed(fit, tmp_path):
    from pytorch_lightning.callbacks import ModelCheckpoint

    rates = [{"start": 1, "end": 2, "value": 0.1}, {"start": 3, "value": 1e30}]
    ckpt = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=10, save_top_k=-1)
    with pytest.raises(FloatingPointError, match="update step"):
        fit(
            TwoLayerNet(8, **grouped(6, lr=rates, seed=0)),
            BooleanXOR(dim=8, batch_size=32),
            20,
            log_every_n_steps=50,
            enable_checkpointing=True,
            callbacks=[ckpt],
        )
    assert not list(tmp_path.glob("*.ckpt"))


def test_divergence_check_bounds_the_losses_it_keeps(fit, monkeypatch):
    monkeypatch.setattr(TwoLayerNet, "_CHECK_EVERY", 4)
    model = TwoLayerNet(8, **grouped(6, lr=0.1, seed=0))
    seen = []
    original = TwoLayerNet._raise_if_diverged

    def spy(self):
        seen.append(len(self._pending_losses))
        original(self)

    monkeypatch.setattr(TwoLayerNet, "_raise_if_diverged", spy)
    fit(model, BooleanXOR(dim=8, batch_size=32), 10, log_every_n_steps=1000)
    assert seen == [4, 4, 2] and model._pending_losses == []


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(width=0, lr=0.1), "model.network.width"),
        (dict(width=4), "model.lr_w is missing"),
        (dict(width=4, lr=-0.1), "model.lr"),
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
        (dict(width=4, lr=0.1, noise_std=-1.0), "model.noise_std"),
    ],
)
def test_bad_model_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TwoLayerNet(8, **grouped(**kwargs))


def test_schedule_shorter_than_run_fails_before_training(fit):
    model = TwoLayerNet(8, **grouped(4, lr=[{"start": 1, "end": 5, "value": 0.1}], seed=0))
    w0 = model.net.w.detach().clone()
    with pytest.raises(ValueError, match="model.lr covers steps 1..5 but trainer.max_steps is 10"):
        fit(model, BooleanXOR(dim=8, batch_size=8), 10)
    assert torch.equal(model.net.w, w0)


def test_train_metrics_are_written_on_the_log_cadence_only(fit):
    from pytorch_lightning.loggers.logger import Logger

    class Recorder(Logger):
        name, version = "rec", 0
        calls = []

        def log_metrics(self, metrics, step=None):
            self.calls.append((step, dict(metrics)))

        def log_hyperparams(self, *args, **kwargs):
            pass

    recorder = Recorder()
    model = TwoLayerNet(8, **grouped(6, lr=0.3, ensemble_size=2, seed=0))
    fit(
        model,
        BooleanXOR(dim=8, batch_size=[{"start": 1, "end": 2, "value": 64}, {"start": 3, "value": 16}], ensemble_size=2),
        6,
        logger=recorder,
        log_every_n_steps=2,
    )
    train_calls = [(step, m) for step, m in recorder.calls if "train/loss" in m]
    assert [step for step, _ in train_calls] == [2, 4, 6]
    step, metrics = train_calls[0]
    assert metrics["sched/lr_w"] == 0.3 and metrics["sched/batch_size"] == 64
    assert train_calls[1][1]["sched/batch_size"] == 16
    assert {"train/loss_min", "train/loss_max", "train_members/loss_0", "train_members/loss_1"} <= set(metrics)
    assert metrics["train/loss_min"] <= metrics["train/loss"] <= metrics["train/loss_max"]


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
    with pytest.raises(ValueError, match="model.lr_b"):
        TwoLayerNet(8, **grouped(6, lr=0.3, lr_b=-1.0, bias=True))


def test_several_updates_per_batch_change_nothing_but_the_batch_count(fit, tmp_path):
    """updates_per_batch = 5: same weights, diagnostics, logs and checkpoints as one update per batch."""
    from pytorch_lightning.callbacks import Callback
    from pytorch_lightning.loggers.logger import Logger

    from featlearn.callbacks import StepCheckpoint, XORPhaseDiagnostics

    class Recorder(Logger):
        name, version = "rec", 0

        def __init__(self):
            super().__init__()
            self.calls = []

        def log_metrics(self, metrics, step=None):
            self.calls.append((step, dict(metrics)))

        def log_hyperparams(self, *args, **kwargs):
            pass

    class BatchCounter(Callback):
        def __init__(self):
            self.steps = []

        def on_train_batch_end(self, trainer, *args):
            self.steps.append(trainer.global_step)

    def run(updates, folder):
        model = TwoLayerNet(10, **grouped(8, lr=0.4, noise_std=0.05, ensemble_size=2, seed=1))
        phases, counter, recorder = XORPhaseDiagnostics(points_per_decade=5), BatchCounter(), Recorder()
        ckpt = StepCheckpoint(dirpath=folder, every_n_train_steps=7, save_top_k=-1)
        data = BooleanXOR(
            dim=10,
            batch_size=[{"start": 1, "end": 3, "value": 64}, {"start": 4, "value": 16}],
            ensemble_size=2,
            updates_per_batch=updates,
        )
        trainer = fit(
            model,
            data,
            23,
            logger=recorder,
            log_every_n_steps=3,
            enable_checkpointing=True,
            callbacks=[phases, counter, ckpt],
        )
        assert trainer.global_step == 23
        return model, phases, counter, recorder, sorted(p.name for p in folder.iterdir())

    one = run(1, tmp_path / "one")
    five = run(5, tmp_path / "five")
    torch.testing.assert_close(five[0].net.w, one[0].net.w, rtol=0, atol=0)
    torch.testing.assert_close(five[0].net.a, one[0].net.a, rtol=0, atol=0)
    assert five[1].history == one[1].history  # every diagnostic at the same steps, same values
    assert [s for s, m in five[3].calls if "train/loss" in m] == [s for s, m in one[3].calls if "train/loss" in m]
    assert five[4] == one[4] == ["epoch=0-step=14.ckpt", "epoch=0-step=21.ckpt", "epoch=0-step=7.ckpt"]
    assert one[2].steps == list(range(1, 24))
    assert len(five[2].steps) < 23 and five[2].steps[-1] == 23  # fewer Lightning batches


def test_several_updates_per_batch_refuse_lightning_validation(fit):
    model = TwoLayerNet(10, **grouped(8, lr=0.3))
    with pytest.raises(ValueError, match="trainer.limit_val_batches: 0"):
        fit(
            model,
            BooleanXOR(dim=10, batch_size=16, updates_per_batch=4),
            5,
            limit_val_batches=1.0,
            val_check_interval=2,
        )


def test_several_updates_per_batch_refuse_a_checkpoint_that_hides_its_steps(fit, tmp_path):
    """Lightning keeps ModelCheckpoint's step cadence private: the plan cannot end a batch on it."""
    from pytorch_lightning.callbacks import ModelCheckpoint

    ckpt = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3)
    with pytest.raises(ValueError, match="StepCheckpoint"):
        fit(
            TwoLayerNet(10, **grouped(8, lr=0.3)),
            BooleanXOR(dim=10, batch_size=16, updates_per_batch=4),
            5,
            enable_checkpointing=True,
            callbacks=[ckpt],
        )
    assert not list(tmp_path.glob("*.ckpt"))


def test_batches_for_another_ensemble_size_are_refused(fit):
    with pytest.raises(ValueError, match="same ensemble_size"):
        fit(TwoLayerNet(10, **grouped(8, lr=0.3, ensemble_size=3)), BooleanXOR(dim=10, batch_size=16), 2)
