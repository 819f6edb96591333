"""The block a run prints at its end: the numbers that matter, where the run is, how to look at it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytorch_lightning as pl

from featlearn.callbacks import DiagnosticCallback
from featlearn.runner.checks import checkpoint_step
from featlearn.runner.interrupt import interrupt_checkpoint_path

#: Metric families of the learner's own evaluation shown at the end (means over members).
EVALUATION_PREFIXES = ("test/", "val/")


def result_block(trainer: pl.Trainer, command: str, folder: Path | None, study: str | None = None) -> str:
    """The end-of-run block: steps done, final metrics, the run folder and the ``tensorboard`` line.

    The metrics are the learner's test (or validation) loss and error of the last
    evaluation and each diagnostic's :meth:`~featlearn.callbacks.DiagnosticCallback.results`
    (held-out accuracy, alignment, parts, phases), all averaged over ensemble members.
    """
    if trainer.interrupted:
        head = f"featlearn {command}: interrupted at update step {trainer.global_step}."
    else:
        head = f"featlearn {command}: done, {trainer.global_step} update steps."
    metrics = {
        key: float(value)
        for key, value in trainer.callback_metrics.items()
        if key.startswith(EVALUATION_PREFIXES) and not key.endswith(("_min", "_max"))
    }
    for callback in trainer.callbacks:
        if isinstance(callback, DiagnosticCallback):
            metrics.update(callback.results())
    lines = [head]
    if metrics:
        width = max(len(key) for key in metrics)
        lines += [f"  {key:<{width}}  {value:.6g}" for key, value in metrics.items()]
    if folder is not None:
        lines.append(f"  run folder: {folder}")
        if trainer.interrupted:
            lines.append(resume_hint(trainer, study))
        lines.append(f"  {tensorboard_command()} --logdir {folder.parent}")
    return "\n".join(lines)


def resume_hint(trainer: pl.Trainer, study: str | None = None) -> str:
    """How an interrupted run goes on: from which step ``--ckpt_path last`` resumes it, or that nothing can.

    Inside a study (``featlearn compare``...) the study's own command goes on: it reuses
    the runs that finished. A run whose training had finished (a Ctrl-C during the test
    after fit) is evaluated by ``featlearn test``, not resumed.
    """
    if study is not None:
        return f"  go on: the same featlearn {study} command (the runs that finished are reused)"
    path = interrupt_checkpoint_path(trainer)
    step = checkpoint_step(path) if path is not None and path.is_file() else None
    if step is not None and trainer.max_steps is not None and 0 < trainer.max_steps <= step:
        return (
            f"  training had finished (all {step} update steps); to evaluate it: featlearn test with the same "
            f"--config files and --ckpt_path last"
        )
    if step is None:
        why = "checkpointing is off" if path is None else "it stopped before its first checkpoint"
        return f"  no checkpoint to resume ({why}): start it again without --ckpt_path"
    return f"  resume it from update step {step}: the same command with --ckpt_path last"


def tensorboard_command() -> str:
    """``tensorboard`` where the shell finds this environment's, else its full path (``.venv`` not active)."""
    beside = Path(sys.executable).parent / "tensorboard"
    found = shutil.which("tensorboard")
    if not beside.is_file() or (found is not None and Path(found).resolve() == beside.resolve()):
        return "tensorboard"
    return str(beside)
