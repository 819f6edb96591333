"""GPU checks: featlearn trains on a CUDA device as it does on the CPU.

Skipped where no CUDA device is present (CI has none); run them on a GPU machine with
``pytest -m cuda``. What they pin down:

* batches are drawn on the training device and every tensor of a run stays there;
* on the same batches, a GPU run reaches the CPU run's weights and diagnostics
  (to float32 round-off), for the network, the NTK (linear and kernel form) and the
  best-linear One/Two Step probe;
* same seed, same weights; chunked updates, stop/resume and ensembles behave on the
  GPU exactly as the CPU tests require;
* every experiment config (each overlay on its experiment) and a ``featlearn compare``
  of Table 1's methods run there.

A GPU run draws its data from CUDA generators, so its sample path differs from a CPU
run with the same seed (the same distribution, other draws); the parity tests below
therefore feed both devices batches drawn on the CPU.
"""

from __future__ import annotations

import math

import pytest
import pytorch_lightning as pl
import torch
import yaml

from featlearn.callbacks import FeatureAlignment, HeldOutAccuracy, StepCheckpoint, XORPhaseDiagnostics
from featlearn.cli import build_cli
from featlearn.config_files import resolve_config
from featlearn.datamodules import BooleanXOR, SparseCoding
from featlearn.datamodules.base import SyntheticDataModule
from featlearn.models import LinearizedTwoLayerNet, SteppedFeatureProbe, TwoLayerNet
from featlearn.models.base import ScheduledSGDModule
from featlearn.studies.compare import compare_command
from featlearn.studies.methods import DEFAULT_METHODS, load_methods
from featlearn.studies.samples import samples_command

from .conftest import CONFIGS, grouped
from .featlearn.runner.test_lightning import OVERLAYS, overlay_base
from .featlearn.studies.test_compare import TINY

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

EXPERIMENTS = sorted((CONFIGS / "experiments").glob("*.yaml"))
SMOKE = str(CONFIGS / "debug" / "smoke.yaml")


def cpu_drawn(base: type) -> type:
    """A data model drawing its samples on the CPU, from the seed of the generator it is given.

    The seed is the same on every device, so a CPU run and a GPU run see the same batches.
    """

    class CpuDrawn(base):
        def sample(self, n, generator, device):
            x, y = super().sample(n, torch.Generator().manual_seed(generator.initial_seed()), torch.device("cpu"))
            return x.to(device), y.to(device)

    CpuDrawn.__name__ = f"CpuDrawn{base.__name__}"
    return CpuDrawn


class DeviceRecorder(pl.Callback):
    """The devices of every training batch (each batch of a StepChunk) and of the model's tensors while training.

    Recorded during training: after ``fit`` Lightning moves the model back to the CPU.
    """

    def __init__(self) -> None:
        self.batch_devices: set[str] = set()
        self.model_devices: set[str] = set()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        updates = batch if isinstance(batch, list) else [batch]
        for x, y in updates:
            self.batch_devices |= {x.device.type, y.device.type}
        self.model_devices |= {t.device.type for t in (*pl_module.parameters(), *pl_module.buffers())}


@pytest.fixture
def evaluations(monkeypatch):
    """The (scores device, model device) of every ``evaluate_scores`` call: diagnostics, held-out sets, compare."""
    seen: list[tuple[str, str]] = []
    original = ScheduledSGDModule.evaluate_scores

    def spy(self, f, y):
        seen.append((f.device.type, self.device.type))
        return original(self, f, y)

    monkeypatch.setattr(ScheduledSGDModule, "evaluate_scores", spy)
    return seen


@pytest.fixture
def drawn_batches(monkeypatch):
    """The device of every training batch the data models draw."""
    seen: list[str] = []
    original = SyntheticDataModule.train_batch

    def spy(self, step):
        x, y = original(self, step)
        seen.extend({x.device.type, y.device.type})
        return x, y

    monkeypatch.setattr(SyntheticDataModule, "train_batch", spy)
    return seen


@pytest.fixture
def trained_batches(monkeypatch):
    """The device of every batch a learner updates on, whatever data model made it (drawn, or a data set's rows)."""
    seen: list[str] = []
    original = ScheduledSGDModule.training_update

    def spy(self, batch):
        x, y = batch
        seen.extend({x.device.type, y.device.type})
        return original(self, batch)

    monkeypatch.setattr(ScheduledSGDModule, "training_update", spy)
    return seen


