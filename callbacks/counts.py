r"""Test accuracy by count of class-relevant patterns (Shi et al. 2022): which counts the network gets wrong."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import publish_chart
from featlearn.contracts import CountedData, Learner, require


class CountAccuracy(DiagnosticCallback):
    r"""The test accuracy and mean output at each count s = sum_{i in A} phi~_i, under ``counts/``.

    Shi, Wei, Liang (2022) label an input by the count s of class-relevant patterns it holds
    (Section 3: y = +1 iff s is in P; parity: P = the odd counts). A network whose features
    have no kink between the counts can only draw a function of s that is affine there, and
    its best threshold on that line misses every count on the wrong side: for E.1.1's parity
    of k = 5, counts 1 and 4, a test accuracy of 1 - Pr[s in {1, 4}] = 1 - 10/64 = 84.4%.
    This observer shows that case for what it is. At each cadence step, on the data model's
    test set (:class:`~featlearn.contracts.CountedData`), averaged over members:

    * ``counts/acc_s`` for s = 0..k: the accuracy (%) on the inputs of count s;
    * ``counts/output_s``: the mean output f there;
    * ``counts/affine_residual``: how far the mean outputs m_s are from a line in s,

      .. math::  r = \frac{\max_s |m_s - (\hat\alpha + \hat\beta s)|}{\max_s m_s - \min_s m_s}

      with (alpha, beta) their least-squares line over the counts present: near 0 when the
      network's output is affine in the count, large when it bends between counts (parity
      needs a bend between every two neighbouring counts).

    TensorBoard draws the accuracies on one chart (*Custom Scalars*, "accuracy by count").
    :meth:`member_results` gives each member's ``count_acc_s`` and ``count_affine_residual``
    at the last cadence step.

    Args:
        cadence: ``"log"`` or every N steps (the last step is always included).
        points_per_decade: Density of the log-spaced cadence.
    """

    data_requirement = CountedData
    result_tags = ("counts/affine_residual",)
    state_attributes = ("history", "member_values")

    def __init__(self, cadence: str | int = "log", points_per_decade: int = 10) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        #: Each member's values at the last cadence step: name -> [S] (None where a count has no input).
        self.member_values: dict[str, list[float | None]] = {}

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        require(pl_module, Learner, "CountAccuracy", role="learner")
        _, k = self.data_model.count_sets("test")
        publish_chart(trainer, "accuracy by count", [f"counts/acc_{s}" for s in range(k + 1)])

    def member_results(self) -> dict[str, list]:
        """Per member at the last cadence step: ``count_acc_s`` (%) for each count s and ``count_affine_residual``."""
        return {f"count_{name}": values for name, values in self.member_values.items()}

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        data = self.data_model
        x, y = data.eval_set("test")  # (K, n, d), (K, n)
        counts, k = data.count_sets("test")  # (K, n)
        if x.shape[1] == 0:
            return {}
        chunk = data.eval_batch_size
        outputs = torch.cat(
            [pl_module.scores(x[:, i : i + chunk].to(pl_module.device)).detach() for i in range(0, x.shape[1], chunk)],
            dim=1,
        ).to("cpu", torch.float64)  # (S, n)
        members = outputs.shape[0]
        y, counts = _as_members(y.cpu(), members), _as_members(counts.cpu(), members)  # (S, n)
        correct = (y.to(torch.float64) * outputs > 0).to(torch.float64)  # a zero output is an error, as in training
        accuracy, mean_output = count_means(correct, counts, k), count_means(outputs, counts, k)  # (S, k + 1)
        residual = affine_residual(mean_output)  # (S,)
        self.member_values = {
            **{f"acc_{s}": _column(100.0 * accuracy[:, s]) for s in range(k + 1)},
            "affine_residual": _column(residual),
        }
        metrics = {}
        for s in range(k + 1):
            if torch.isfinite(accuracy[:, s]).any():
                metrics[f"counts/acc_{s}"] = float(100.0 * accuracy[:, s].nanmean())
                metrics[f"counts/output_{s}"] = float(mean_output[:, s].nanmean())
        if torch.isfinite(residual).any():
            metrics["counts/affine_residual"] = float(residual.nanmean())
        return metrics


def count_means(values: Tensor, counts: Tensor, k: int) -> Tensor:
    """The mean of ``values`` (S, n) over the rows of each count 0..k: (S, k + 1), NaN where a count has no row."""
    sums = torch.zeros(values.shape[0], k + 1, dtype=torch.float64).scatter_add_(1, counts, values.double())
    rows = torch.zeros_like(sums).scatter_add_(1, counts, torch.ones_like(values, dtype=torch.float64))
    return torch.where(rows > 0, sums / rows.clamp(min=1), torch.full_like(sums, float("nan")))


def affine_residual(means: Tensor) -> Tensor:
    r"""max_s |m_s - line(s)| / (max_s m_s - min_s m_s) per row of ``means`` (S, k + 1); NaN counts left out.

    The line is the least-squares fit of m_s on s over the counts present; a row with fewer
    than three counts present, or a flat one, reads NaN (a line fits two points exactly).
    """
    result = torch.full((means.shape[0],), float("nan"), dtype=torch.float64)
    s = torch.arange(means.shape[1], dtype=torch.float64)
    for row, m in enumerate(means.double()):
        present = torch.isfinite(m)
        span = (m[present].max() - m[present].min()) if present.sum() >= 3 else torch.tensor(0.0)
        if span <= 0:
            continue
        design = torch.stack([torch.ones_like(s[present]), s[present]], dim=1)  # (c, 2)
        coef = torch.linalg.lstsq(design, m[present, None]).solution  # (2, 1)
        result[row] = (m[present] - (design @ coef).squeeze(1)).abs().max() / span
    return result


def _as_members(values: Tensor, members: int) -> Tensor:
    """(K, n) -> (S, n): stream j feeds members g K + j (a grid ensemble's G points over K streams).

    Raises:
        ValueError: K does not divide S.
    """
    streams = values.shape[0]
    if members % streams:
        raise ValueError(f"CountAccuracy: {streams} data stream(s) cannot feed {members} ensemble members.")
    return values if streams == members else values.repeat(members // streams, 1)


def _column(values: Tensor) -> list[float | None]:
    return [None if not torch.isfinite(v) else float(v) for v in values]
