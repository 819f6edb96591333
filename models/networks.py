r"""Plain ``nn.Module`` networks (no training logic): the two-layer network.

The learner that trains them is a LightningModule in :mod:`featlearn.models.two_layer`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn


def truncated_relu(z: Tensor) -> Tensor:
    """min(1, max(0, z)) (Shi et al. 2022)."""
    return torch.clamp(z, 0.0, 1.0)


def quadratic(z: Tensor) -> Tensor:
    """z^2."""
    return z * z


#: Activation functions sigma by config name. ReLU's derivative at 0 is 0, as in
#: Glasgow (2023), footnote 3.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": torch.relu,
    "truncated_relu": truncated_relu,
    "quadratic": quadratic,
}
OUTPUT_SCALES = ("mean_field", "standard")


def _smoothed_relu(z: Tensor, std: float) -> Tensor:
    """E max(0, z + xi) = z Phi(z/s) + s phi(z/s) for xi ~ N(0, s^2)."""
    u = z / std
    return z * torch.special.ndtr(u) + std * torch.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)


#: E_xi sigma(z + xi) with xi ~ N(0, s^2), in closed form (s > 0). The truncated ReLU
#: is relu(z) - relu(z - 1), so its smoothing is the difference of two smoothed ReLUs.
SMOOTHED_ACTIVATIONS: dict[str, Callable[[Tensor, float], Tensor]] = {
    "relu": _smoothed_relu,
    "truncated_relu": lambda z, std: _smoothed_relu(z, std) - _smoothed_relu(z - 1.0, std),
    "quadratic": lambda z, std: z * z + std * std,
}


def _smoothed_step(z: Tensor, std: float) -> Tensor:
    """d/dz E max(0, z + xi) = Phi(z/s) for xi ~ N(0, s^2)."""
    return torch.special.ndtr(z / std)


#: sigma'(z) by activation name, with sigma'(0) = 0 for the ReLUs (footnote 3 of
#: Glasgow 2023) and the truncated ReLU's derivative 1 on (0, 1), 0 elsewhere.
ACTIVATION_DERIVATIVES: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": lambda z: (z > 0).to(z.dtype),
    "truncated_relu": lambda z: ((z > 0) & (z < 1)).to(z.dtype),
    "quadratic": lambda z: 2.0 * z,
}
#: d/dz E_xi sigma(z + xi), the derivative of :data:`SMOOTHED_ACTIVATIONS`.
SMOOTHED_DERIVATIVES: dict[str, Callable[[Tensor, float], Tensor]] = {
    "relu": _smoothed_step,
    "truncated_relu": lambda z, std: _smoothed_step(z, std) - _smoothed_step(z - 1.0, std),
    "quadratic": lambda z, std: 2.0 * z,
}
INITS = ("sphere", "gaussian_symmetric")


class TwoLayerNetwork(nn.Module):
    r"""An ensemble of S independent two-layer networks evaluated in one batched call.

    .. math::

        f_s(x) = c \sum_{j=1}^{p} a_{s j}\, \sigma(w_{s j} \cdot x + b_{s j}),
        \qquad c = 1/p \text{ (mean field) or } 1 .

    Parameters: ``w`` (S, p, d), ``a`` (S, p) and, with ``bias=True``, ``b`` (S, p).

    Args:
        input_dim: d.
        width: p, the number of hidden neurons.
        ensemble_size: S, the number of independent networks.
        activation: ``relu``, ``truncated_relu`` or ``quadratic``.
        bias: Whether the hidden layer has biases b.
        output_scale: ``mean_field`` (c = 1/p, Glasgow) or ``standard`` (c = 1, Shi).
    """

    def __init__(
        self,
        input_dim: int,
        width: int,
        ensemble_size: int = 1,
        activation: str = "relu",
        bias: bool = False,
        output_scale: str = "mean_field",
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}.")
        if output_scale not in OUTPUT_SCALES:
            raise ValueError(f"output_scale must be one of {OUTPUT_SCALES}, got {output_scale!r}.")
        self.input_dim, self.width, self.ensemble_size = input_dim, width, ensemble_size
        self.activation = activation
        self.sigma = ACTIVATIONS[activation]
        self.scale = 1.0 / width if output_scale == "mean_field" else 1.0
        self.w = nn.Parameter(torch.zeros(ensemble_size, width, input_dim))  # (S, p, d)
        self.a = nn.Parameter(torch.zeros(ensemble_size, width))  # (S, p)
        if bias:
            self.b = nn.Parameter(torch.zeros(ensemble_size, width))  # (S, p)
        else:
            self.register_parameter("b", None)

    def preactivation(self, x: Tensor) -> Tensor:
        """w_j . x + b_j for every member and neuron: x (S, B, d) -> (S, B, p)."""
        if self.b is None:
            return torch.bmm(x, self.w.transpose(1, 2))
        return torch.baddbmm(self.b.unsqueeze(1), x, self.w.transpose(1, 2))

    def forward(self, x: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """Evaluate every member on its inputs.

        Args:
            x: (S, B, d), member s evaluated on x[s]; or (B, d), shared by all members.
            noise: Optional (S, B, p) added to the pre-activations (Shi et al.'s xi).
            smoothing_std: s > 0 replaces sigma by its Gaussian smoothing
                E_xi sigma(z + xi), xi ~ N(0, s^2): the noise in expectation.

        Returns:
            f of shape (S, B).
        """
        h = self.hidden(x, noise, smoothing_std)  # (S, B, p)
        # A broadcast product and sum beats bmm with a single column on the CPU.
        return (h * self.a.unsqueeze(1)).sum(dim=-1) * self.scale  # (S, B)

    def hidden(self, x: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """The hidden features sigma(w_j . x + b_j (+ xi)): x (S, B, d) or (B, d) -> (S, B, p)."""
        z = self.preactivation(self._per_member(x))  # (S, B, p)
        if noise is not None:
            z = z + noise
        return SMOOTHED_ACTIVATIONS[self.activation](z, smoothing_std) if smoothing_std > 0 else self.sigma(z)

    def activation_derivative(self, z: Tensor, smoothing_std: float = 0.0) -> Tensor:
        """sigma'(z) (or the smoothed activation's derivative when ``smoothing_std`` > 0)."""
        if smoothing_std > 0:
            return SMOOTHED_DERIVATIVES[self.activation](z, smoothing_std)
        return ACTIVATION_DERIVATIVES[self.activation](z)

    def _per_member(self, x: Tensor) -> Tensor:
        """Broadcast x (B, d) shared by all members to (S, B, d); (S, B, d) is unchanged."""
        return x.unsqueeze(0).expand(self.ensemble_size, -1, -1) if x.dim() == 2 else x

    @torch.no_grad()
    def init_sphere_(self, scale: float, generators: list[torch.Generator]) -> None:
        r"""Glasgow's initialisation: w_j ~ Uniform(S^{d-1}(theta)), a_j = eps_j ||w_j||.

        Biases (if any) start at 0.

        Args:
            scale: theta, the norm of every w_j.
            generators: One generator per member (CPU).
        """
        for s, gen in enumerate(generators):
            g = torch.randn(self.width, self.input_dim, generator=gen, dtype=torch.float64)
            w = scale * g / g.norm(dim=1, keepdim=True)
            eps = torch.randint(0, 2, (self.width,), generator=gen, dtype=torch.float64) * 2 - 1
            self.w[s].copy_(w)
            self.a[s].copy_(eps * w.norm(dim=1))
            if self.b is not None:
                self.b[s].zero_()

    @torch.no_grad()
    def init_gaussian_symmetric_(
        self, sigma_w: float, sigma_b: float, sigma_a: float, generators: list[torch.Generator]
    ) -> None:
        r"""Symmetric Gaussian initialisation (Shi et al. 2022, Section 3.1).

        For j <= p/2: w_j ~ N(0, sigma_w^2 I_d), b_j ~ N(0, sigma_b^2), a_j ~ N(0, sigma_a^2);
        neuron j + p/2 copies w_j, b_j and takes a_{j+p/2} = -a_j, so f = 0 at initialisation.

        Raises:
            ValueError: If the width is odd.
        """
        if self.width % 2:
            raise ValueError(
                f"model.width must be even for init: gaussian_symmetric (neurons come in "
                f"mirrored pairs), got {self.width}."
            )
        half = self.width // 2
        for s, gen in enumerate(generators):
            w = torch.randn(half, self.input_dim, generator=gen, dtype=torch.float64) * sigma_w
            a = torch.randn(half, generator=gen, dtype=torch.float64) * sigma_a
            b = torch.randn(half, generator=gen, dtype=torch.float64) * sigma_b
            self.w[s].copy_(torch.cat([w, w]))
            self.a[s].copy_(torch.cat([a, -a]))
            if self.b is not None:
                self.b[s].copy_(torch.cat([b, b]))

    def extra_repr(self) -> str:  # noqa: D102
        return (
            f"S={self.ensemble_size}, p={self.width}, d={self.input_dim}, sigma={self.activation}, "
            f"bias={self.b is not None}, scale={'1/p' if self.scale != 1.0 else '1'}"
        )


def default_init_scale(input_dim: int) -> float:
    """1 / log(d): Theorem 3.1's theta = 1/log^C(d) with C = 1."""
    return 1.0 / math.log(max(input_dim, 3))
