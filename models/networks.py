r"""Plain ``nn.Module`` networks (no training logic): the two-layer network and its linearisation.

A network says what it computes and how it is initialised; the learners in
:mod:`featlearn.models.two_layer` (and its subclasses) train it. A config states a
network as two groups, the architecture (:class:`TwoLayerArchitecture`) and the
initialisation (:class:`Initialization`), beside how the learner trains it (:class:`Training`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from featlearn.schedules import ScheduleSpec
from featlearn.seeding import INIT, derive_seed
from featlearn.validation import check_choice, check_int, check_number


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
INITS = ("sphere", "gaussian_symmetric", "gaussian")


@dataclass
class TwoLayerArchitecture:
    """What the two-layer network computes (config group ``network``).

    Args:
        width: p, the number of hidden neurons.
        activation: ``relu``, ``truncated_relu`` (min(1, max(0, z))) or ``quadratic``.
        bias: Whether the hidden layer has biases b.
        output_scale: ``mean_field`` (c = 1/p, Glasgow) or ``standard`` (c = 1, Shi).
    """

    width: int
    activation: str = "relu"
    bias: bool = False
    output_scale: str = "mean_field"

    def __post_init__(self) -> None:
        check_int("model.network.width", self.width, 1)
        check_choice("model.network.activation", self.activation, sorted(ACTIVATIONS))
        check_choice("model.network.output_scale", self.output_scale, OUTPUT_SCALES)
        if not isinstance(self.bias, bool):
            raise ValueError(f"model.network.bias must be true or false, got {self.bias!r}.")


@dataclass
class Initialization:
    """How the two-layer network's parameters start (config group ``init``).

    * ``sphere`` (Glasgow 2023): w_j uniform on the sphere of radius ``scale``
      (default 1/log d, Theorem 3.1 with C = 1), a_j = eps_j ||w_j||, b = 0; with
      ``a_scale``, a_j = eps_j a_scale instead (Remark 4.3's example: "they all had norm 1").
    * ``gaussian_symmetric`` (Shi et al. 2022, Section 3.1): w ~ N(0, sigma_w^2 I),
      b ~ N(0, sigma_b^2), a ~ N(0, sigma_a^2) for half the neurons, mirrored pairs
      with negated a, so f = 0 at initialisation. A sigma left null is filled by the
      command line from the data model's ``process_constants()`` (for Shi's data:
      sigma_w = 1/k, sigma_b = 1/k^2, sigma_a = sigma~^2 / (gamma k^2)).
    * ``gaussian`` (Barak et al. 2022, Appendix D: "Kaiming initialization"): the same
      Gaussians drawn independently for every neuron, no mirrored pairs, so f is not 0 at
      initialisation. The stds must be given.

    Args:
        scheme: ``sphere``, ``gaussian_symmetric`` or ``gaussian``.
        scale: theta for ``sphere``.
        sigma_w: Std of w for the Gaussian schemes.
        sigma_b: Std of b for the Gaussian schemes.
        sigma_a: Std of a for the Gaussian schemes.
        a_scale: |a_j| for ``sphere`` (null: ||w_j||, the paper's balanced start).
    """

    scheme: str = "sphere"
    scale: float | None = None
    sigma_w: float | None = None
    sigma_b: float | None = None
    sigma_a: float | None = None
    a_scale: float | None = None  # last: positional use keeps the fields above where they were

    def __post_init__(self) -> None:
        check_choice("model.init.scheme", self.scheme, INITS)
        for name in ("scale", "a_scale"):
            if getattr(self, name) is not None:
                check_number(f"model.init.{name}", getattr(self, name), 0.0, strict=True)
        for name in ("sigma_w", "sigma_b", "sigma_a"):
            value = getattr(self, name)
            if value is not None:
                check_number(f"model.init.{name}", value, 0.0)
        # A field of the other scheme would be silently ignored: refuse it.
        unused = ["sigma_w", "sigma_b", "sigma_a"] if self.scheme == "sphere" else ["scale", "a_scale"]
        given = [name for name in unused if getattr(self, name) is not None]
        if given:
            raise ValueError(
                f"model.init.{given[0]} is not used by scheme {self.scheme}: remove it, or choose the scheme that "
                f"uses it (scale, a_scale: sphere; sigma_w, sigma_b, sigma_a: gaussian_symmetric or gaussian)."
            )


@dataclass(frozen=True)
class Training:
    r"""How the two-layer network's layers are trained (config group ``training``): every value a schedule.

    Each field is a number or a per-step schedule (a segment list, see
    :mod:`featlearn.schedules`). The parameter groups are the first layer's weights w (and
    biases b) and the second layer's a; each step is

    .. math::

        \theta_g \leftarrow \theta_g - c\,\eta_g(t)\,\partial_{\theta_g}\Big(\hat L
        + \sum_h \lambda_h(t) \lVert \theta_h \rVert^2\Big),

    with the loss computed on pre-activations plus N(0, sigma_xi(t)^2) noise. These are the
    values a grid ensemble may give per point (``model.member_values``).

    Args:
        lr: eta, the rate of both layers (what an unset ``lr_w`` or ``lr_a`` follows).
        lr_w: eta_w, the first layer's rate (w and b); null: ``lr``.
        lr_b: A separate rate for the biases b; null: ``lr_w``.
        lr_a: eta_a, the second layer's rate; null: ``lr``.
        weight_decay_w: lambda_w: the loss gains lambda_w ||W||_F^2.
        weight_decay_b: lambda_b: the loss gains lambda_b ||b||^2.
        weight_decay_a: lambda_a: the loss gains lambda_a ||a||^2.
        noise_std: sigma_xi: i.i.d. N(0, sigma_xi^2) added to every pre-activation in the
            training loss (fresh each step, per sample and neuron).
    """

    lr: ScheduleSpec | None = None
    lr_w: ScheduleSpec | None = None
    lr_b: ScheduleSpec | None = None
    lr_a: ScheduleSpec | None = None
    weight_decay_w: ScheduleSpec = 0.0
    weight_decay_b: ScheduleSpec = 0.0
    weight_decay_a: ScheduleSpec = 0.0
    noise_std: ScheduleSpec = 0.0


def as_dataclass(value, cls, setting: str = "model"):
    """``value`` as an instance of the dataclass ``cls`` (a mapping is unpacked into it).

    Raises:
        ValueError: A mapping with a key that is no field of ``cls`` (``setting`` names where it was given).
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"{setting} takes no {unknown[0]!r}: its fields are {', '.join(names)}.")
        return cls(**value)
    raise ValueError(f"Expected a {cls.__name__} or a mapping of its fields, got {value!r}.")


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
        TwoLayerArchitecture(width, activation, bias, output_scale)  # validates
        check_int("model.input_dim", input_dim, 1)
        check_int("model.ensemble_size", ensemble_size, 1)
        self.input_dim, self.width, self.ensemble_size = input_dim, width, ensemble_size
        self.activation, self.output_scale = activation, output_scale
        self.sigma = ACTIVATIONS[activation]
        self.scale = 1.0 / width if output_scale == "mean_field" else 1.0
        self.w = nn.Parameter(torch.zeros(ensemble_size, width, input_dim))  # (S, p, d)
        self.a = nn.Parameter(torch.zeros(ensemble_size, width))  # (S, p)
        if bias:
            self.b = nn.Parameter(torch.zeros(ensemble_size, width))  # (S, p)
        else:
            self.register_parameter("b", None)

    @property
    def architecture(self) -> TwoLayerArchitecture:
        """What the network computes (width, activation, bias, output scale), without its members or d."""
        return TwoLayerArchitecture(self.width, self.activation, self.b is not None, self.output_scale)

    def preactivation(self, x: Tensor, members: slice | None = None) -> Tensor:
        """w_j . x + b_j for every member and neuron: x (S, B, d) -> (S, B, p).

        ``members``: only these members (x then holds as many rows along dimension 0).
        """
        w = self.w if members is None else self.w[members]
        x = x.to(w.dtype)  # data models draw float32; under trainer.precision 64-true the weights are float64
        if self.b is None:
            return torch.bmm(x, w.transpose(1, 2))
        b = self.b if members is None else self.b[members]
        return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))

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
        return self.readout(self.preactivation(self.per_member(x)), noise, smoothing_std)

    def readout(self, z: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """The output f = c sum_j a_j sigma(z_j (+ xi_j)) from pre-activations z (S, B, p): (S, B).

        The network's output from given pre-activations, e.g. ones computed once for a
        fixed set while the first layer is frozen; ``noise`` and ``smoothing_std`` as in
        :meth:`forward`.
        """
        h = self.activate(z if noise is None else z + noise, smoothing_std)  # (S, B, p)
        # bmm with one column: no (S, B, p) temporary, and its backward is a product too
        # (3-4x faster than a broadcast product and sum on the CPU with torch 2.14).
        return torch.bmm(h, self.a.unsqueeze(-1)).squeeze(-1) * self.scale  # (S, B)

    def hidden(self, x: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """The hidden features sigma(w_j . x + b_j (+ xi)): x (S, B, d) or (B, d) -> (S, B, p)."""
        z = self.preactivation(self.per_member(x))  # (S, B, p)
        return self.activate(z if noise is None else z + noise, smoothing_std)

    def activation_derivative(self, z: Tensor, smoothing_std: float = 0.0) -> Tensor:
        """sigma'(z) (or the smoothed activation's derivative when ``smoothing_std`` > 0)."""
        if smoothing_std > 0:
            return SMOOTHED_DERIVATIVES[self.activation](z, smoothing_std)
        return ACTIVATION_DERIVATIVES[self.activation](z)

    def per_member(self, x: Tensor) -> Tensor:
        """The input x as (S, B, d): (B, d) shared by all members is broadcast, (S, B, d) is unchanged.

        x (K, B, d) with K dividing S (the K data streams of an ensemble of G = S / K grid
        points, member g K + j trained on stream j) is repeated G times.
        """
        return members_of(x, self.ensemble_size)

    def activate(self, z: Tensor, smoothing_std: float = 0.0) -> Tensor:
        """sigma(z), or its Gaussian smoothing E_xi sigma(z + xi) when ``smoothing_std`` > 0."""
        return SMOOTHED_ACTIVATIONS[self.activation](z, smoothing_std) if smoothing_std > 0 else self.sigma(z)

    @torch.no_grad()
    def initialize_(self, init: Initialization, seed: int, offsets: list[int] | None = None) -> None:
        """Draw the initial parameters; member s from the stream ``(seed + offsets[s], INIT)``.

        ``offsets`` defaults to ``range(S)``; a grid of G points on K seeds gives member
        g K + j the offset j, so every point starts from the same K networks.

        Raises:
            ValueError: If a ``gaussian_symmetric`` std is unset or the width is odd.
        """
        offsets = list(range(self.ensemble_size)) if offsets is None else offsets
        generators = [torch.Generator().manual_seed(derive_seed(seed + offset, INIT)) for offset in offsets]
        if init.scheme == "sphere":
            scale = default_init_scale(self.input_dim) if init.scale is None else init.scale
            self.init_sphere_(scale, generators, init.a_scale)
            return
        for name in ("sigma_w", "sigma_b", "sigma_a"):
            if getattr(init, name) is None:
                raise ValueError(
                    f"model.init.{name} must be set to a std >= 0 for scheme: {init.scheme} (or, for "
                    f"gaussian_symmetric, left null for the command line to derive it from a data model that "
                    f"states it), got None."
                )
        if init.scheme == "gaussian":
            self.init_gaussian_(init.sigma_w, init.sigma_b, init.sigma_a, generators)
            return
        self.init_gaussian_symmetric_(init.sigma_w, init.sigma_b, init.sigma_a, generators)

    @torch.no_grad()
    def init_sphere_(self, scale: float, generators: list[torch.Generator], a_scale: float | None = None) -> None:
        r"""Glasgow's initialisation: w_j ~ Uniform(S^{d-1}(theta)), a_j = eps_j ||w_j|| (or eps_j a_scale).

        Biases (if any) start at 0. The draws are the same with or without ``a_scale``, so a
        run that sets it starts from the same w and signs.

        Args:
            scale: theta, the norm of every w_j.
            generators: One generator per member (CPU).
            a_scale: |a_j|, where given (Remark 4.3's second layer of norm 1).
        """
        for s, gen in enumerate(generators):
            g = torch.randn(self.width, self.input_dim, generator=gen, dtype=torch.float64)
            w = scale * g / g.norm(dim=1, keepdim=True)
            eps = torch.randint(0, 2, (self.width,), generator=gen, dtype=torch.float64) * 2 - 1
            self.w[s].copy_(w)
            self.a[s].copy_(eps * (w.norm(dim=1) if a_scale is None else a_scale))
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
                f"model.network.width must be even for init scheme gaussian_symmetric (neurons come in "
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

    @torch.no_grad()
    def init_gaussian_(self, sigma_w: float, sigma_b: float, sigma_a: float, generators: list[torch.Generator]) -> None:
        r"""Independent Gaussians: w_j ~ N(0, sigma_w^2 I_d), b_j ~ N(0, sigma_b^2), a_j ~ N(0, sigma_a^2) for every j.

        Barak et al.'s (2022) Gaussian initialisation (Appendix D, the "Kaiming" convention:
        sigma_w = sqrt(2 / n) for ReLU). No mirrored pairs: f is not 0 at initialisation.
        """
        for s, gen in enumerate(generators):
            self.w[s].copy_(torch.randn(self.width, self.input_dim, generator=gen, dtype=torch.float64) * sigma_w)
            self.a[s].copy_(torch.randn(self.width, generator=gen, dtype=torch.float64) * sigma_a)
            b = torch.randn(self.width, generator=gen, dtype=torch.float64) * sigma_b
            if self.b is not None:
                self.b[s].copy_(b)

    def extra_repr(self) -> str:  # noqa: D102
        return (
            f"S={self.ensemble_size}, p={self.width}, d={self.input_dim}, sigma={self.activation}, "
            f"bias={self.b is not None}, scale={'1/p' if self.scale != 1.0 else '1'}"
        )


def members_of(values: Tensor, members: int) -> Tensor:
    """``values`` with one row per member along dimension 0: (S, ...) from (S, ...), (K, ...) or (...).

    For inputs: a 2-D (B, d) input is shared by every member (broadcast, no copy); K rows
    with K dividing S are the K data streams of S / K grid points and are repeated (member
    g K + j gets row j). Labels (K, B) go through :func:`repeat_streams` instead.
    """
    if values.dim() == 2:
        return values.unsqueeze(0).expand(members, -1, -1)
    return repeat_streams(values, members)


def repeat_streams(values: Tensor, members: int) -> Tensor:
    """(K, ...) -> (S, ...) for K dividing S, row j repeated as rows g K + j; (S, ...) unchanged.

    Raises:
        ValueError: K does not divide S.
    """
    streams = values.shape[0]
    if streams == members:
        return values
    if members % streams:
        raise ValueError(
            f"{streams} data stream(s) cannot feed {members} ensemble members: the members must be "
            f"G grid points times the data model's ensemble_size."
        )
    return values.repeat(members // streams, *([1] * (values.dim() - 1)))


def default_init_scale(input_dim: int) -> float:
    """1 / log(d): Theorem 3.1's theta = 1/log^C(d) with C = 1."""
    return 1.0 / math.log(max(input_dim, 3))


class LinearizedTwoLayerNetwork(nn.Module):
    r"""The two-layer network replaced by its first-order Taylor expansion at initialisation.

    With :math:`\theta = (w, b, a)` the parameters of ``base`` and :math:`\theta_0` their
    values when this module is built (kept as buffers ``w0``, ``b0``, ``a0``):

    .. math::

        f_{\mathrm{lin}}(x; \theta) &= f(x; \theta_0) + \nabla_\theta f(x; \theta_0) \cdot (\theta - \theta_0) \\
        &= c \sum_{j=1}^{p} \Big[ a_j\, \sigma(z^0_j) + a^0_j\, \sigma'(z^0_j)
           \big((w_j - w^0_j) \cdot x + b_j - b^0_j\big) \Big],
        \qquad z^0_j = w^0_j \cdot x + b^0_j ,

    a linear model in the fixed tangent features :math:`\nabla_\theta f(x; \theta_0)`,
    whose inner product is the network's neural tangent kernel at initialisation
    (:meth:`ntk_blocks`). It costs about two network forward passes: no n x n matrix.
    The trained parameters stay ``base``'s (``base.w``, ``base.b``, ``base.a``), so the
    same schedules and L2 terms apply. Pre-activation noise, when given, enters as in
    the network: sigma(z0 + xi) and sigma'(z0 + xi) (or their Gaussian smoothings).

    Args:
        base: The network to linearise, at its initial parameters.
    """

    def __init__(self, base: TwoLayerNetwork) -> None:
        super().__init__()
        self.base = base
        # theta_0, frozen: the point of linearisation. (S, p, d), (S, p), (S, p).
        self.register_buffer("w0", base.w.detach().clone())
        self.register_buffer("a0", base.a.detach().clone())
        self.register_buffer("b0", None if base.b is None else base.b.detach().clone())

    @property
    def ensemble_size(self) -> int:
        """S, the number of independent networks."""
        return self.base.ensemble_size

    def initial_preactivation(self, x: Tensor, members: slice | None = None) -> Tensor:
        """Z0 = w0 . x + b0 for x (S, B, d): (S, B, p); ``members``: only these (x holds as many rows)."""
        w0 = self.w0 if members is None else self.w0[members]
        if self.b0 is None:
            return torch.bmm(x, w0.transpose(1, 2))
        b0 = self.b0 if members is None else self.b0[members]
        return torch.baddbmm(b0.unsqueeze(1), x, w0.transpose(1, 2))

    def forward(self, x: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """f_lin (S, B) for x (S, B, d) or (B, d), with optional pre-activation noise (S, B, p)."""
        net = self.base
        x = net.per_member(x)  # (S, B, d)
        z0 = self.initial_preactivation(x)  # (S, B, p)
        dz = torch.bmm(x, (net.w - self.w0).transpose(1, 2))  # (S, B, p)
        if self.b0 is not None:
            dz = dz + (net.b - self.b0).unsqueeze(1)
        if noise is not None:
            z0 = z0 + noise
        h0 = net.activate(z0, smoothing_std)
        g0 = net.activation_derivative(z0, smoothing_std)  # (S, B, p)
        per_neuron = h0 * net.a.unsqueeze(1) + g0 * dz * self.a0.unsqueeze(1)  # (S, B, p)
        return per_neuron.sum(dim=-1) * net.scale  # (S, B)

    def tangent_features(self, x: Tensor, chunk: int = 16384, members: slice | None = None) -> tuple[Tensor, Tensor]:
        """H0 = sigma(z0) and a0 sigma'(z0) of inputs x (S, n, d), each (S, n, p), ``chunk`` rows at a time.

        ``members``: only these members (x holds as many rows).
        """
        parts = [self.tangent_parts(x[:, i : i + chunk], members)[1:] for i in range(0, x.shape[1], chunk)]
        return torch.cat([h for h, _ in parts], dim=1), torch.cat([g for _, g in parts], dim=1)

    def output_from_tangent_features(self, x: Tensor, h0: Tensor, g0a0: Tensor) -> Tensor:
        """F_lin (S, B) from given tangent features h0, a0 sigma'(z0) (S, B, p) of inputs x (S, B, d).

        :meth:`forward` without its product w0 . x: c sum_j [a_j h0_j + (a0 sigma'(z0))_j dz_j]
        with dz = (w - w0) . x + b - b0.
        """
        net = self.base
        dz = torch.bmm(net.per_member(x), (net.w - self.w0).transpose(1, 2))  # (S, B, p)
        if self.b0 is not None:
            dz = dz + (net.b - self.b0).unsqueeze(1)
        return (h0 * net.a.unsqueeze(1) + g0a0 * dz).sum(dim=-1) * net.scale  # (S, B)

    def tangent_parts(self, x: Tensor, members: slice | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """The pieces of the tangent features at theta_0: h = sigma(z0), g = a0 sigma'(z0), each (S, B, p).

        ``members``: only these members, for x with as many rows (S otherwise).

        Returns:
            ``(x, h, g)`` with x broadcast to (S, B, d).
        """
        a0 = self.a0
        if members is None:
            x = self.base.per_member(x)
        else:
            a0 = a0[members]
        z0 = self.initial_preactivation(x, members)  # (S, B, p)
        return x, self.base.sigma(z0), self.base.activation_derivative(z0) * a0.unsqueeze(1)

    def ntk_blocks(self, x1: Tensor, x2: Tensor) -> dict[str, Tensor]:
        r"""The tangent kernel of each parameter group, K_g(x, x') = grad_g f0(x) . grad_g f0(x').

        .. math::

            K_a = c^2 \sum_j \sigma(z_j)\sigma(z'_j), \quad
            K_b = c^2 \sum_j (a^0_j)^2 \sigma'(z_j)\sigma'(z'_j), \quad
            K_w = K_b \, (x \cdot x').

        Args:
            x1: (S, n1, d) or (n1, d).
            x2: (S, n2, d) or (n2, d).

        Returns:
            ``{"w", "a"[, "b"]}`` -> (S, n1, n2).
        """
        (x1, h1, g1), (x2, h2, g2) = self.tangent_parts(x1), self.tangent_parts(x2)
        c2 = self.base.scale**2
        gg = c2 * torch.bmm(g1, g2.transpose(1, 2))  # (S, n1, n2)
        blocks = {"w": gg * torch.bmm(x1, x2.transpose(1, 2)), "a": c2 * torch.bmm(h1, h2.transpose(1, 2))}
        if self.b0 is not None:
            blocks["b"] = gg
        return blocks

    def ntk(self, x1: Tensor, x2: Tensor, groups: tuple[str, ...] = ("w", "b", "a")) -> Tensor:
        """The neural tangent kernel at theta_0 over the parameter ``groups`` (those present): (S, n1, n2)."""
        blocks = self.ntk_blocks(x1, x2)
        return sum(blocks[name] for name in groups if name in blocks)

    def initial_output(self, x: Tensor) -> Tensor:
        """F0(x) = f(x; theta_0), (S, B)."""
        _, h, _ = self.tangent_parts(x)
        return (h * self.a0.unsqueeze(1)).sum(dim=-1) * self.base.scale
