"""Training batches that say where their rows came from.

In finite-sample mode a batch is a subset of rows of a training set drawn once. A
learner can use that: when its first layer is frozen, the pre-activations of the
whole set can be computed once and the batch's rows looked up (see
:class:`featlearn.models.TwoLayerNet`). The data model states the fact in the batch
(a :class:`TrainBatch` with its :class:`SetRows`) and knows nothing of who uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """

    rows: SetRows | None

    def __new__(cls, pair, rows: SetRows | None = None) -> TrainBatch:  # noqa: D102
        batch = super().__new__(cls, pair)
        batch.rows = rows
        return batch
