"""The hypercube mixture of Gaussians of Shi, Wei & Liang (2022), Appendix E.3.2."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from featlearn.contracts import GroundTruth
from featlearn.datamodules.base import HiddenVariableDataModule
from featlearn.linalg import orthonormal_columns
from featlearn.sampling import rademacher
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, derive_seed
from featlearn.validation import check_int, check_number

#: Largest k: ground_truth() lists all 2^k cluster centres.
MAX_K = 20


class GaussianMixture(HiddenVariableDataModule):
    r"""2^k Gaussian clusters on the vertices of a hypercube, labelled by parity.

    Shi, Wei & Liang (2022), Appendix E.3.2, eq. (290). With ``M in R^{d x k}``
    having orthonormal columns, ``eps_1, ..., eps_k`` i.i.d. Rademacher (symmetric
    Bernoulli on {-1, +1}) and independent Gaussian noise g:

    .. math::

        x = \sum_{i=1}^k \varepsilon_i M_{:,i} + g, \qquad
        g \sim N\!\left(0, \frac{\sigma_r^2 k}{d} I_d\right), \qquad
        y = \prod_{i=1}^k \varepsilon_i .

    The cluster centres ``sum_i (+-M_{:,i})`` (norm sqrt(k)) lie on the 2^k vertices
    of a hypercube, labelled by the parity of their signs. The noise variance is our
    reading of the paper's (typeset-damaged) ``N(0, sigma_r^2 k / d I_d)``: its total
    E||g||^2 = sigma_r^2 k equals sigma_r^2 times the squared norm of a centre, so
    ``sigma_r`` is the noise-to-signal ratio. Table 6 uses (d, k, sigma_r) =
    (100, 4, 1), (25, 4, 0.7) and (100, 5, 1). E[x] = 0 and E||x||^2 = k (1 +
    sigma_r^2); the paper trains on x as is ("typical practice"), so x is not
    normalised.

    Cluster j (0 <= j < 2^k) has signs ``eps_i = 1 - 2 * bit_i(j)`` (bit 0 is the
    least significant), so cluster 0 is ``+sum_i M_{:,i}`` with label +1.

    Args:
        d: Input dimension d >= k.
        k: Number of hypercube directions (2^k clusters), 1 <= k <= 20.
        sigma_r: Noise-to-signal ratio sigma_r >= 0 (per-coordinate noise standard
            deviation sigma_r sqrt(k / d)).
        structure_seed: Seed of M: part of the distribution, shared by every
            ensemble member.
        batch_size: Samples per update step (int or schedule).
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size``,
            ``test_size``, ``seed``, ...).
    """


    def __init__(
        self,
        d: int = 100,
        k: int = 4,
        sigma_r: float = 1.0,
        structure_seed: int = 0,
        batch_size: ScheduleSpec = 256,
        **kwargs,
    ) -> None:
        super().__init__(batch_size=batch_size, **kwargs)
        for name, value in (("d", d), ("k", k)):
            check_int(f"data.{name}", value, 1)
        if k > d:
            raise ValueError(
                f"data.k must be <= data.d (k orthonormal directions in R^d), got k={k} > d={d}: "
                f"lower data.k or raise data.d."
            )
        if k > MAX_K:
            raise ValueError(
                f"data.k must be <= {MAX_K} (the 2^k cluster centres are listed by ground_truth), got {k}."
            )
        sigma_r = check_number("data.sigma_r", sigma_r, minimum=0.0, hint=" (the noise-to-signal ratio)")
        check_int("data.structure_seed", structure_seed, 0)
        self.d, self.k, self.sigma_r = d, k, float(sigma_r)
        self.structure_seed = structure_seed
        self._m: Tensor | None = None  # (d, k), float64 on the CPU
        self._m_on: dict[torch.device, Tensor] = {}

    @property
    def input_dim(self) -> int:  # noqa: D102
        return self.d

    @property
    def M(self) -> Tensor:
        """The directions M (d, k), float64, orthonormal columns (drawn once, Haar)."""
        if self._m is None:
            gen = torch.Generator().manual_seed(derive_seed(self.structure_seed, STRUCTURE))
            self._m = orthonormal_columns(self.d, self.k, gen)
        return self._m

    @property
    def noise_std(self) -> float:
        """Per-coordinate standard deviation of g: sigma_r sqrt(k / d)."""
        return self.sigma_r * math.sqrt(self.k / self.d)

    def sample_with_hidden(
        self, n: int, generator: torch.Generator, device: torch.device
    ) -> tuple[Tensor, Tensor, Tensor]:
        """N points x = M eps + g, their labels y = prod_i eps_i, and ``eps`` (n, k): the signs of their clusters."""
        device = torch.device(device)
        m = self._m_on.get(device)
        if m is None:
            m = self._m_on[device] = self.M.to(device=device, dtype=self.dtype)
        eps = rademacher((n, self.k), generator, device, self.dtype)  # (n, k) in {-1, +1}
        y = eps.prod(dim=1)
        x = eps @ m.T + self.noise_std * torch.randn(n, self.d, generator=generator, device=device, dtype=self.dtype)
        return x, y, eps

    def ground_truth(self) -> GroundTruth:
        """``centres`` (2^k, d), ``centre_labels`` (2^k,) and ``dictionary`` = M (d, k).

        Centre j has signs eps_i = 1 - 2 bit_i(j) and label prod_i eps_i.
        """
        bits = (torch.arange(2**self.k)[:, None] >> torch.arange(self.k)) & 1  # (2^k, k)
        signs = (1 - 2 * bits).to(torch.float64)
        return GroundTruth(
            centres=(signs @ self.M.T).to(self.dtype),
            centre_labels=signs.prod(dim=1).to(self.dtype),
            dictionary=self.M.to(self.dtype),
        )