@pytest.fixture
def fit_on(fit):
    """fit_on(device, model, datamodule, steps, **kwargs): the conftest ``fit`` on ``cpu`` or ``cuda``."""

    def _fit(device, model, datamodule, steps, **kwargs):
        return fit(model, datamodule, steps, accelerator="gpu" if device == "cuda" else "cpu", **kwargs)

    return _fit


def xor_model(**kwargs):
    options = dict(lr=[{"start": 1, "end": 3, "value": 0.5}, {"start": 4, "value": 0.2}], ensemble_size=2, seed=4)
    options.update(kwargs)
    return TwoLayerNet(12, **grouped(16, **options))


def xor_data(model, data: type = BooleanXOR, **kwargs):
    """XOR batches (d = 12, 64 per step) for ``model``: the data model takes the model's ensemble size."""
    options = dict(dim=12, batch_size=64, ensemble_size=model.ensemble_size)
    options.update(kwargs)
    return data(**options)


def test_batches_parameters_and_diagnostics_live_on_the_gpu(fit_on, evaluations):
    recorder = DeviceRecorder()
    phases, heldout = XORPhaseDiagnostics(points_per_decade=5), HeldOutAccuracy(cadence=5)
    model = xor_model(noise_std=0.05)
    data = xor_data(model, test_size=256, updates_per_batch=3)
    fit_on("cuda", model, data, 12, callbacks=[recorder, phases, heldout])
    assert recorder.batch_devices == recorder.model_devices == {"cuda"}
    assert evaluations and set(evaluations) == {("cuda", "cuda")}  # the diagnostics' held-out evaluations
    assert phases.history and all(math.isfinite(v) for row in phases.history for v in row.values())
    assert {0, 5, 10, 12} <= set(heldout.member_accuracy)


