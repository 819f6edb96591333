"""Interrupt a real run (Ctrl-C, SIGKILL), resume it with --ckpt_path last: the same run as one never interrupted."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow

STEPS = 240
OVERLAY = """
trainer:
  callbacks:
    - class_path: StepCheckpoint
      init_args: {save_last: true, every_n_train_steps: 10, save_top_k: 0}
    - class_path: XORPhaseDiagnostics
  enable_progress_bar: false
"""


def command(tmp_path, save_dir, *extra):
    script = Path(sys.executable).parent / "featlearn"
    (tmp_path / "overlay.yaml").write_text(OVERLAY)
    args = [str(script), "fit", "--config", "glasgow_xor", "--config", str(tmp_path / "overlay.yaml")]
    args += ["--data.init_args.dim", "8", "--data.init_args.batch_size", "64", "--model.init_args.network.width", "16"]
    return [*args, "--trainer.max_steps", str(STEPS), "--trainer.logger.init_args.save_dir", str(save_dir), *extra]


def checkpoint_step(path: Path) -> int:
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True)["global_step"])
    except Exception:  # noqa: BLE001 - not written yet
        return 0


def interrupt(tmp_path, save_dir, sig) -> subprocess.CompletedProcess:
    """Start the run, send ``sig`` once a checkpoint past a third of the run exists, and wait for it to end."""
    process = subprocess.Popen(command(tmp_path, save_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = save_dir / "glasgow_xor" / "version_0" / "checkpoints" / "last.ckpt"
    deadline = time.time() + 300
    while checkpoint_step(last) < STEPS // 3:
        assert process.poll() is None and time.time() < deadline, "the run ended before it could be interrupted"
        time.sleep(0.05)
    os.kill(process.pid, sig)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def phase_summary(run: subprocess.CompletedProcess) -> str:
    """The boundary steps XORPhaseDiagnostics prints at the end (through Lightning's log, on stderr)."""
    return re.search(r"boundary step \(per member\): (.*)", run.stdout + run.stderr).group(1)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("whole")
    done = subprocess.run(command(tmp_path, tmp_path / "runs"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp_path / "runs" / "glasgow_xor" / "version_0", phase_summary(done)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_an_interrupted_run_resumed_with_ckpt_path_last_is_the_uninterrupted_run(tmp_path, uninterrupted, sig):
    whole_folder, whole_summary = uninterrupted
    save_dir = tmp_path / "runs"
    stopped = interrupt(tmp_path, save_dir, sig)
    folder = save_dir / "glasgow_xor" / "version_0"
    assert checkpoint_step(folder / "checkpoints" / "last.ckpt") >= STEPS // 3  # readable, however it was killed
    if sig == signal.SIGINT:  # stopped at a step boundary, with a checkpoint there, and says how to go on
        assert stopped.returncode == 130, stopped.stderr[-2000:]
        step = int(re.search(r"interrupted at update step (\d+)\.", stopped.stdout).group(1))
        assert f"resume it from update step {step}: the same command with --ckpt_path last" in stopped.stdout
        assert checkpoint_step(folder / "checkpoints" / "last.ckpt") == step  # the interrupt's, not a periodic one
    resumed = subprocess.run(command(tmp_path, save_dir, "--ckpt_path", "last"), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert [p.name for p in (save_dir / "glasgow_xor").iterdir() if not p.name.startswith(".")] == ["version_0"]
    assert phase_summary(resumed) == whole_summary  # the diagnostics' history came back with the weights
    mine = torch.load(folder / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    theirs = torch.load(whole_folder / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert mine["global_step"] == theirs["global_step"] == STEPS
    for name, value in theirs["state_dict"].items():
        assert torch.equal(mine["state_dict"][name], value), name
