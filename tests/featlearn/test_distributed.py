"""Several processes through Lightning's DDP strategy (gloo on the CPU): the same SGD as one process."""

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from featlearn.batches import SetRows, TrainBatch

STEPS = 6
# Glasgow's XOR, small: a batch of 64 split 32 + 32 over two processes, a test set of 1001
# split 500 + 501 within each of its two chunks of at most 512.
CONFIG = {
    "seed_everything": 3,
    "trainer": {
        "max_steps": STEPS,
        "log_every_n_steps": 2,
        "accelerator": "cpu",
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "callbacks": [
            {"class_path": "StepCheckpoint", "init_args": {"every_n_train_steps": STEPS, "save_top_k": -1}},
            {"class_path": "XORPhaseDiagnostics", "init_args": {"cadence": 3}},
        ],
    },
    "data": {
        "class_path": "BooleanXOR",
        "init_args": {"dim": 8, "batch_size": 64, "test_size": 1001, "val_size": 0, "eval_batch_size": 512},
    },
    "model": {
        "class_path": "TwoLayerNet",
        "init_args": {"network": {"width": 16}, "init": {"scale": 0.5}, "training": {"lr": 0.5}, "ensemble_size": 2},
    },
}


def featlearn_script() -> str:
    """The installed console script: Lightning's DDP launcher re-runs the command it was started with."""
    return str(Path(sysconfig.get_path("scripts")) / "featlearn")


def run_fit(folder: Path, devices: int) -> Path:
    config = yaml.safe_load(yaml.safe_dump(CONFIG))
    config["trainer"]["devices"] = devices
    config["trainer"]["strategy"] = "ddp" if devices > 1 else "auto"
    config["trainer"]["logger"] = {
        "class_path": "pytorch_lightning.loggers.TensorBoardLogger",
        "init_args": {"save_dir": str(folder), "name": "run", "version": ""},
    }
    config["trainer"]["callbacks"][0]["init_args"]["dirpath"] = str(folder / "checkpoints")
    path = folder / "config.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [featlearn_script(), "fit", "--config", str(path)], capture_output=True, text=True, timeout=300, cwd=folder
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    events = sorted((folder / "run").glob("events.*"))  # events.out.tfevents.<time>.<host>.<pid>.<k>
    assert len({path.name.split(".")[-2] for path in events}) == 1, events  # one writing process: rank 0
    values: dict[str, list[tuple[int, float]]] = {}
    for path in events:
        acc = EventAccumulator(str(path)).Reload()
        for tag in acc.Tags()["scalars"]:
            values.setdefault(tag, []).extend((e.step, e.value) for e in acc.Scalars(tag))
    return values


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    return run_fit(root / "one", 1), run_fit(root / "two", 2)


def test_two_processes_take_the_same_sgd_steps_as_one(runs):
    one, two = runs
    (ckpt_one,) = (one / "checkpoints").glob(f"*step={STEPS}.ckpt")
    (ckpt_two,) = (two / "checkpoints").glob(f"*step={STEPS}.ckpt")  # rank 0 alone writes checkpoints
    state_one = torch.load(ckpt_one, map_location="cpu", weights_only=False)["state_dict"]
    state_two = torch.load(ckpt_two, map_location="cpu", weights_only=False)["state_dict"]
    assert state_one.keys() == state_two.keys()
    for key, value in state_one.items():
        torch.testing.assert_close(state_two[key], value, rtol=1e-5, atol=1e-6, msg=key)
    initial = torch.load(ckpt_one, map_location="cpu", weights_only=False)["global_step"]
    assert initial == STEPS


def test_metrics_are_reduced_across_processes_and_written_once(runs):
    one, two = runs
    a, b = scalars(one), scalars(two)
    for tag in ("train/loss", "test/error", "test/loss", "phase/test_loss", "phase/signal_heavy_frac"):
        assert tag in a and tag in b, tag
        assert [s for s, _ in a[tag]] == [s for s, _ in b[tag]], tag
        for (_, va), (_, vb) in zip(a[tag], b[tag], strict=True):
            # the test set is split 501 + 500 over the processes; their sums are reduced exactly
            assert vb == pytest.approx(va, rel=1e-5, abs=1e-6), tag
    assert b["sched/batch_size"][0][1] == 64  # the whole step's batch, not one process's part
    assert len(list((two / "run").glob("phase_neurons*.png"))) == len(list((one / "run").glob("phase_neurons*.png")))


def test_batch_parts_cover_the_batch_in_order():
    x, y = torch.arange(2 * 6 * 3.0).view(2, 6, 3), torch.arange(12.0).view(2, 6)
    inputs = torch.zeros(2, 10, 3)
    batch = TrainBatch((x, y), SetRows(inputs, torch.arange(12).view(2, 6)), torch.ones(2, 4, 3))
    parts = [batch.part(r, 2) for r in range(2)]
    torch.testing.assert_close(torch.cat([p[0] for p in parts], dim=1), x)
    torch.testing.assert_close(torch.cat([p.rows.index for p in parts], dim=1), batch.rows.index)
    assert parts[1].unlabelled.shape == (2, 2, 3) and parts[1].rows.inputs is inputs
    whole = TrainBatch((x, y), SetRows(torch.zeros(2, 6, 3), None)).part(1, 3)
    assert whole.rows.index.tolist() == [[2, 3], [2, 3]]  # the whole set in order: rows 2..3 for part 1
    with pytest.raises(ValueError, match="multiple of the number of processes"):
        batch.part(0, 4)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
