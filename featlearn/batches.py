"""Training batches that say where their rows came from.

In finite-sample mode a batch is a subset of rows of a training set drawn once. A
learner can use that: when its first layer is frozen, the pre-activations of the
whole set can be computed once and the batch's rows looked up (see
:class:`featlearn.models.TwoLayerNet`). The data model states the fact in the batch
(a :class:`TrainBatch` with its :class:`SetRows`) and knows nothing of who uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True, eq=False)
class SetRows:
    """The rows of a fixed set that form a batch.

    Attributes:
        inputs: The fixed set x (S, n, d); the same tensor object for as long as the set is unchanged.
        index: (S, B) row indices of member s's batch in ``inputs[s]``, or None for all n rows in order.
    """

    inputs: Tensor
    index: Tensor | None


class TrainBatch(tuple):
    """One update step's ``(x, y)``: x (S, B, d), y (S, B), unpacked like a pair.

    Attributes:
        rows: Where x came from when it is rows of a fixed set, else None.
        unlabelled: Unlabelled inputs (S, B_u, ...) drawn for the same step, for an
            objective with a term on them (a regulariser); None for most data models.
    """

    rows: SetRows | None
    unlabelled: Tensor | None

    def __new__(cls, pair, rows: SetRows | None = None, unlabelled: Tensor | None = None) -> TrainBatch:  # noqa: D102
        batch = super().__new__(cls, pair)
        batch.rows = rows
        batch.unlabelled = unlabelled
        return batch

    def part(self, index: int, parts: int) -> TrainBatch:
        """Columns ``[index B/P, (index + 1) B/P)`` of every member's batch: part ``index`` of ``parts``.

        A distributed run gives process r part r of each step's batch (see
        :meth:`featlearn.datamodules.DataModel.rank_part`); the unlabelled inputs, if any,
        are split the same way.

        Raises:
            ValueError: B (or B_u) is not divisible by ``parts``.
        """
        x, y = self
        size = x.shape[1]
        if size % parts or (self.unlabelled is not None and self.unlabelled.shape[1] % parts):
            raise ValueError(
                f"A batch of {size} samples cannot be split evenly over {parts} processes: make "
                f"data.batch_size (at every step) a multiple of the number of processes."
            )
        width = size // parts
        cols = slice(index * width, (index + 1) * width)
        rows = None
        if self.rows is not None:
            idx = self.rows.index
            if idx is None:  # the whole set in order: this part is rows [start, stop)
                members = self.rows.inputs.shape[0]
                idx = torch.arange(size, device=x.device).expand(members, size)
            rows = SetRows(self.rows.inputs, idx[:, cols])
        unlabelled = None
        if self.unlabelled is not None:
            u_width = self.unlabelled.shape[1] // parts
            unlabelled = self.unlabelled[:, index * u_width : (index + 1) * u_width]
        return TrainBatch((x[:, cols], y[:, cols]), rows, unlabelled)


def take_rows(values: Tensor, index: Tensor) -> Tensor:
    """Rows ``index[s]`` of member s's set: values (S, n, ...), index (S, B) -> (S, B, ...).

    One ``index_select`` (a third of ``torch.gather``'s time on the CPU). A set shared by
    every member (stride 0 along S, as a real dataset is) is indexed without copying it.
    """
    members, n = values.shape[:2]
    rest = values.shape[2:]
    if members == 1 or values.stride(0) == 0:
        base = values[0]
        if members == 1:
            return base.index_select(0, index[0]).unsqueeze(0)
        return base.index_select(0, index.reshape(-1)).view(members, index.shape[1], *rest)
    flat = (index + n * torch.arange(members, device=index.device).unsqueeze(1)).view(-1)  # (S B,) rows of (S n, ...)
    return values.reshape(members * n, *rest).index_select(0, flat).view(members, index.shape[1], *rest)


def batch_rows(batch) -> SetRows | None:
    """The rows a batch says it holds (:attr:`TrainBatch.rows`); None for a plain ``(x, y)`` pair."""
    return batch.rows if isinstance(batch, TrainBatch) else None


def batch_unlabelled(batch) -> Tensor | None:
    """The unlabelled inputs a batch carries (:attr:`TrainBatch.unlabelled`); None for a plain pair."""
    return batch.unlabelled if isinstance(batch, TrainBatch) else None
