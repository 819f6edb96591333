"""The base learner's training machinery (ScheduledSGDModule), through its simplest learner.

Stop and resume, the divergence check, the logging cadence, several updates per
Lightning batch and the ensemble-size check belong to ScheduledSGDModule and the data
stream, whatever network a learner trains.
"""

import re

import pytest
import torch

from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet
from featlearn.models.sgd import DivergenceGuard, ScheduledSGD
from featlearn.models.updates import UpdateRecord

from ..conftest import SHI_PROCESS, grouped  # noqa: TID252


@pytest.mark.parametrize(
    "train_size, updates_per_batch, momentum", [(None, 1, 0.0), (100, 1, 0.0), (100, 4, 0.0), (100, 1, 0.9)]
)
def test_stop_and_resume_equals_uninterrupted(fit, tmp_path, train_size, updates_per_batch, momentum):
    """Also with momentum: its buffers are in the checkpoint."""
    from featlearn.callbacks import StepCheckpoint

    def make():
        model = TwoLayerNet(
            10,
            **grouped(
                8,
                lr=[{"start": 1, "end": 4, "value": 0.5}, {"start": 5, "value": 0.2}],
                noise_std=0.05,
                seed=3,
                momentum=momentum,
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
    monkeypatch.setattr(DivergenceGuard, "check_every", check_every)
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
    monkeypatch.setattr(DivergenceGuard, "check_every", 4)
    model = TwoLayerNet(8, **grouped(6, lr=0.1, seed=0))
    seen = []
    original = UpdateRecord.check

    def spy(self, learner):
        seen.append(len(self.divergence.pending))
        original(self, learner)

    monkeypatch.setattr(UpdateRecord, "check", spy)
    fit(model, BooleanXOR(dim=8, batch_size=32), 10, log_every_n_steps=1000)
    assert seen == [1, 4, 4, 1] and model.updates.divergence.pending == []  # step 1 is logged (a schedule starts there)


def test_schedule_shorter_than_run_fails_before_training(fit):
    model = TwoLayerNet(8, **grouped(4, lr=[{"start": 1, "end": 5, "value": 0.1}], seed=0))
    w0 = model.net.w.detach().clone()
    with pytest.raises(ValueError, match="model.training.lr covers steps 1..5 but trainer.max_steps is 10"):
        fit(model, BooleanXOR(dim=8, batch_size=8), 10)
    assert torch.equal(model.net.w, w0)


def test_train_metrics_are_written_on_the_log_cadence_and_where_a_schedule_changes(fit):
    from pytorch_lightning.loggers.logger import Logger

    class Recorder(Logger):
        name, version = "rec", 0
        calls = []

        def log_metrics(self, metrics, step=None):
            self.calls.append((step, dict(metrics)))

        def log_hyperparams(self, *args, **kwargs):
            pass

    recorder = Recorder()
    rates = [{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "end": 2, "value": 0.2}, {"start": 3, "value": 0.3}]
    model = TwoLayerNet(8, **grouped(6, lr=rates, ensemble_size=2, seed=0))
    fit(
        model,
        BooleanXOR(dim=8, batch_size=[{"start": 1, "end": 2, "value": 64}, {"start": 3, "value": 16}], ensemble_size=2),
        7,
        logger=recorder,
        log_every_n_steps=4,
    )
    train_calls = [(step, m) for step, m in recorder.calls if "train/loss" in m]
    assert [step for step, _ in train_calls] == [1, 2, 3, 4]  # steps 1-3 open segments of the rate schedule
    assert [m["sched/lr_w"] for _, m in train_calls] == [0.3, 0.2, 0.3, 0.3]
    train_calls = train_calls[1:]
    step, metrics = train_calls[0]
    assert metrics["sched/lr_w"] == 0.2 and metrics["sched/batch_size"] == 64  # step 2
    assert train_calls[1][1]["sched/batch_size"] == 16
    assert {"train/loss_min", "train/loss_max", "train_members/loss_0", "train_members/loss_1"} <= set(metrics)
    assert metrics["train/loss_min"] <= metrics["train/loss"] <= metrics["train/loss_max"]


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


@pytest.mark.parametrize("callbacks", [[], "heldout"])
def test_a_data_model_for_another_ensemble_size_is_refused_before_anything_runs(fit, callbacks):
    from featlearn.callbacks import HeldOutAccuracy

    callbacks = [HeldOutAccuracy()] if callbacks == "heldout" else []  # evaluates at step 0
    model = TwoLayerNet(10, **grouped(8, lr=0.3, ensemble_size=3))
    with pytest.raises(ValueError, match="give both the same ensemble size"):
        fit(model, BooleanXOR(dim=10, batch_size=16, test_size=64), 2, callbacks=callbacks)


def test_a_batch_size_schedule_may_end_at_max_steps(fit):
    """Lightning fetches a batch ahead; the stream stops at max_steps instead of drawing past the schedule."""
    data = BooleanXOR(dim=10, batch_size=[{"start": 1, "end": 4, "value": 16}])
    assert fit(TwoLayerNet(10, **grouped(8, lr=0.3)), data, 4).global_step == 4


def test_groups_at_rate_zero_get_no_gradient_and_the_same_weights(fit, monkeypatch):
    """Shi et al.'s process freezes the first layer from step 3: no backward through it, same weights."""
    from featlearn.datamodules import SparseCoding

    process = dict(
        SHI_PROCESS,
        sigma_w=0.3,
        sigma_b=0.1,
        sigma_a=1.0,
        lr_w=[{"start": 1, "end": 2, "value": 0.5}, {"start": 3, "value": 0.0}],
        lr_a=[{"start": 1, "end": 3, "value": 0.0}, {"start": 4, "value": 2.0}],  # a idle in steps 1-3
        weight_decay_w=[{"start": 1, "end": 1, "value": 0.2}, {"start": 2, "value": 0.0}],
        weight_decay_a=0.1,  # decay without rate: still no update
        noise_std=0.05,
        ensemble_size=2,
        seed=3,
    )

    def run(skip):
        if not skip:
            monkeypatch.setattr(ScheduledSGD, "idle_parameters", lambda self, step, processes=1: [])
        model = TwoLayerNet(12, **grouped(8, **process))
        data = SparseCoding(d=12, D=6, k=3, train_size=200, test_size=50, val_size=0, batch_size=50, ensemble_size=2)
        fit(model, data, 6)
        monkeypatch.undo()
        return model

    skipped, computed = run(skip=True), run(skip=False)
    for name in ("w", "b", "a"):
        assert torch.equal(getattr(skipped.net, name), getattr(computed.net, name)), name
    assert skipped.net.w.grad is None and computed.net.w.grad is not None  # step 6: w idle, not differentiated
    assert all(p.requires_grad for p in skipped.parameters())  # restored after training


def test_idle_groups_get_their_gradients_back_when_training_fails(fit):
    from pytorch_lightning.callbacks import Callback

    class FailAtStep3(Callback):
        def on_train_batch_start(self, trainer, *args):
            if trainer.global_step == 2:
                raise RuntimeError("stop")

    model = TwoLayerNet(
        8, **grouped(6, lr_w=[{"start": 1, "end": 1, "value": 0.3}, {"start": 2, "value": 0.0}], lr_a=0.3)
    )
    with pytest.raises(RuntimeError, match="stop"):
        fit(model, BooleanXOR(dim=8, batch_size=16), 5, callbacks=[FailAtStep3()])
    assert model.net.w.requires_grad and model.net.a.requires_grad
