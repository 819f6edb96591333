"""Given tensors as a data model: a labelled training set, a test set, and unlabelled inputs."""

from __future__ import annotations

import torch
from torch import Tensor

from featlearn.batches import TrainBatch
from featlearn.datamodules.base import DataModel
from featlearn.sampling import distinct_indices
from featlearn.seeding import UNLABELLED_BATCH
from featlearn.validation import check_int


class LabelledTensors(DataModel):
    r"""A data model over sets already in memory (built by code, not by a config).

    Training batches are minibatches of ``train`` as every finite set's are (see
    :class:`DataModel`); when ``unlabelled`` inputs are given, each step's batch also
    carries ``unlabelled_batch_size`` distinct of them, drawn uniformly from member s's
    stream ``(seed + s, UNLABELLED_BATCH, step)``, in
    :attr:`TrainBatch.unlabelled <featlearn.batches.TrainBatch>` (for a regulariser on
    unlabelled inputs, such as Shi et al.'s teacher objective). Every member sees the
    same sets (stride-0 views of one copy on the device).

    Args:
        train: (x (n, ...), y (n,)) the labelled training set.
        test: (x, y) the test set.
        unlabelled: Inputs (m, ...) without labels, or None.
        unlabelled_batch_size: Unlabelled inputs per step (all m when m is smaller).
        num_classes: C, for learners that check it (labels in 0..C-1); None for labels ±1.
        **kwargs: :class:`DataModel`'s (``batch_size``, ``seed``, ``eval_batch_size``,
            ``ensemble_size``, ``updates_per_batch``).
    """

    def __init__(
        self,
        train: tuple[Tensor, Tensor],
        test: tuple[Tensor, Tensor],
        unlabelled: Tensor | None = None,
        unlabelled_batch_size: int = 256,
        num_classes: int | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        for name, (x, y) in (("train", train), ("test", test)):
            if x.shape[0] != y.shape[0] or x.shape[0] == 0:
                raise ValueError(f"LabelledTensors.{name}: x and y need the same, non-zero number of rows.")
        if unlabelled is not None and unlabelled.shape[1:] != train[0].shape[1:]:
            raise ValueError("LabelledTensors.unlabelled: the inputs need the training inputs' shape.")
        self.unlabelled_batch_size = check_int("data.unlabelled_batch_size", unlabelled_batch_size, 1)
        self.num_classes = num_classes
        self._sets = {"train": train, "test": test, "val": (train[0][:0], train[1][:0])}
        self._unlabelled = unlabelled

    @property
    def input_dim(self) -> int:
        """The number of values of one input."""
        return int(self._sets["train"][0][0].numel())

    def train_set(self) -> tuple[Tensor, Tensor]:
        """The training set x (S, n, ...), y (S, n), shared by the members."""
        return self.shared_views("train", *self._sets["train"])

    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The test set (``"test"``), or an empty validation set (``"val"``): x (S, n, ...), y (S, n)."""
        return self.shared_views(split, *self._sets[split])

    def train_batch(self, step: int) -> TrainBatch:
        """The labelled minibatch of ``step``, with its unlabelled inputs (S, B_u, ...) when there are any."""
        batch = super().train_batch(step)
        if self._unlabelled is None:
            return batch
        (pool,) = self.shared_views("unlabelled", self._unlabelled)  # (S, m, ...)
        m, size, device = pool.shape[1], self.unlabelled_batch_size, self.device
        if size >= m:
            unlabelled = pool
        else:
            rows = [
                distinct_indices(m, size, self.stream_generator(s, UNLABELLED_BATCH, step, device), device)
                for s in range(self.ensemble_size)
            ]
            unlabelled = torch.stack([pool[s].index_select(0, r) for s, r in enumerate(rows)])
        return TrainBatch(tuple(batch), batch.rows, unlabelled)
