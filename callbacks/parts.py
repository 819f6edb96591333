"""Test accuracy by part of a mixture: the original inputs, the injected ones, the whole (Shi et al. E.5)."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torchmetrics.classification import MulticlassAccuracy

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import publish_chart
from featlearn.contracts import ClassPredictor, PartedData, require
from featlearn.validation import check_int

#: The tags drawn together on one TensorBoard chart (its custom-scalars layout).
PART_TAGS = ("parts/original", "parts/injected", "parts/mixture", "parts/reference")


class PartAccuracy(DiagnosticCallback):
    r"""The student's test accuracy on each part of a teacher-relabelled mixture, as a fraction.

    .. math::  \mathrm{acc}_P(t) = \frac{1}{|P|} \sum_{x \in P} \mathbf 1\{\arg\max_j g(x)_j = \tilde y(x)\}

    for P the test inputs from the real data (``parts/original``), from the injected
    source (``parts/injected``) and the mixture's test set (``parts/mixture``), averaged
    over the members that train on the mixture; and, when the data model has reference
    members (trained on the real part alone), their accuracy on the original part
    (``parts/reference``), the paper's "training on the original data" curve. The labels
    are the teacher's. TensorBoard shows the four on one chart (the *Custom Scalars*
    tab, "accuracy by part"), as in Figures 4 and 22-25. The accuracies are torchmetrics
    ``MulticlassAccuracy`` (micro), which reduce correctly across processes.

    The data model must be a :class:`~featlearn.contracts.PartedData` (a
    :class:`~featlearn.datamodules.TeacherMixture`); the learner, a
    :class:`~featlearn.contracts.ClassPredictor` (a :class:`~featlearn.models.MulticlassClassifier`).

    Args:
        cadence: ``"log"`` or every N steps (the last step is always included).
        points_per_decade: Density of the log-spaced cadence.
        dense_until: Also evaluate every step up to this one.
    """

    data_requirement = PartedData
    result_tags = ("parts/original", "parts/injected", "parts/mixture", "parts/reference")
    state_attributes = ("history", "member_accuracy")

    def __init__(self, cadence: str | int = "log", points_per_decade: int = 10, dense_until: int = 0) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        self.dense_until = check_int("PartAccuracy.dense_until", dense_until, 0)
        self._metrics: dict[str, MulticlassAccuracy] = {}
        #: Each member's accuracy (%) on each part at the last cadence step: part -> [S], None for a
        #: member outside the part's group (a reference member on the injected part).
        self.member_accuracy: dict[str, list[float | None]] = {}

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        require(pl_module, ClassPredictor, "PartAccuracy", role="learner")
        data = self.data_model
        self._metrics = {
            name: MulticlassAccuracy(num_classes=data.num_classes, average="micro").to(pl_module.device)
            for name in ("original", "injected", "mixture", "reference")
        }
        publish_chart(trainer, "accuracy by part", list(PART_TAGS))

    def member_results(self) -> dict[str, list]:
        """Per member at the last step: ``part_original``, ``part_injected`` and ``part_gap`` (points).

        Accuracies in percent, None for reference members; ``part_gap`` is original minus
        injected (the paper's claim: the original part is learned better).
        """
        original = self.member_accuracy.get("original") or []
        injected = self.member_accuracy.get("injected") or []
        gap = [None if o is None or i is None else o - i for o, i in zip(original, injected, strict=True)]
        return {"part_original": original, "part_injected": injected, "part_gap": gap} if original else {}

    def is_due(self, step: int) -> bool:  # noqa: D102
        return step <= self.dense_until or super().is_due(step)

    def _accuracy(self, name: str, pl_module, x, y, members: list[int], chunk: int) -> torch.Tensor:
        """The accuracy of ``members`` together on (x, y); each member's own is kept in :attr:`member_accuracy`."""
        metric = self._metrics[name]
        metric.reset()
        index = torch.tensor(members, device=x.device)
        correct = torch.zeros(x.shape[0], dtype=torch.float64)  # (S,) per member, for member_results
        for i in range(0, x.shape[1], chunk):
            preds = pl_module.predict_classes(x[:, i : i + chunk].to(pl_module.device))  # (S, b)
            labels = y[:, i : i + chunk].to(preds.device)
            metric.update(
                preds.index_select(0, index.to(preds.device)).reshape(-1),
                labels.index_select(0, index.to(preds.device)).reshape(-1),
            )
            correct += (preds == labels).sum(dim=1).to("cpu", torch.float64)
        accuracy = (100.0 * correct / max(x.shape[1], 1)).tolist()
        self.member_accuracy[name] = [accuracy[s] if s in members else None for s in range(x.shape[0])]
        return metric.compute()

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, torch.Tensor]:  # noqa: D102
        data = self.data_model
        groups, chunk = data.member_groups(), data.eval_batch_size
        parts = data.part_sets("test")
        out = {}
        for name in ("original", "injected"):
            x, y = parts[name]
            if x.shape[1]:
                out[f"parts/{name}"] = self._accuracy(name, pl_module, x, y, groups["mixture"], chunk)
        x, y = data.eval_set("test")
        if x.shape[1]:
            out["parts/mixture"] = self._accuracy("mixture", pl_module, x, y, groups["mixture"], chunk)
        if groups["reference"]:
            x, y = parts["original"]
            out["parts/reference"] = self._accuracy("reference", pl_module, x, y, groups["reference"], chunk)
        return out