# Online batches, and a finite set used whole: minibatch indices are drawn on the training
# device too, so a finite set's minibatches differ between devices.
@pytest.mark.parametrize("train_size", [None, 64])
def test_gpu_run_matches_cpu_run_on_the_same_batches(fit_on, train_size):
    data = cpu_drawn(BooleanXOR)
    runs = {}
    for device in ("cpu", "cuda"):
        model = xor_model(weight_decay_w=0.01, bias=True)
        phases = XORPhaseDiagnostics(points_per_decade=5)
        fit_on(device, model, xor_data(model, data, train_size=train_size, test_size=512), 15, callbacks=[phases])
        runs[device] = model, phases.history
    (cpu, cpu_history), (gpu, gpu_history) = runs["cpu"], runs["cuda"]
    for name, param in cpu.net.named_parameters():
        torch.testing.assert_close(gpu.net.get_parameter(name).cpu(), param, rtol=1e-4, atol=1e-5, msg=name)
    assert [row["step"] for row in gpu_history] == [row["step"] for row in cpu_history]
    for cpu_row, gpu_row in zip(cpu_history, gpu_history, strict=True):
        assert gpu_row == pytest.approx(cpu_row, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("form", ["linear", "kernel"])
def test_ntk_on_the_gpu_matches_the_cpu(fit_on, form):
    data = cpu_drawn(BooleanXOR)
    outputs = {}
    for device in ("cpu", "cuda"):
        model = LinearizedTwoLayerNet(12, **grouped(16, lr=0.5, form=form, ensemble_size=2, seed=4))
        dm = data(dim=12, batch_size=200, train_size=200, test_size=128, ensemble_size=2)
        fit_on(device, model, dm, 6)
        x, _ = dm.eval_set("test")
        outputs[device] = model.scores(x.to(model.device)).detach().cpu()
    torch.testing.assert_close(outputs["cuda"], outputs["cpu"], rtol=1e-4, atol=1e-5)


def test_stepped_probe_on_the_gpu_matches_the_cpu(fit_on):
    data = cpu_drawn(SparseCoding)
    results = {}
    for device in ("cpu", "cuda"):
        model = SteppedFeatureProbe(**TINY["model"]["init_args"], input_dim=16, ensemble_size=2, seed=1)
        dm = data(**{**TINY["data"]["init_args"], "batch_size": 300, "seed": 3, "ensemble_size": 2})  # whole set
        fit_on(device, model, dm, 2)
        x, _ = dm.eval_set("test")
        results[device] = model.scores(x.to(model.device)).detach().cpu()
    torch.testing.assert_close(results["cuda"], results["cpu"], rtol=1e-3, atol=1e-4)


def test_gpu_same_seed_same_weights(fit_on):
    def run():
        model = xor_model(noise_std=0.1)
        fit_on("cuda", model, xor_data(model), 9)
        return model.net.w.detach().cpu()

    assert torch.equal(run(), run())


def test_gpu_chunked_updates_equal_single_updates(fit_on):
    def run(updates):
        model = xor_model(noise_std=0.1)
        phases = XORPhaseDiagnostics(points_per_decade=5)
        fit_on("cuda", model, xor_data(model, updates_per_batch=updates), 17, callbacks=[phases])
        return model.net.w.detach().cpu(), phases.history

    (w_one, history_one), (w_four, history_four) = run(1), run(4)
    assert torch.equal(w_one, w_four) and history_one == history_four


@pytest.mark.parametrize("updates_per_batch", [1, 4])
def test_gpu_stop_and_resume_equals_uninterrupted(fit_on, tmp_path, updates_per_batch):
    def run(steps, **kwargs):
        model = xor_model(noise_std=0.05)
        fit_on("cuda", model, xor_data(model, updates_per_batch=updates_per_batch), steps, **kwargs)
        return model

    full = run(10)
    ckpt = StepCheckpoint(dirpath=tmp_path, every_n_train_steps=5, save_top_k=-1)  # K > 1 needs its stated steps
    run(5, enable_checkpointing=True, callbacks=[ckpt])
    resumed = run(10, ckpt_path=str(tmp_path / "epoch=0-step=5.ckpt"))
    assert torch.equal(resumed.net.w, full.net.w) and torch.equal(resumed.net.a, full.net.a)


def test_gpu_ensemble_member_equals_single_run(fit_on):
    ensemble = xor_model(noise_std=0.1, ensemble_size=3, seed=10)
    fit_on("cuda", ensemble, xor_data(ensemble, seed=5), 6)
    for s in range(3):
        single = xor_model(noise_std=0.1, ensemble_size=1, seed=10 + s)
        fit_on("cuda", single, xor_data(single, seed=5 + s), 6)
        torch.testing.assert_close(ensemble.net.w[s], single.net.w[0], rtol=1e-5, atol=1e-6)


# Each experiment by its path, and each overlay (configs/experiments/shi/, barak/) by shipped name on
# the experiment it is written for.
RUNS = {path.stem: [str(path)] for path in EXPERIMENTS} | {
    f"{path.parent.name}/{path.stem}": [overlay_base(path), f"{path.parent.name}/{path.stem}"] for path in OVERLAYS
}


@pytest.mark.parametrize("configs", RUNS.values(), ids=RUNS.keys())
def test_every_experiment_config_runs_on_the_gpu(tmp_path, configs, drawn_batches, trained_batches, evaluations):
    for config in configs:  # a shipped name that does not resolve is a failure, not a machine without data
        resolve_config(config)
    try:
        cli = build_cli(
            [
                "fit",
                *(arg for config in (*configs, SMOKE) for arg in ("--config", config)),
                *("--trainer.accelerator", "gpu", "--trainer.default_root_dir", str(tmp_path)),
                *("--trainer.logger.init_args.save_dir", str(tmp_path / "runs")),
            ]
        )
    except FileNotFoundError as err:  # real-data configs need their files (the CPU suite writes tiny ones)
        pytest.skip(f"this machine lacks the config's data: {err}")
    assert cli.trainer.global_step == 3 and cli.trainer.strategy.root_device.type == "cuda"
    # Every update's batch is on the GPU; a synthetic data model also draws it there (real data sets, the
    # image and teacher-relabelled ones, are not drawn: they only index their rows on the GPU).
    assert trained_batches and set(trained_batches) == {"cuda"}
    assert set(drawn_batches) <= {"cuda"}
    assert drawn_batches or not isinstance(cli.datamodule, SyntheticDataModule)
    assert set(evaluations) <= {("cuda", "cuda")}
    assert math.isfinite(float(cli.trainer.callback_metrics["test/loss"]))


def test_compare_runs_table_1_on_the_gpu(tmp_path, evaluations):
    config = {**TINY, "trainer": {**TINY["trainer"], "accelerator": "gpu"}}
    path = tmp_path / "tiny_gpu.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    results = compare_command(
        ["--config", str(path), "--seeds", "2", "--out", str(tmp_path / "out"), "--no-tune"], build_cli
    )
    assert list(results) == [m.name for m in load_methods(resolve_config(DEFAULT_METHODS))]  # every method ran
    assert all(0 <= acc <= 100 for result in results.values() for acc in result["test_acc"])
    assert (tmp_path / "out" / "table.md").exists()
    # Every evaluation, the final train/test accuracies included, ran on the GPU.
    assert evaluations and set(evaluations) == {("cuda", "cuda")}


