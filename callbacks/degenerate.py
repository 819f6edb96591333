"""Flags runs that failed without an error: one predicted class, or a loss that blew up and stayed."""

from __future__ import annotations

import math
import warnings

import pytorch_lightning as pl
import torch

from featlearn.callbacks.pictures import publish_text
from featlearn.contracts import EvaluationData, missing_members
from featlearn.validation import check_number


class DegenerateRuns(pl.Callback):
    r"""At the end of ``fit``, flags every ensemble member whose run degenerated.

    Two symptoms, each read from public state:

    * **One class.** Member s predicts one class on at least ``one_class_fraction`` of
      the data model's test set,

      .. math::  \max_c \frac{1}{n} \sum_{i=1}^{n} \mathbf 1\{\hat y_{s i} = c\} \ge q ,

      with :math:`\hat y = \operatorname{sign} f_s(x)` (binary; a zero output counts as
      -1) or the arg-max class, while the test labels themselves are less one-sided than
      that (so a genuinely one-class test set is not flagged).
    * **A loss that grew by orders of magnitude and stayed there.** The training loss
      at the last logging step is at least ``loss_growth`` times the one at the first
      (the learner's ``updates.logged_member_losses``).

    A flagged run gets a warning, the TensorBoard text ``degenerate/summary`` and the
    scalar ``degenerate/members``; :attr:`flags` keeps the reasons per member, and
    ``featlearn compare`` reports them in its table.

    Args:
        one_class_fraction: q in (0.5, 1].
        loss_growth: The factor (> 1) between the last and the first logged loss.
    """

    def __init__(self, one_class_fraction: float = 0.99, loss_growth: float = 100.0) -> None:
        check_number("DegenerateRuns.one_class_fraction", one_class_fraction, 0.5, 1.0, strict=True)
        check_number("DegenerateRuns.loss_growth", loss_growth, 1.0, strict=True)
        self.one_class_fraction = one_class_fraction
        self.loss_growth = loss_growth
        #: Reasons per member after fit (an empty list: the member is fine).
        self.flags: list[list[str]] = []
        #: The run's data model (:meth:`connect_data`); its test set is where one-class runs show.
        self.data_model = None

    def connect_data(self, data) -> None:
        """Receive the run's data model (any kind: without a test set, the one-class check is skipped)."""
        self.data_model = data

    @property
    def degenerate(self) -> list[bool]:
        """Whether each member was flagged."""
        return [bool(reasons) for reasons in self.flags]

    @torch.no_grad()
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        members = pl_module.ensemble_size
        self.flags = [[] for _ in range(members)]
        self._check_one_class(trainer, pl_module)
        self._check_loss_growth(pl_module)
        flagged = [s for s in range(members) if self.flags[s]]
        if not flagged or not trainer.is_global_zero:
            return
        lines = [f"member {s}: " + "; ".join(self.flags[s]) for s in flagged]
        summary = (
            f"{len(flagged)} of {members} run(s) degenerated without an error:\n" + "\n".join(lines) + "\n"
            "Check the learning rate, the loss (class weights for imbalanced data) and the initialisation."
        )
        warnings.warn(summary, stacklevel=2)
        step = trainer.global_step
        publish_text(trainer, "degenerate/summary", summary, step)
        for logger in trainer.loggers:
            logger.log_metrics({"degenerate/members": float(len(flagged))}, step=step)

    def _check_one_class(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        data = self.data_model
        if data is None or missing_members(data, EvaluationData):  # a data model of another kind: no test set
            return
        x, y = data.eval_set("test")  # (S, n, ...), (S, n)
        if y.shape[-1] == 0:
            return
        chunk = data.eval_batch_size
        predicted = []
        for i in range(0, x.shape[1], chunk):
            f = pl_module.scores(x[:, i : i + chunk].to(pl_module.device))
            predicted.append(f.argmax(dim=-1) if f.dim() == 3 else (f > 0).long())  # (S, b)
        predicted = torch.cat(predicted, dim=1)  # (S, n)
        labels = y.to(predicted.device)
        labels = labels.long() if labels.dtype in (torch.int64, torch.int32) else (labels > 0).long()
        for s in range(predicted.shape[0]):
            share = _majority_share(predicted[s])
            label_share = _majority_share(labels[s % labels.shape[0]])  # member g K + j: stream j
            if share >= self.one_class_fraction and label_share < self.one_class_fraction:
                self.flags[s].append(
                    f"predicts one class on {100 * share:.1f}% of the test set (its labels: {100 * label_share:.1f}% "
                    f"the most common class)"
                )

    def _check_loss_growth(self, pl_module: pl.LightningModule) -> None:
        record = pl_module.updates.logged_member_losses  # every featlearn learner keeps them (contracts.Learner)
        if len(record) < 2:
            return
        first_step, last_step = min(record), max(record)
        first, last = record[first_step], record[last_step]
        for s in range(min(len(first), len(self.flags))):
            a, b = float(first[s]), float(last[s])
            if math.isfinite(b) and a > 0 and b >= self.loss_growth * a:
                self.flags[s].append(
                    f"training loss grew from {a:.3g} (step {first_step}) to {b:.3g} (step {last_step}), "
                    f"{b / a:.3g} times"
                )


def _majority_share(classes: torch.Tensor) -> float:
    """The share of the most common value in a 1-D integer tensor."""
    return float(torch.bincount(classes - classes.min()).max()) / classes.numel()
