"""Random matrices shared by the data models: Haar-random orthonormal frames and unit columns."""

from __future__ import annotations

import torch
from torch import Tensor


def orthonormal_columns(d: int, n_cols: int, generator: torch.Generator) -> Tensor:
    """A Haar-random d x n_cols matrix with orthonormal columns (n_cols <= d), float64.

    QR of a Gaussian matrix, with the signs of R's diagonal moved into Q so that Q is
    Haar-distributed (QR alone is not: its sign convention biases the columns).

    Args:
        d: Number of rows.
        n_cols: Number of columns, at most ``d``.
        generator: CPU generator to draw the Gaussian matrix from.

    Returns:
        ``Q`` of shape (d, n_cols) with ``Q^T Q = I``.
    """
    q, r = torch.linalg.qr(torch.randn(d, n_cols, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


def unit_columns(d: int, n_cols: int, generator: torch.Generator) -> Tensor:
    """A d x n_cols matrix of i.i.d. uniformly random unit columns, float64.

    Independent directions on the sphere are mu-incoherent with
    ``mu = O(sqrt(log n_cols))`` w.h.p. (|<M_i, M_j>| ~ 1/sqrt(d)).
    """
    m = torch.randn(d, n_cols, generator=generator, dtype=torch.float64)
    return m / m.norm(dim=0, keepdim=True)
