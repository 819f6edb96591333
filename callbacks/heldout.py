"""Held-out accuracy curves: the test accuracy of every method against the update step."""

from __future__ import annotations

import pytorch_lightning as pl
import torch

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.contracts import EvaluationData
from featlearn.validation import check_choice, check_int


class HeldOutAccuracy(DiagnosticCallback):
    r"""Logs the accuracy on the data model's test set (a population estimate), as a fraction.

    .. math::  \mathrm{acc}_s(t) = \frac{1}{n} \sum_{i=1}^{n} \mathbf 1\{y_i f_s(x_i; \theta_t) > 0\}

    Every accuracy and error featlearn logs is a fraction in [0, 1] (``test/error`` too);
    tables for people (``featlearn compare``'s) show percentages.

    for each ensemble member s (a zero output counts as an error), written as
    ``heldout/test_acc`` (mean over members; with several members also
    ``heldout/test_acc_min`` and ``heldout/test_acc_max``), and ``heldout/test_loss``. ``featlearn compare`` gives
    every method the same tag in its own run folder, so TensorBoard draws all methods
    on one chart (as in Figures 1, 5, 7, 9, 11, 13 of Shi et al. 2022).

    Args:
        cadence: ``"log"`` or every N steps (the last step is always included).
        points_per_decade: Density of the log-spaced cadence.
        dense_until: Also evaluate every step up to this one.
        split: ``"test"``, ``"val"``, or ``"train"``: the finite training set (tags
            ``trainset/train_acc``, ...), the training accuracy of Shi et al.'s tables.
    """

    data_requirement = EvaluationData
    state_attributes = ("history", "member_accuracy")
    distinguishing_settings = ("split", "cadence")
    result_tags = ("heldout/test_acc", "heldout/val_acc", "trainset/train_acc")

    def __init__(
        self, cadence: str | int = "log", points_per_decade: int = 20, dense_until: int = 10, split: str = "test"
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        check_int("HeldOutAccuracy.dense_until", dense_until, 0)
        check_choice("HeldOutAccuracy.split", split, ("test", "val", "train"))
        self.dense_until = dense_until
        self.split = split
        #: Per-member accuracies (fractions) by step: step -> (S,) on the CPU.
        self.member_accuracy: dict[int, torch.Tensor] = {}

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        size = self.data_model.set_size(self.split)
        if not size:
            raise ValueError(
                f"HeldOutAccuracy(split={self.split!r}) needs data.{self.split}_size > 0, got an empty set."
            )

    def is_due(self, step: int) -> bool:  # noqa: D102
        return step <= self.dense_until or super().is_due(step)

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, torch.Tensor]:  # noqa: D102
        data = self.data_model
        x, y = data.train_set() if self.split == "train" else data.eval_set(self.split)
        loss, error = pl_module.evaluate_dataset(x, y, chunk=data.eval_batch_size)
        accuracy = 1.0 - error  # (S,)
        self.member_accuracy[step] = accuracy.detach().cpu()
        tag = "trainset/train" if self.split == "train" else f"heldout/{self.split}"
        spread = {f"{tag}_acc_min": accuracy.min(), f"{tag}_acc_max": accuracy.max()} if accuracy.numel() > 1 else {}
        return {f"{tag}_acc": accuracy.mean(), **spread, f"{tag}_loss": loss.mean()}
