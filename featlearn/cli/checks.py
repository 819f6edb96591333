"""Checks of a parsed run config, made before any object is built or any folder written.

A mistake found here costs nothing: the run has not started, no ``version_k`` folder
exists. Each error names the setting, the value and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import yaml

#: ``--ckpt_path`` values Lightning resolves itself (not files).
CKPT_KEYWORDS = ("last", "best", "hpc", "registry")


def check_yaml_files(paths: list[str]) -> None:
    """Every ``--config`` file must be valid YAML holding a mapping.

    Raises:
        ValueError: Naming the file, the line and column, and the problem.
    """
    for path in paths:
        try:
            content = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(err, "problem", None) or str(err)
            raise ValueError(f"--config {path} is not valid YAML{where}: {problem}.") from None
        if content is not None and not isinstance(content, dict):
            kind = type(content).__name__
            raise ValueError(f"--config {path} must hold a mapping (trainer:, model:, data:), got a {kind}.")


def check_trainer(trainer) -> None:
    """Trainer settings that make no sense for featlearn's step-scheduled runs, or on this machine.

    Raises:
        ValueError: ``max_steps`` that is not a positive count, ``log_every_n_steps`` < 1,
            a GPU accelerator without a GPU, or a logger folder that cannot be written.
    """
    steps = trainer.get("max_steps")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(
            f"trainer.max_steps must be a positive number of update steps, got {steps!r}: featlearn's runs count "
            f"update steps (schedules, diagnostics and checkpoints are per step), and {steps!r} would never "
            f"end or never start. Set it, e.g. --trainer.max_steps 1000."
        )
    every = trainer.get("log_every_n_steps")
    if every is not None and (not isinstance(every, int) or every < 1):
        raise ValueError(f"trainer.log_every_n_steps must be an integer >= 1, got {every!r}.")
    accelerator = trainer.get("accelerator")
    if isinstance(accelerator, str) and accelerator.lower() in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"trainer.accelerator is {accelerator!r}, but this machine has no CUDA GPU that torch can use: "
            f"use --trainer.accelerator cpu, or auto (a GPU where there is one)."
        )
    logger = trainer.get("logger")
    init_args = logger.get("init_args") if hasattr(logger, "get") else None
    save_dir = init_args.get("save_dir") if init_args is not None else None
    if save_dir:
        check_writable_folder(Path(save_dir), "trainer.logger.init_args.save_dir")


def check_writable_folder(folder: Path, setting: str) -> None:
    """``folder`` exists (it is created) and can be written.

    Raises:
        ValueError: It is a file, lies under a file, or cannot be created or written.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"{setting} = {str(folder)!r} is, or lies under, a file: choose a folder.") from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ValueError(f"{setting} = {str(folder)!r} cannot be created ({reason}): choose another folder.") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{setting} = {str(folder)!r} cannot be written (permission denied): choose another folder.")


def check_checkpoint_path(ckpt_path) -> None:
    """A ``--ckpt_path`` file must exist (Lightning's keywords pass).

    Raises:
        ValueError: The file does not exist, or is a folder.
    """
    if not ckpt_path or str(ckpt_path) in CKPT_KEYWORDS:
        return
    path = Path(ckpt_path)
    if not path.is_file():
        raise ValueError(
            f"--ckpt_path {str(path)!r} {'is a folder' if path.is_dir() else 'does not exist'}: give a checkpoint "
            f"file (runs/NAME/version_K/checkpoints/last.ckpt), or --ckpt_path last to resume the latest run "
            f"of this experiment."
        )