def test_samples_study_runs_on_the_gpu(tmp_path, evaluations):
    from .featlearn.studies.test_samples import TINY_STUDY

    study = {**TINY_STUDY, "base": {**TINY_STUDY["base"], "trainer": {**TINY_STUDY["base"]["trainer"]}}}
    study["base"]["trainer"]["accelerator"] = "gpu"
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    summary = samples_command(
        ["--config", "glasgow_xor", "--study", str(path), "--out", str(tmp_path / "out")], build_cli
    )
    assert {row["status"] for row in summary.rows} <= {"found", "at_min"}
    assert evaluations and set(evaluations) == {("cuda", "cuda")}


def test_feature_alignment_on_the_gpu(fit_on):
    alignment = FeatureAlignment(cadence=2, mds_steps=[])
    model = TwoLayerNet(**TINY["model"]["init_args"], input_dim=16, ensemble_size=2)
    fit_on("cuda", model, SparseCoding(**TINY["data"]["init_args"], ensemble_size=2), 4, callbacks=[alignment])
    assert [row["step"] for row in alignment.history] == [0, 1, 2, 3, 4]


def test_gpu_divergence_names_the_first_bad_step(fit_on):
    def first_bad_step(log_every_n_steps):
        rates = [{"start": 1, "end": 11, "value": 0.1}, {"start": 12, "value": 1e30}]
        model = xor_model(lr=rates)
        with pytest.raises(FloatingPointError, match="update step") as error:
            fit_on("cuda", model, xor_data(model), 30, log_every_n_steps=log_every_n_steps)
        return int(str(error.value).split("update step ")[1].split()[0])

    assert first_bad_step(50) == first_bad_step(1) >= 12


def test_random_signs_on_the_gpu_are_fair_uncorrelated_and_reproducible():
    """featlearn.sampling.rademacher on CUDA: 64 signs per int64 drawn over the full range."""
    from featlearn.sampling import rademacher

    def draw(seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        return rademacher((20000, 64), gen, torch.device("cuda"), torch.float64)

    x = draw(1)
    assert x.device.type == "cuda" and set(x.unique().tolist()) <= {-1.0, 1.0}
    assert torch.equal(x, draw(1)) and not torch.equal(x, draw(2))
    se = 1 / 20000**0.5
    assert x.mean(0).abs().max() < 5 * se
    off = (x.T @ x) / 20000 - torch.eye(64, dtype=torch.float64, device="cuda")
    assert off.abs().max() < 5.5 * se  # the 64 signs of one random integer are independent


def test_a_tuning_grid_trains_as_one_ensemble_on_the_gpu(tmp_path):
    """Per-point rates on the GPU: each point's block matches its own fit to float round-off."""
    from .models.test_member_values import SMALL, parameters

    grid = "{lr_a: [300.0, 3000.0], noise_std: [0.0, 0.2]}"
    gpu = ["--trainer.accelerator", "gpu", "--model.init_args.ensemble_size", "2"]
    together = parameters(build_cli(["fit", *SMALL, *gpu, "--model.init_args.member_values", grid]).model)
    for g, (lr_a, noise) in enumerate([(300.0, 0.0), (3000.0, 0.2)]):
        point = ["--model.init_args.training.lr_a", str(lr_a), "--model.init_args.training.noise_std", str(noise)]
        alone = parameters(build_cli(["fit", *SMALL, *gpu, *point]).model)
        for name, value in alone.items():
            torch.testing.assert_close(together[name][2 * g : 2 * g + 2].cpu(), value.cpu(), rtol=1e-4, atol=1e-5)


def test_images_with_labels_of_noise_are_stored_once_on_the_gpu():
    from featlearn.contracts import Placement
    from featlearn.datamodules import ImageDataModule

    dm = ImageDataModule(source="digits", classes=[3, 8], batch_size=16, label_noise=0.5, ensemble_size=3)
    dm.place(Placement(device=torch.device("cuda")))
    x, y = dm.train_set()  # (3, n, 64), (3, n): the images once, each member's labels its own
    assert x.is_cuda and y.is_cuda and x.stride(0) == 0 and not torch.equal(y[0], y[1])
