"""The block a run prints at its end: the numbers that matter, where the run is, how to look at it."""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl

from featlearn.callbacks import DiagnosticCallback

#: Metric families of the learner's own evaluation shown at the end (means over members).
EVALUATION_PREFIXES = ("test/", "val/")


def result_block(trainer: pl.Trainer, command: str, folder: Path | None) -> str:
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
            lines.append("  resume it: the same command with --ckpt_path last")
        lines.append(f"  tensorboard --logdir {folder.parent}")
    return "\n".join(lines)
