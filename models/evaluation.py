"""Per-member evaluation over a whole held-out set: summed across processes by torchmetrics, logged by a callback."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor
from torchmetrics import Metric

from featlearn.models.sgd import member_metrics


class MemberEvaluation(Metric):
    r"""The mean loss and 0-1 error of every ensemble member over a set seen in chunks (and processes).

    Each chunk c of n_c inputs adds its per-member means (S,) weighted by n_c; the result is

    .. math::  \bar\ell_s = \frac{\sum_c n_c \, \ell_{s,c}}{\sum_c n_c}, \qquad
               \bar e_s = \frac{\sum_c n_c \, e_{s,c}}{\sum_c n_c}

    In a distributed run every process holds part of each chunk: the three sums are reduced
    with ``dist_reduce_fx="sum"``, so the means are exact over the whole set. The states are
    not part of the learner's checkpoint.
    """

    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        # Scalars until the first update broadcasts them to the members' shape (S,).
        self.add_state("loss_sum", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("error_sum", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, loss: Tensor, error: Tensor, n: int) -> None:
        """Add one chunk: its per-member mean loss and error (S,) over its ``n`` inputs."""
        self.loss_sum = self.loss_sum + loss.detach() * n
        self.error_sum = self.error_sum + error.detach() * n
        self.count = self.count + n

    def compute(self) -> tuple[Tensor, Tensor]:
        """(mean loss, mean error), each (S,)."""
        return self.loss_sum / self.count, self.error_sum / self.count


class HeldOutLog(pl.Callback):
    """Reduces a learner's held-out sums at the end of a validation or test pass and writes them.

    The learner adds each batch's per-member loss and error to its ``evaluation[split]``
    (:class:`MemberEvaluation`). At the epoch's end this reduces them over chunks and
    processes and logs the means ``{split}/loss`` and ``{split}/error``, with the members'
    min, max and (for small ensembles) each member's, into Lightning's callback metrics.
    At the pass's end it writes them to the loggers at the current update step: through
    Lightning's own logging every write would also add an ``epoch`` chart, meaningless for
    step-based runs, to TensorBoard. The learner returns it from ``configure_callbacks``.
    """

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        self._reduce(pl_module, "val")

    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        self._reduce(pl_module, "test")

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        self._write(trainer, pl_module, "val")

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        self._write(trainer, pl_module, "test")

    @staticmethod
    def _reduce(pl_module: pl.LightningModule, split: str) -> None:
        evaluation = pl_module.evaluation[split]
        if not evaluation.update_called:
            return
        loss, error = evaluation.compute()  # (S,), (S,)
        evaluation.reset()
        metrics = {f"{split}/loss": loss.mean(), f"{split}/error": error.mean()}
        metrics.update(member_metrics(split, "loss", loss, pl_module.max_members_logged))
        metrics.update(member_metrics(split, "error", error, pl_module.max_members_logged))
        pl_module.log_dict(metrics, on_step=False, on_epoch=True, logger=False)

    @staticmethod
    def _write(trainer: pl.Trainer, pl_module: pl.LightningModule, split: str) -> None:
        if not trainer.is_global_zero or not pl_module.loggers:
            return
        prefixes = (f"{split}/", f"{split}_members/")
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(prefixes)}
        for logger in pl_module.loggers:
            logger.log_metrics(metrics, step=pl_module.global_step)
