"""Checkpoints at stated update steps, visible to the step plan, and always one of the final step."""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint


class StepCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` that states, publicly, the steps at which it saves.

    It saves as ``ModelCheckpoint`` does (same arguments), with two differences that a
    resume relies on:

    * With ``save_last``, ``last.ckpt`` always ends up holding the final step. (Lightning
      writes ``last`` at the end of training only when it saved nothing during the
      process, so a 339-step run with a checkpoint every 100 steps ended with ``last.ckpt``
      at step 300, and a resumed run wrote its final step to ``last-v1.ckpt``.)
    * ``enable_version_counter`` defaults to False: a run folder belongs to one run at a
      time (featlearn's folder lock), so a resumed run overwrites its own ``last.ckpt``
      instead of starting ``last-v1.ckpt`` beside it.

    With several update steps per Lightning batch (``data.updates_per_batch``), the data
    stream must end a batch at every step a checkpoint is due; Lightning keeps that cadence
    in a private attribute, so featlearn's :class:`~featlearn.steps.StepPlan` reads it from
    here (:meth:`is_due`).

    Args:
        every_n_train_steps: Save after every N update steps (0 or None: never by step).
        enable_version_counter: Write ``last-v1.ckpt`` beside an existing ``last.ckpt`` (Lightning's default).
        **kwargs: ``ModelCheckpoint``'s other arguments (``save_last``, ``save_top_k``, ...).
    """

    def __init__(self, every_n_train_steps: int | None = None, enable_version_counter: bool = False, **kwargs) -> None:
        super().__init__(
            every_n_train_steps=every_n_train_steps, enable_version_counter=enable_version_counter, **kwargs
        )
        #: N: a checkpoint is written after every N-th update step (0: never by step).
        self.every_n_train_steps = every_n_train_steps or 0

    def is_due(self, step: int) -> bool:
        """Whether a checkpoint is written after ``step`` updates."""
        return self.every_n_train_steps > 0 and step % self.every_n_train_steps == 0

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Write ``last.ckpt`` at the final step, unless the step's own checkpoint just did."""
        if not self.save_last or trainer.fast_dev_run or self.dirpath is None:
            return
        if trainer.global_step == 0 or self.is_due(trainer.global_step):
            return  # nothing trained, or saved at this step already (with last.ckpt)
        path = Path(self.dirpath) / f"{self.CHECKPOINT_NAME_LAST}{self.FILE_EXTENSION}"
        self.last_model_path = str(path)  # before saving: it is part of the saved state
        trainer.save_checkpoint(path, self.save_weights_only)
