"""Every shipped experiment, interrupted by a real Ctrl-C and resumed with the command featlearn prints.

For each name ``featlearn configs`` lists under experiments (overlays on the experiment
they are written for), shrunk to 4 steps: an uninterrupted run; then the same run
interrupted by SIGINT after step 2 (exit 130, a checkpoint at step 2, the printed
``--ckpt_path last`` hint), resumed with ``--ckpt_path last`` (exit 0). The resumed run
must continue in the one run folder and end with the uninterrupted run's weights, bit
for bit.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from pytorch_lightning.callbacks import Callback

from featlearn.cli.main import main
from featlearn.config_files import shipped_experiments

from ...datamodules.image_files import (  # noqa: TID252
    trust_written_files,
    write_cifar10,
    write_mnist,
    write_svhn,
)

#: The experiment an overlay is written for (its config's first lines say so).
OVERLAY_BASES = {
    "shi/gmm_2": "shi_gmm",
    "shi/gmm_3": "shi_gmm",
    "shi_teacher/svhn": "shi_teacher_cifar10_gaussian",
    "shi_teacher/image_folder": "shi_teacher_cifar10_gaussian",
}
FOLDER_BASES = {
    "shi": "shi_parity",
    "shi_real": "shi_real_mnist01",
    "shi_teacher": "shi_teacher_mnist5k_gaussian",
    "barak": "barak_parity",
}

SHRINK = """
trainer:
  max_steps: 4
  log_every_n_steps: 1
  enable_progress_bar: false
  enable_model_summary: false
test_after_fit: false
"""
INTERRUPT = """
trainer:
  callbacks+:
    - class_path: tests.featlearn.cli.test_resume_every_experiment.CtrlCAfterStep
      init_args: {step: 2}
"""


class CtrlCAfterStep(Callback):
    """Sends this process a real SIGINT (what Ctrl-C sends) once ``step`` updates are done."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: D102
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGINT)


def configs_of(name: str) -> list[str]:
    """The --config values that run ``name``: an experiment alone, an overlay after its experiment."""
    if "/" not in name:
        return [name]
    return [OVERLAY_BASES.get(name) or FOLDER_BASES[name.split("/")[0]], name]


def place_files(root: Path, monkeypatch) -> None:
    """Tiny files in every real format the experiments read: CIFAR-10, MNIST, SVHN, Fashion-MNIST, an image folder."""
    write_cifar10(root)
    write_mnist(root / "MNIST" / "raw")
    write_svhn(root)
    write_mnist(root, compress=True)  # Debian's Fashion-MNIST layout: the four *-ubyte.gz files in ROOT
    for label in ("a", "b"):
        folder = root / "tiny" / "train" / label
        folder.mkdir(parents=True)
        for i in range(3):
            pixels = np.random.default_rng(i).integers(0, 256, (64, 64, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{i}.png")
    trust_written_files(monkeypatch, root)


def command(name: str, tmp_path: Path, *extra: str) -> list[str]:
    args = ["fit"]
    for config in configs_of(name):
        args += ["--config", config]
    text = "\n".join(
        (Path(__file__).parents[3] / "configs" / "experiments" / f"{c}.yaml").read_text() for c in configs_of(name)
    )
    if "teacher" in name:
        args += ["--config", "debug/smoke_teacher"]
    args += ["--config", str(tmp_path / "shrink.yaml")]
    if "source:" in text or "root:" in text:
        args += ["--data.init_args.root", str(tmp_path / "data")]
    if name == "shi_real_cifar_resnet":  # ResNet(128) takes a minute for 12 steps on 2 cores; ResNet(8) seconds
        args += ["--model.init_args.network.init_args.width", "8"]
    if name == "shi_teacher/fashion_mnist":  # its 10000 training images, of the 40 written here
        args += ["--data.init_args.train_size", "30", "--data.init_args.test_size", "10"]
    if "injected_root" in text:
        args += ["--data.init_args.injected_root", str(tmp_path / "data" / "tiny" / "train")]
    return [*args, *extra]


def final_weights(save_dir: Path) -> tuple[list[Path], dict]:
    folders = [p for p in save_dir.glob("*/version_*")]
    checkpoint = torch.load(folders[0] / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    return folders, checkpoint


@pytest.fixture
def restore_ctrl_c():
    """Lightning ignores SIGINT after handling one (its graceful shutdown); give the test process Python's back."""
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.mark.parametrize("name", shipped_experiments())
def test_every_shipped_experiment_has_its_configs(name):
    """Fast: every overlay folder maps to its experiment, so a new folder cannot reach the slow step unmapped."""
    for config in configs_of(name):
        assert (Path(__file__).parents[3] / "configs" / "experiments" / f"{config}.yaml").is_file(), config


@pytest.mark.slow
@pytest.mark.parametrize("name", shipped_experiments())
def test_every_shipped_experiment_resumes_with_the_printed_command(name, tmp_path, monkeypatch, capsys, restore_ctrl_c):
    place_files(tmp_path / "data", monkeypatch)
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))  # the teachers, shared by the three runs
    (tmp_path / "shrink.yaml").write_text(SHRINK)
    (tmp_path / "interrupt.yaml").write_text(INTERRUPT)

    whole_dir = tmp_path / "whole"
    main(command(name, tmp_path, "--trainer.logger.init_args.save_dir", str(whole_dir)))
    [whole_folder], whole = final_weights(whole_dir)
    assert whole["global_step"] == 4

    save_dir = tmp_path / "runs"
    run = command(name, tmp_path, "--trainer.logger.init_args.save_dir", str(save_dir))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main([*run, "--config", str(tmp_path / "interrupt.yaml")])
    assert stopped.value.code == 130
    printed = capsys.readouterr().out
    assert "interrupted at update step 2." in printed and "resume it from update step 2" in printed, printed
    [folder], at_interrupt = final_weights(save_dir)
    assert at_interrupt["global_step"] == 2  # the checkpoint written at the Ctrl-C, not a periodic one

    signal.signal(signal.SIGINT, signal.default_int_handler)
    main([*run, "--ckpt_path", "last"])
    folders, resumed = final_weights(save_dir)
    assert folders == [folder], "the resume opened another run folder"
    assert resumed["global_step"] == 4
    assert resumed["state_dict"].keys() == whole["state_dict"].keys()
    for key, value in whole["state_dict"].items():
        assert torch.equal(resumed["state_dict"][key], value), key
