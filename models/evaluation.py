"""Per-member evaluation over a whole held-out set, summed across processes by torchmetrics."""

from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import Metric


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
