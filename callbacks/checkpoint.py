"""Checkpoints at stated update steps, visible to the step plan."""

from __future__ import annotations

from pytorch_lightning.callbacks import ModelCheckpoint


class StepCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` that also states, publicly, the steps at which it saves.

    It saves exactly as ``ModelCheckpoint`` does (same arguments). With several update
    steps per Lightning batch (``data.updates_per_batch``), the data stream must end a
    batch at every step a checkpoint is due; Lightning keeps that cadence in a private
    attribute, so featlearn's :class:`~featlearn.steps.StepPlan` reads it from here.

    Args:
        every_n_train_steps: Save after every N update steps (0 or None: never by step).
        **kwargs: ``ModelCheckpoint``'s other arguments (``save_last``, ``save_top_k``, ...).
    """

    def __init__(self, every_n_train_steps: int | None = None, **kwargs) -> None:
        super().__init__(every_n_train_steps=every_n_train_steps, **kwargs)
        #: N: a checkpoint is written after every N-th update step (0: never by step).
        self.every_n_train_steps = every_n_train_steps or 0

    def is_due(self, step: int) -> bool:
        """Whether a checkpoint is written after ``step`` updates."""
        return self.every_n_train_steps > 0 and step % self.every_n_train_steps == 0
