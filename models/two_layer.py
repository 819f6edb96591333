"""The two-layer network learner of Glasgow (2023) and Shi, Wei, Liang (2022)."""

from __future__ import annotations

import torch
from torch import Tensor

from featlearn.models.base import ScheduledSGDModule
from featlearn.models.networks import INITS, TwoLayerNetwork, default_init_scale
from featlearn.schedules import ScheduleSpec, as_schedule
from featlearn.seeding import INIT, NOISE, GeneratorPool, derive_seed


class TwoLayerNet(ScheduledSGDModule):
    r"""Trains the two-layer network f(x) = c sum_j a_j sigma(w_j . x + b_j) by scheduled SGD.

    With every argument but ``input_dim``, ``width`` and ``lr`` at its default this is
    exactly the model and update of Glasgow (2023), Section 2.2: ReLU, no bias,
    c = 1/p, ``sphere`` initialisation, the logistic loss l = 2 log(1 + e^{-y f}),
    both layers trained, and the mean-field gradient convention
    :math:`\nabla_u L := p\, \partial L / \partial u`, i.e. for a neuron (w, a_w)

    .. math::

        \nabla_w \hat L = \frac{1}{m} \sum_i a_w \ell'(x_i) \sigma'(w^\top x_i) x_i, \qquad
        \nabla_{a_w} \hat L = \frac{1}{m} \sum_i \ell'(x_i) \sigma(w^\top x_i).

    Shi et al.'s training process (Section 3.1) uses ``init: gaussian_symmetric``,
    ``activation: truncated_relu``, ``bias: true``, ``output_scale: standard``,
    ``loss: hinge``, ``mean_field_gradient: false`` and per-step schedules.

    Every hyperparameter marked *schedule* is a number or a per-step schedule (see
    :mod:`featlearn.schedules`); the values in effect are logged under ``sched/``.

    Args:
        input_dim: d (linked from the data model by the CLI).
        width: p, the number of hidden neurons.
        lr: *schedule*, the learning rate eta of both layers.
        lr_w: *schedule*, eta_w for the first layer (w and b); defaults to ``lr``.
        lr_b: *schedule*, a separate rate for the biases b; defaults to ``lr_w``.
        lr_a: *schedule*, eta_a for the second layer (a); defaults to ``lr``.
        weight_decay_w: *schedule*, lambda_w: the loss gains lambda_w ||W||_F^2.
        weight_decay_b: *schedule*, lambda_b: the loss gains lambda_b ||b||^2.
        weight_decay_a: *schedule*, lambda_a: the loss gains lambda_a ||a||^2.
        noise_std: *schedule*, sigma_xi: i.i.d. N(0, sigma_xi^2) added to every
            pre-activation in the training loss (fresh each step, per sample and neuron).
        noise_mode: ``sample`` (draw xi) or ``expectation`` (replace sigma by its
            closed-form smoothing E_xi sigma(z + xi): the noisy loss's deterministic
            counterpart, with no sampling variance).
        activation: ``relu``, ``truncated_relu`` (min(1, max(0, z))) or ``quadratic``.
        bias: Whether the hidden layer has biases.
        output_scale: ``mean_field`` (c = 1/p) or ``standard`` (c = 1).
        init: ``sphere`` (w uniform on the sphere of radius ``init_scale``,
            a_j = eps_j ||w_j||) or ``gaussian_symmetric`` (w ~ N(0, sigma_w^2 I),
            b ~ N(0, sigma_b^2), a ~ N(0, sigma_a^2), mirrored pairs with negated a).
        init_scale: theta for ``sphere``; default 1/log(d) (Theorem 3.1 with C = 1).
        sigma_w: Std of w for ``gaussian_symmetric``.
        sigma_b: Std of b for ``gaussian_symmetric``.
        sigma_a: Std of a for ``gaussian_symmetric``.
        loss: ``logistic`` or ``hinge``.
        train_first_layer: Train w (and b); false freezes them.
        train_second_layer: Train a; false freezes it.
        mean_field_gradient: Scale every gradient by p (Glasgow's convention, footnote 4).
        ensemble_size: S independent networks trained in one batched step; member s
            is initialised from ``seed + s`` and sees data stream ``data.seed + s``.
        seed: Initialisation and noise seed; default: the global seed
            (``seed_everything``).
        max_members_logged: Per-member curves are logged when S is at most this.
        updates_per_batch: Most SGD updates per Lightning batch (throughput only;
            see :class:`ScheduledSGDModule`).
    """

    def __init__(
        self,
        input_dim: int,
        width: int,
        lr: ScheduleSpec | None = None,
        lr_w: ScheduleSpec | None = None,
        lr_b: ScheduleSpec | None = None,
        lr_a: ScheduleSpec | None = None,
        weight_decay_w: ScheduleSpec = 0.0,
        weight_decay_b: ScheduleSpec = 0.0,
        weight_decay_a: ScheduleSpec = 0.0,
        noise_std: ScheduleSpec = 0.0,
        noise_mode: str = "sample",
        activation: str = "relu",
        bias: bool = False,
        output_scale: str = "mean_field",
        init: str = "sphere",
        init_scale: float | None = None,
        sigma_w: float | None = None,
        sigma_b: float | None = None,
        sigma_a: float | None = None,
        loss: str = "logistic",
        train_first_layer: bool = True,
        train_second_layer: bool = True,
        mean_field_gradient: bool = True,
        ensemble_size: int = 1,
        seed: int | None = None,
        max_members_logged: int = 8,
        updates_per_batch: int = 1,
    ) -> None:
        super().__init__(
            loss=loss,
            ensemble_size=ensemble_size,
            max_members_logged=max_members_logged,
            updates_per_batch=updates_per_batch,
        )
        self.save_hyperparameters()
        for name, value, minimum in (("input_dim", input_dim, 1), ("width", width, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"model.{name} must be an integer >= {minimum}, got {value!r}.")
        if init not in INITS:
            raise ValueError(f"model.init must be one of {INITS}, got {init!r}.")
        if not (train_first_layer or train_second_layer):
            raise ValueError(
                "model.train_first_layer and model.train_second_layer are both false: nothing would train."
            )

        self.net = TwoLayerNetwork(input_dim, width, ensemble_size, activation, bias, output_scale)
        self.mean_field_gradient = mean_field_gradient
        self.seed = int(torch.initial_seed()) % (2**62) if seed is None else seed
        if self.seed < 0:
            raise ValueError(f"model.seed must be a non-negative integer, got {seed!r}.")
        self._generators = GeneratorPool()

        def rate(spec: ScheduleSpec | None, name: str):
            spec = lr if spec is None else spec
            if spec is None:
                raise ValueError(f"model.{name} is missing: set model.lr (both layers) or model.{name}.")
            return as_schedule(spec, f"model.{name}" if spec is not lr else "model.lr")

        groups = {}
        if train_first_layer:
            groups["w"] = ([self.net.w], rate(lr_w, "lr_w"), as_schedule(weight_decay_w, "model.weight_decay_w"))
            if bias:
                bias_rate = groups["w"][1] if lr_b is None else as_schedule(lr_b, "model.lr_b")
                groups["b"] = ([self.net.b], bias_rate, as_schedule(weight_decay_b, "model.weight_decay_b"))
        else:
            self.net.w.requires_grad_(False)
            if bias:
                self.net.b.requires_grad_(False)
        if train_second_layer:
            groups["a"] = ([self.net.a], rate(lr_a, "lr_a"), as_schedule(weight_decay_a, "model.weight_decay_a"))
        else:
            self.net.a.requires_grad_(False)
        self._set_groups(groups)
        self.noise_std = as_schedule(noise_std, "model.noise_std")
        if noise_mode not in ("sample", "expectation"):
            raise ValueError(f"model.noise_mode must be 'sample' or 'expectation', got {noise_mode!r}.")
        self.noise_mode = noise_mode

        init_generators = [
            torch.Generator().manual_seed(derive_seed(self.seed + s, INIT)) for s in range(ensemble_size)
        ]
        if init == "sphere":
            theta = default_init_scale(input_dim) if init_scale is None else init_scale
            if not theta > 0:
                raise ValueError(f"model.init_scale must be > 0, got {init_scale!r}.")
            self.net.init_sphere_(theta, init_generators)
        else:
            stds = {"sigma_w": sigma_w, "sigma_b": sigma_b, "sigma_a": sigma_a}
            for name, value in stds.items():
                if value is None or value < 0:
                    raise ValueError(
                        f"model.{name} must be set to a std >= 0 for init: gaussian_symmetric, got {value!r}."
                    )
            self.net.init_gaussian_symmetric_(sigma_w, sigma_b, sigma_a, init_generators)

    @property
    def width(self) -> int:
        """p, the number of hidden neurons."""
        return self.net.width

    def gradient_scale(self) -> float:  # noqa: D102
        return float(self.net.width) if self.mean_field_gradient else 1.0

    def scheduled_values(self, step: int) -> dict[str, float]:  # noqa: D102
        values = super().scheduled_values(step)
        values["noise_std"] = self.noise_std(step)
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if datamodule is not None and hasattr(datamodule, "batch_size"):
            values["batch_size"] = datamodule.batch_size(step)
        return values

    def schedules(self) -> list:  # noqa: D102
        return super().schedules() + [self.noise_std]

    def training_output(self, x: Tensor, step: int) -> Tensor:
        """F (S, B) with the step's pre-activation noise xi ~ N(0, sigma_xi(t)^2)."""
        noise, smoothing_std = self.step_noise(x, step)
        return self.net(x, noise, smoothing_std)

    def step_noise(self, x: Tensor, step: int) -> tuple[Tensor | None, float]:
        """The pre-activation noise of ``step`` for inputs x (S, B, d).

        Returns:
            ``(xi, 0)`` with xi (S, B, p) drawn from member s's noise stream of the step
            (``noise_mode: sample``), ``(None, sigma_xi)`` for ``noise_mode: expectation``,
            or ``(None, 0)`` when sigma_xi(t) = 0.
        """
        std = self.noise_std(step)
        if std <= 0:
            return None, 0.0
        if self.noise_mode == "expectation":
            return None, std
        shape = (x.shape[1], self.net.width)  # (B, p) per member
        noise = torch.stack(
            [
                torch.randn(
                    shape,
                    generator=self._generators.get(x.device, self.seed + s, NOISE, step),
                    device=x.device,
                    dtype=x.dtype,
                )
                for s in range(self.ensemble_size)
            ]
        )  # (S, B, p)
        return noise * std, 0.0

    def first_layer_features(self) -> Tensor | None:
        """The learned feature directions w (S, p, d) that alignment metrics compare to the truth."""
        return self.net.w.detach()

    def scores(self, x: Tensor) -> Tensor:  # noqa: D102
        return self.net(x)

    def forward(self, x: Tensor) -> Tensor:
        """F (S, B) for x (S, B, d) or (B, d)."""
        return self.net(x)
