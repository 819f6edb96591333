"""The Boolean XOR data model of Glasgow (2023)."""

from __future__ import annotations

import torch
from torch import Tensor

from featlearn.contracts import GroundTruth
from featlearn.datamodules.base import SyntheticDataModule
from featlearn.linalg import orthonormal_columns
from featlearn.sampling import rademacher
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, derive_seed
from featlearn.validation import check_bool, check_int, is_int


class BooleanXOR(SyntheticDataModule):
    r"""Uniform Boolean hypercube labelled by the product of two coordinates.

    .. math::

        x \sim \mathrm{Uniform}(\{\pm 1\}^d), \qquad y(x) = -x_i x_j ,

    with the pair ``(i, j)`` (0-based; the paper's coordinates 1 and 2 are the default
    ``(0, 1)``). The label depends on x only through z, its projection on
    span(e_i, e_j): the four clusters are ``z in {+-mu_1, +-mu_2}`` with

    .. math::

        \mu_1 = e_i - e_j \; (y = +1), \qquad \mu_2 = e_i + e_j \; (y = -1).

    With ``rotate=True`` the whole hypercube is turned by a Haar-random orthogonal
    ``R`` (drawn from ``rotation_seed``): ``x = R x'``, and ``mu_k = R mu_k'``.
    Remark 2.1: SGD from a rotation-invariant initialisation is rotation invariant,
    so training curves must not change in distribution.

    Args:
        dim: Input dimension d >= 2.
        batch_size: Samples per update step (int or schedule), the paper's m.
        pair: The two label coordinates (i, j), distinct, in [0, d).
        rotate: Apply a random rotation of the basis.
        rotation_seed: Seed of the rotation (part of the distribution, shared by
            every ensemble member).
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size``,
            ``test_size``, ``seed``, ...).
    """


    def __init__(
        self,
        dim: int = 32,
        batch_size: ScheduleSpec = 256,
        pair: tuple[int, int] = (0, 1),
        rotate: bool = False,
        rotation_seed: int = 0,
        **kwargs,
    ) -> None:
        super().__init__(batch_size=batch_size, **kwargs)
        check_int("data.dim", dim, 2, hint=" (XOR needs two coordinates)")
        pair = tuple(pair)
        if len(pair) != 2 or not all(is_int(k) and 0 <= k < dim for k in pair):
            raise ValueError(f"data.pair must be two coordinates in [0, {dim - 1}] (0-based), got {list(pair)}.")
        if pair[0] == pair[1]:
            raise ValueError(f"data.pair must name two different coordinates, got {list(pair)}.")
        check_bool("data.rotate", rotate)
        check_int("data.rotation_seed", rotation_seed, 0)
        self.dim = dim
        self.pair = pair
        self.rotate = rotate
        self.rotation_seed = rotation_seed
        self._rotation: Tensor | None = None  # (d, d), float64 on the CPU
        self._rotation_on: dict[torch.device, Tensor] = {}

    @property
    def input_dim(self) -> int:  # noqa: D102
        return self.dim

    @property
    def rotation(self) -> Tensor | None:
        """The orthogonal matrix R (d, d), or None without rotation."""
        if not self.rotate:
            return None
        if self._rotation is None:
            gen = torch.Generator().manual_seed(derive_seed(self.rotation_seed, STRUCTURE))
            self._rotation = orthonormal_columns(self.dim, self.dim, gen)  # Haar-random orthogonal
        return self._rotation

    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw x uniform on the (rotated) hypercube and y = -x_i x_j."""
        x = rademacher((n, self.dim), generator, device, self.dtype)  # (n, d) in {-1, +1}, 64 signs per draw
        i, j = self.pair
        y = -x[:, i] * x[:, j]  # (n,)
        if self.rotate:
            rot = self._rotation_on.get(device)
            if rot is None:
                rot = self._rotation_on[device] = self.rotation.to(device=device, dtype=self.dtype)
            x = x @ rot.T
        return x, y

    def ground_truth(self) -> GroundTruth:
        """``mu_1 = R(e_i - e_j)`` (label +1) and ``mu_2 = R(e_i + e_j)`` (label -1), each (d,)."""
        i, j = self.pair
        mu_1 = torch.zeros(self.dim, dtype=torch.float64)
        mu_1[i], mu_1[j] = 1.0, -1.0
        mu_2 = mu_1.abs()
        if self.rotate:
            mu_1, mu_2 = self.rotation @ mu_1, self.rotation @ mu_2
        return GroundTruth(mu_1=mu_1.to(self.dtype), mu_2=mu_2.to(self.dtype))
