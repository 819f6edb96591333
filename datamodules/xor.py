"""Data on the Boolean hypercube: Glasgow's (2023) XOR, and the k-sparse parity of Barak et al. (2022)."""

from __future__ import annotations

import torch
from torch import Tensor

from featlearn.contracts import GroundTruth
from featlearn.datamodules.base import SyntheticDataModule
from featlearn.linalg import orthonormal_columns
from featlearn.sampling import rademacher
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, derive_seed
from featlearn.validation import check_bool, check_int, check_number, is_int


class Hypercube(SyntheticDataModule):
    r"""x uniform on the hypercube {+-1}^d, optionally in a Haar-random orthogonal basis: ``x = R x'``.

    The shared part of the hypercube's data models: its dimension, its rotation and how a
    sample is drawn. A subclass gives the label of x' (the unrotated point) in :meth:`label`.

    Args:
        dim: Input dimension d.
        rotate: Apply a random rotation of the basis.
        rotation_seed: Seed of the rotation (part of the distribution, shared by every
            ensemble member).
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``batch_size``, ``train_size``,
            ``test_size``, ``seed``, ...).
    """

    def __init__(self, dim: int, rotate: bool = False, rotation_seed: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        check_bool("data.rotate", rotate)
        check_int("data.rotation_seed", rotation_seed, 0)
        self.dim = dim
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

    def label(self, x: Tensor) -> Tensor:
        """The labels (n,) of unrotated points x (n, d)."""
        raise NotImplementedError

    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw x' uniform on the hypercube, label it, and return (R x', y)."""
        x = rademacher((n, self.dim), generator, device, self.dtype)  # (n, d) in {-1, +1}, 64 signs per draw
        y = self.label(x)  # (n,)
        if self.rotate:
            rot = self._rotation_on.get(device)
            if rot is None:
                rot = self._rotation_on[device] = self.rotation.to(device=device, dtype=self.dtype)
            x = x @ rot.T
        return x, y

    def _rotated(self, vectors: Tensor) -> Tensor:
        """Directions (..., d) of the unrotated basis in the data's basis (R v), in the data's dtype."""
        vectors = vectors.to(torch.float64)
        if self.rotate:
            vectors = vectors @ self.rotation.T
        return vectors.to(self.dtype)


class BooleanXOR(Hypercube):
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
        super().__init__(dim, rotate=rotate, rotation_seed=rotation_seed, batch_size=batch_size, **kwargs)
        check_int("data.dim", dim, 2, hint=" (XOR needs two coordinates)")
        pair = tuple(pair)
        if len(pair) != 2 or not all(is_int(k) and 0 <= k < dim for k in pair):
            raise ValueError(f"data.pair must be two coordinates in [0, {dim - 1}] (0-based), got {list(pair)}.")
        if pair[0] == pair[1]:
            raise ValueError(f"data.pair must name two different coordinates, got {list(pair)}.")
        self.pair = pair

    def label(self, x: Tensor) -> Tensor:
        """The labels y = -x_i x_j (n,) of unrotated points x (n, d)."""
        i, j = self.pair
        return -x[:, i] * x[:, j]

    def ground_truth(self) -> GroundTruth:
        """``mu_1 = R(e_i - e_j)`` (label +1) and ``mu_2 = R(e_i + e_j)`` (label -1), each (d,)."""
        i, j = self.pair
        mu_1 = torch.zeros(self.dim, dtype=torch.float64)
        mu_1[i], mu_1[j] = 1.0, -1.0
        return GroundTruth(mu_1=self._rotated(mu_1), mu_2=self._rotated(mu_1.abs()))


class SparseParity(Hypercube):
    r"""The k-sparse parity of n bits (Barak et al. 2022): the product of k hidden coordinates.

    .. math::

        x \sim \mathrm{Uniform}(\{\pm 1\}^n), \qquad y(x) = s \prod_{i \in S} x_i , \quad |S| = k,

    with ``sign`` s = +1 (the paper's label). Glasgow's XOR is k = 2 with s = -1: with the same
    seed, ``SparseParity(dim, k=2, sign=-1)`` draws the inputs and labels of
    ``BooleanXOR(dim)`` (its ``pair`` is this ``support``).

    With ``rotate=True`` the inputs are ``x = R x'`` for a Haar-random orthogonal R and the
    label is the parity of x' = R^T x: a product of k linear forms (R e_i . x, i in S), no
    longer a function of k input coordinates. For k = 2 the labels still depend on x through
    a plane only (Glasgow's Remark 2.1); for k > 2 through a k-dimensional subspace, and an
    algorithm that reads coordinates (sign SGD, a sparse prior) loses what the basis gave it.

    Args:
        dim: n, the number of bits (>= k).
        k: The parity's order, >= 1.
        batch_size: Samples per update step (int or schedule).
        support: The hidden set S, k distinct coordinates in [0, n) (0-based); default the
            first k.
        sign: s, +1 or -1.
        rotate: Apply a random rotation of the basis.
        rotation_seed: Seed of the rotation.
        label_noise: The probability, in [0, 0.5], that a label is flipped (independently per
            sample, held-out sets included). 0.5 makes the labels independent of x: "training on
            noise", the rival of Barak et al.'s hidden progress (their Figure 3), with the same
            support to measure the weights on.
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size`` for a finite
            training set, else online; ``test_size``, ``seed``, ...).
    """

    def __init__(
        self,
        dim: int = 50,
        k: int = 3,
        batch_size: ScheduleSpec = 32,
        support: tuple[int, ...] | None = None,
        sign: int = 1,
        rotate: bool = False,
        rotation_seed: int = 0,
        label_noise: float = 0.0,
        **kwargs,
    ) -> None:
        super().__init__(dim, rotate=rotate, rotation_seed=rotation_seed, batch_size=batch_size, **kwargs)
        check_int("data.k", k, 1)
        self.label_noise = float(check_number("data.label_noise", label_noise, 0.0, 0.5))
        check_int("data.dim", dim, k, hint=f" (a {k}-sparse parity needs {k} bits or more)")
        support = tuple(range(k)) if support is None else tuple(support)
        if len(support) != k or not all(is_int(i) and 0 <= i < dim for i in support):
            raise ValueError(
                f"data.support must be k = {k} coordinates in [0, {dim - 1}] (0-based), got {list(support)}."
            )
        if len(set(support)) != k:
            raise ValueError(f"data.support must name {k} different coordinates, got {list(support)}.")
        if sign not in (1, -1):
            raise ValueError(f"data.sign must be 1 or -1, got {sign!r}.")
        self.k = k
        self.support = support
        self.sign = sign

    def label(self, x: Tensor) -> Tensor:
        """The labels y = s prod_{i in S} x_i (n,) of unrotated points x (n, d)."""
        return self.sign * x[:, list(self.support)].prod(dim=1)

    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """The hypercube's draw, each label then flipped with probability ``label_noise`` (none drawn at 0)."""
        x, y = super().sample(n, generator, device)
        if self.label_noise:
            flip = torch.rand(n, generator=generator, device=device) < self.label_noise  # (n,)
            y = torch.where(flip, -y, y)
        return x, y

    def ground_truth(self) -> GroundTruth:
        """``support``: the directions R e_i, i in S, (k, d); at k = 2 also XOR's ``mu_1`` (label +1) and ``mu_2``."""
        basis = torch.eye(self.dim, dtype=torch.float64)[list(self.support)]  # (k, d)
        if self.k != 2:
            return GroundTruth(support=self._rotated(basis))
        # z = e_i + s e_j has x_i x_j = s, so its label is s * s = +1: XOR's mu_1 (e_i - e_j when s = -1).
        plus = basis[0] + self.sign * basis[1]
        minus = basis[0] - self.sign * basis[1]
        return GroundTruth(support=self._rotated(basis), mu_1=self._rotated(plus), mu_2=self._rotated(minus))
