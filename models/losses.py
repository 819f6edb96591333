r"""Margin losses ``l(y f)`` and the size of their derivative in f.

* ``logistic``: :math:`\ell = 2 \log(1 + e^{-y f})`, exactly as Glasgow (2023) writes
  it (:math:`-2 \log \frac{1}{1 + \exp(-y f)}`); :math:`|\ell'| = 2/(1 + e^{y f})`.
* ``hinge``: :math:`\ell = \max(0, 1 - y f)` (Shi et al. 2022);
  :math:`|\ell'| = \mathbf{1}[y f < 1]`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor


def logistic(margin: Tensor) -> Tensor:
    """2 log(1 + exp(-margin)), elementwise and overflow-safe."""
    return 2.0 * F.softplus(-margin)


def hinge(margin: Tensor) -> Tensor:
    """max(0, 1 - margin), elementwise."""
    return torch.relu(1.0 - margin)


def logistic_derivative_abs(margin: Tensor) -> Tensor:
    """|d l / d f| = 2 exp(-margin) / (1 + exp(-margin)) = 2 sigmoid(-margin)."""
    return 2.0 * torch.sigmoid(-margin)


def hinge_derivative_abs(margin: Tensor) -> Tensor:
    """|d l / d f| = 1 where margin < 1, else 0."""
    return (margin < 1.0).to(margin.dtype)


#: name -> (loss of the margin y f, |derivative in f| at that margin)
LOSSES: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]] = {
    "logistic": (logistic, logistic_derivative_abs),
    "hinge": (hinge, hinge_derivative_abs),
}
