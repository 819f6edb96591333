"""The progress bar of a featlearn run: update steps out of ``max_steps``, not batches of an epoch.

featlearn's data streams never end an epoch (``max_epochs: -1``) and one Lightning batch
may carry several updates (``data.updates_per_batch``), so Lightning's bar showed
"Epoch 0/-2", counted batches, ran past its total after a resume ("400/299") and showed
the logger's version as a metric ("v_num: 0.000"). This bar counts ``trainer.global_step``
against ``trainer.max_steps``, starts a resumed run at its step, and shows the logged
progress-bar metrics only.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import TQDMProgressBar


class StepProgressBar(TQDMProgressBar):
    """Lightning's tqdm bar, counting update steps of ``max_steps`` (the command line's bar for every run)."""

    def on_train_start(self, trainer: pl.Trainer, *_: Any) -> None:  # noqa: D102
        super().on_train_start(trainer)
        self.count_steps(trainer)

    def on_train_epoch_start(self, trainer: pl.Trainer, *_: Any) -> None:
        """Lightning's epoch start resets the bar to batches; count steps again (a resume mid-epoch skips this hook)."""
        super().on_train_epoch_start(trainer)
        self.count_steps(trainer)

    def count_steps(self, trainer: pl.Trainer) -> None:
        """Make the training bar count update steps out of ``max_steps``, from the run's current step."""
        bar = self.train_progress_bar
        if bar is None:
            return
        bar.reset(total=trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None)
        bar.n = bar.initial = trainer.global_step  # a resumed run starts at its step
        bar.set_description("update steps")
        bar.refresh()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs, batch, batch_idx) -> None:  # noqa: D102
        bar = self.train_progress_bar
        step = trainer.global_step
        if bar is None or bar.disable:
            return
        if self.refresh_rate and (step - bar.n >= self.refresh_rate or step == trainer.max_steps):
            bar.n = step
            bar.set_postfix(self.get_metrics(trainer, pl_module), refresh=False)
            bar.refresh()

    def get_metrics(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict:
        """The metrics a learner logs to the bar; not the logger's version (``v_num``), which is no metric."""
        metrics = super().get_metrics(trainer, pl_module)
        metrics.pop("v_num", None)
        return metrics
