"""The two-layer network learner of Glasgow (2023) and Shi, Wei, Liang (2022)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from typing import ClassVar

import torch
from torch import Tensor, nn

from featlearn.batches import SetRows, take_rows
from featlearn.models.base import ScheduledSGDModule
from featlearn.models.networks import (
    Initialization,
    Training,
    TwoLayerArchitecture,
    TwoLayerNetwork,
    as_dataclass,
    repeat_streams,
)
from featlearn.schedules import PointSchedules, Schedule, ScheduleSpec, as_schedule, combine_points, point_values
from featlearn.seeding import NOISE, GeneratorPool
from featlearn.validation import check_bool, check_choice, check_int, check_number


def grid_points(member_values: Mapping[str, list] | None, allowed: tuple[str, ...]) -> list[dict]:
    """The G grid points of ``member_values`` (``{argument: [v_1, ..., v_G]}``): [{argument: v_g}]; [{}] for None.

    Raises:
        ValueError: An argument not in ``allowed``, a value that is not a non-empty list, or
            lists of different lengths.
    """
    if member_values is None:
        return [{}]
    if not isinstance(member_values, Mapping) or not member_values:
        raise ValueError(
            f"model.member_values must map arguments to lists of per-point values, e.g. {{lr_a: [1.0, 10.0]}}, "
            f"got {member_values!r}."
        )
    unknown = sorted(set(member_values) - set(allowed))
    if unknown:
        raise ValueError(f"model.member_values cannot set {unknown} per grid point; it takes {list(allowed)}.")
    lengths = {}
    for name, values in member_values.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"model.member_values.{name} must be a non-empty list of values, got {values!r}.")
        lengths[name] = len(values)
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"model.member_values lists must all have one value per grid point (the same length), got lengths "
            f"{lengths}."
        )
    size = next(iter(lengths.values()))
    return [{name: values[g] for name, values in member_values.items()} for g in range(size)]


def _schedules(training: Training) -> dict:
    """The rate and decay schedules of each group (``lr_w``, ..., ``weight_decay_a``) and ``noise_std``.

    An unset rate follows ``lr`` (``lr_b`` follows ``lr_w``); a rate that nothing sets is None,
    an error only where its group is trained.
    """
    lr = training.lr

    def rate(spec, name: str) -> Schedule | None:
        spec = lr if spec is None else spec
        return None if spec is None else as_schedule(spec, f"model.training.{name if spec is not lr else 'lr'}")

    schedules = {"lr_w": rate(training.lr_w, "lr_w"), "lr_a": rate(training.lr_a, "lr_a")}
    lr_b = training.lr_b
    schedules["lr_b"] = schedules["lr_w"] if lr_b is None else as_schedule(lr_b, "model.training.lr_b")
    for name in ("weight_decay_w", "weight_decay_b", "weight_decay_a", "noise_std"):
        schedules[name] = as_schedule(getattr(training, name), f"model.training.{name}")
    return schedules


def member_architecture(network, input_dim: int | None) -> tuple[int, TwoLayerArchitecture]:
    """(d, architecture) of the network a two-layer learner is handed.

    ``network`` is the network of one member, a :class:`TwoLayerNetwork` (what the command
    line builds from ``network: {width: ..., ...}``, with d linked from the data model), or a
    :class:`TwoLayerArchitecture` or mapping of its fields with d given as ``input_dim``.

    Raises:
        ValueError: d is missing or disagrees with the network's, or ``network`` is missing.
    """
    if network is None:
        raise ValueError("model.network is missing: give the network, e.g. network: {width: 512}.")
    if isinstance(network, TwoLayerNetwork):
        if network.ensemble_size != 1:
            raise ValueError(
                f"model.network.ensemble_size is {network.ensemble_size}: the network is one member's; set the "
                f"number of members as model.ensemble_size."
            )
        if input_dim is not None and input_dim != network.input_dim:
            raise ValueError(
                f"model.input_dim = {input_dim} but the network's input_dim is {network.input_dim}: give d once "
                f"(the command line links it from the data model)."
            )
        return network.input_dim, network.architecture
    check_int("model.input_dim", input_dim, 1)
    return input_dim, as_dataclass(network, TwoLayerArchitecture, "model.network")


#: ``training``'s default: every rate unset (``lr`` must be given), no decay, no noise. An instance, not
#: None, so that a config lists the group's fields (and a flat ``lr_w`` is pointed to ``training.lr_w``).
DEFAULT_TRAINING = Training()


class TwoLayerNet(ScheduledSGDModule):
    r"""Trains the two-layer network f(x) = c sum_j a_j sigma(w_j . x + b_j) by scheduled SGD.

    A config reads as "this network, initialised so, trained this way": ``network`` (the
    network of one member, a :class:`~featlearn.models.networks.TwoLayerNetwork`: width,
    activation, bias, output scale, with d linked from the data model), ``init``
    (:class:`~featlearn.models.networks.Initialization`) and ``training``
    (:class:`~featlearn.models.networks.Training`: the rates, decays and noise, each a
    per-step schedule), with the settings below.
    As every featlearn learner that trains a network (:class:`~featlearn.models.ModuleClassifier`
    too), it is handed the network of one member and trains S independently initialised
    members of it.

    With ``network: {width: p}``, ``training: {lr: eta}`` and every other argument at its default this
    is exactly the model and update of Glasgow (2023), Section 2.2: ReLU, no bias,
    c = 1/p, ``sphere`` initialisation, the logistic loss l = 2 log(1 + e^{-y f}),
    both layers trained, and the mean-field gradient convention
    :math:`\nabla_u L := p\, \partial L / \partial u`, i.e. for a neuron (w, a_w)

    .. math::

        \nabla_w \hat L = \frac{1}{m} \sum_i a_w \ell'(x_i) \sigma'(w^\top x_i) x_i, \qquad
        \nabla_{a_w} \hat L = \frac{1}{m} \sum_i \ell'(x_i) \sigma(w^\top x_i).

    Shi et al.'s training process (Section 3.1) uses ``network: {activation:
    truncated_relu, bias: true, output_scale: standard}``, ``init: {scheme:
    gaussian_symmetric}``, ``loss: hinge``, ``mean_field_gradient: false`` and per-step
    schedules.

    Every hyperparameter marked *schedule* (and every field of ``training``) is a number or
    a per-step schedule (see :mod:`featlearn.schedules`); the values in effect are logged
    under ``sched/``.

    Args:
        input_dim: d, where ``network`` is not a :class:`TwoLayerNetwork` (the command line
            links d from the data model into the network).
        network: The network of one member: a :class:`TwoLayerNetwork` (its architecture and
            d are used; its weights are drawn anew per member from ``init``), or a
            :class:`TwoLayerArchitecture` or mapping of its fields.
        init: The initialisation (an :class:`Initialization` or a mapping of its fields).
        training: The rates, decays and pre-activation noise (a :class:`Training` or a
            mapping of its fields): ``lr`` (both layers), ``lr_w``, ``lr_b``, ``lr_a``,
            ``weight_decay_w``, ``weight_decay_b``, ``weight_decay_a``, ``noise_std``.
        noise_mode: ``sample`` (draw xi) or ``expectation`` (replace sigma by its
            closed-form smoothing E_xi sigma(z + xi): the noisy loss's deterministic
            counterpart, with no sampling variance).
        loss: ``logistic`` or ``hinge``.
        train_first_layer: Train w (and b); false freezes them.
        train_second_layer: Train a; false freezes it.
        mean_field_gradient: Scale every gradient by p (Glasgow's convention, footnote 4).
        ensemble_size: S independent networks trained in one batched step; member s
            is initialised from ``seed + s`` and sees data stream ``data.seed + s``.
        seed: Initialisation and noise seed; default: the global seed
            (``seed_everything``).
        max_members_logged: Per-member curves are logged when S is at most this.
        preactivation_cache_mb: The most memory (MiB) the frozen first layer's
            pre-activations of a finite training set, and of the held-out sets it is
            evaluated on, may take together (see :meth:`frozen_preactivations` and
            :meth:`frozen_set_preactivations`); 0 turns the caches off. A speed setting
            that changes results only by round-off.
        class_weighting: *schedule*, omega(t) in [0, 1]: the class-weighted loss of Shi et
            al.'s Appendix F.1.1 (eq. 295) where 1, the plain loss where 0 (the default);
            see :class:`~featlearn.models.base.ScheduledSGDModule`.
        positive_rate: Pr[y = +1] for the class weights; null: from the data model.
        momentum: *schedule*, SGD momentum mu(t) in [0, 1) (E.4's 0.95); default 0,
            plain SGD. With momentum, a group at rate 0 still gets its gradient (its
            buffer moves), so nothing is skipped or cached.
        member_values: A grid trained as one ensemble: ``{field: [v_1, ..., v_G]}`` for
            any field of ``training`` (:attr:`MEMBER_VALUE_ARGUMENTS`; each value a number or
            a segment list; every list of the same length G). Point g is the run with those
            fields set to their g-th values; it trains on all
            ``ensemble_size`` = K seeds, so the learner holds S = G K members, member
            g K + j being point g on seed j (initialised from ``seed + j``, on data stream
            j, with noise stream ``seed + j``). Each member equals the run of its point and
            seed alone, bit for bit on the CPU. A member that diverges is recorded
            (``updates.diverged_members``) while the others train on. Needs plain SGD (no momentum)
            and ``noise_mode: sample``.
        update_rule: ``sgd`` (the default) or ``sign``: sign SGD, each coordinate of the
            gradient replaced by its sign (Kou et al. 2024), theta <- theta - c eta sign(g);
            plain steps only (momentum 0). See :class:`~featlearn.models.base.ScheduledSGDModule`.
    """

    #: The fields of ``training`` that ``member_values`` may give per grid point: all of them.
    MEMBER_VALUE_ARGUMENTS: ClassVar[tuple[str, ...]] = tuple(f.name for f in fields(Training))
    #: Where they sit under ``model.init_args`` (:class:`~featlearn.contracts.PerMemberValues`).
    MEMBER_VALUE_GROUP: ClassVar[str] = "training"

    def __init__(
        self,
        input_dim: int | None = None,
        network: TwoLayerNetwork | None = None,
        init: Initialization | None = None,
        training: Training | None = DEFAULT_TRAINING,
        noise_mode: str = "sample",
        loss: str = "logistic",
        train_first_layer: bool = True,
        train_second_layer: bool = True,
        mean_field_gradient: bool = True,
        ensemble_size: int = 1,
        seed: int | None = None,
        max_members_logged: int = 8,
        preactivation_cache_mb: float = 2048.0,
        momentum: ScheduleSpec = 0.0,
        class_weighting: ScheduleSpec = 0.0,
        positive_rate: float | None = None,
        member_values: Mapping[str, list] | None = None,
        update_rule: str = "sgd",
    ) -> None:
        points = grid_points(member_values, self.MEMBER_VALUE_ARGUMENTS)
        super().__init__(
            loss=loss,
            ensemble_size=ensemble_size,
            max_members_logged=max_members_logged,
            momentum=momentum,
            class_weighting=class_weighting,
            positive_rate=positive_rate,
            grid_points=len(points),
            update_rule=update_rule,
        )
        self.save_hyperparameters()
        input_dim, network = member_architecture(network, input_dim)
        init = Initialization() if init is None else as_dataclass(init, Initialization, "model.init")
        training = Training() if training is None else as_dataclass(training, Training, "model.training")
        # Plain mappings in the checkpoint: it must load with torch's weights-only unpickler.
        self.hparams.update(input_dim=input_dim, network=asdict(network), init=asdict(init), training=asdict(training))
        for name, value in (
            ("train_first_layer", train_first_layer),
            ("train_second_layer", train_second_layer),
            ("mean_field_gradient", mean_field_gradient),
        ):
            check_bool(f"model.{name}", value)
        if not (train_first_layer or train_second_layer):
            raise ValueError(
                "model.train_first_layer and model.train_second_layer are both false: nothing would train."
            )
        self.seed = int(torch.initial_seed()) % (2**62) if seed is None else check_int("model.seed", seed, 0)
        self._generators = GeneratorPool()

        # The members: S networks of the given architecture, member g K + j initialised from (seed + j, INIT).
        #: Each member's seed offset j: its initialisation and noise streams are those of seed + j.
        self.member_offsets = [m % ensemble_size for m in range(self.ensemble_size)]
        base = TwoLayerNetwork(
            input_dim, network.width, self.ensemble_size, network.activation, network.bias, network.output_scale
        )
        base.initialize_(init, self.seed, self.member_offsets)
        self.net = self.wrap_network(base)
        # Glasgow's footnote 4: nabla_u L := p dL/du, so every step is scaled by p.
        self.gradient_scale = float(network.width) if mean_field_gradient else 1.0

        # Each point's schedules, built as a run with its values would build them; then combined per group.
        per_point = [_schedules(replace(training, **point)) for point in points]
        parameters = {"w": base.w, "b": base.b, "a": base.a}
        trained = {"w": train_first_layer, "b": train_first_layer and network.bias, "a": train_second_layer}
        groups = {}
        for name, param in parameters.items():
            if param is None:
                continue
            if not trained[name]:
                param.requires_grad_(False)
                continue
            rates = [schedules[f"lr_{name}"] for schedules in per_point]
            if None in rates:  # lr_b follows lr_w: a missing one is lr_w's
                missing = "lr_a" if name == "a" else "lr_w"
                raise ValueError(
                    f"model.training.{missing} is missing: set model.training.lr (both layers) or "
                    f"model.training.{missing}."
                )
            groups[name] = (
                [param],
                combine_points(rates, f"model.training.lr_{name}"),
                combine_points(
                    [schedules[f"weight_decay_{name}"] for schedules in per_point],
                    f"model.training.weight_decay_{name}",
                ),
            )
        self.sgd.set_groups(groups)
        self.noise_std = combine_points([schedules["noise_std"] for schedules in per_point], "model.training.noise_std")
        self.noise_mode = check_choice("model.noise_mode", noise_mode, ("sample", "expectation"))
        if isinstance(self.noise_std, PointSchedules) and noise_mode != "sample":
            raise ValueError(
                "model.member_values gives training.noise_std per grid point, which needs model.noise_mode: sample "
                "(the expectation smooths every member alike)."
            )
        self.preactivation_cache_mb = check_number("model.preactivation_cache_mb", preactivation_cache_mb, 0.0)
        self._z_cache: _PreactivationCache | None = None
        #: Held-out sets' pre-activations while the first layer is frozen: see :meth:`frozen_set_preactivations`.
        self._set_z_caches: list[_PreactivationCache] = []

    #: The arguments that move the first layer (w, b), dotted under ``init_args``, with what an unset
    #: one follows: compare's ``freeze_first_layer_from`` holds them at 0
    #: (:class:`~featlearn.contracts.FirstLayerArguments`).
    first_layer_arguments: ClassVar[dict[str, str | None]] = {
        "training.lr_w": "training.lr",
        "training.lr_b": "training.lr_w",
        "training.weight_decay_w": None,
        "training.weight_decay_b": None,
    }

    @classmethod
    def unset_data_constants(cls, init_args: Mapping) -> dict[str, str]:
        """Also Shi et al.'s sigma_w, sigma_b, sigma_a (``gaussian_symmetric``) and null ``training.noise_std``."""
        wanted = super().unset_data_constants(init_args)
        init = init_args.get("init") or {}
        if init.get("scheme") == "gaussian_symmetric":  # the scheme these constants belong to
            unset = [name for name in ("sigma_w", "sigma_b", "sigma_a") if init.get(name) is None]
            wanted.update({f"init.{name}": name for name in unset})
        noise = (init_args.get("training") or {}).get("noise_std")
        if isinstance(noise, list):
            for i, segment in enumerate(noise):
                if isinstance(segment, Mapping) and "value" in segment and segment["value"] is None:
                    wanted[f"training.noise_std.{i}.value"] = "sigma_xi"
        return wanted

    def wrap_network(self, base: TwoLayerNetwork) -> nn.Module:
        """The network this learner trains, built around the initialised two-layer ``base`` (itself here)."""
        return base

    @property
    def two_layer(self) -> TwoLayerNetwork:
        """The two-layer network whose parameters are trained."""
        return self.net

    @property
    def width(self) -> int:
        """p, the number of hidden neurons."""
        return self.two_layer.width

    def named_schedules(self) -> dict:  # noqa: D102
        return {**super().named_schedules(), "noise_std": self.noise_std}

    def training_output(self, x: Tensor, step: int, rows: SetRows | None = None) -> Tensor:
        """F (S, B) with the step's pre-activation noise xi ~ N(0, sigma_xi(t)^2).

        While the first layer is frozen and the batch is rows of a fixed training set,
        the pre-activations come from :meth:`frozen_preactivations` instead of a
        product with x.
        """
        noise, smoothing_std = self.step_noise(x, step)
        z = self.frozen_preactivations(rows, step)  # (S, B, p) or None
        if z is None:
            return self.net(x, noise, smoothing_std)
        return self.two_layer.readout(z, noise, smoothing_std)

    def frozen_preactivations(self, rows: SetRows | None, step: int) -> Tensor | None:
        r"""The pre-activations z = W x + b (S, B, p) of the batch's rows, looked up in a cache; or None.

        While W and b do not change, z of a training sample does not either. So from
        the first step at which the first layer is frozen (both its rates 0, or
        ``train_first_layer: false``) and the batch is rows of a fixed set, Z = W X + b
        is computed once for the whole set X (S, n, d) and each step looks its rows
        up: the step's matrix product with x, two thirds of the classifier stage's
        arithmetic in Shi et al.'s process, is gone. Z is bit-for-bit what a product on
        the batch gives up to the summation order of the matrix product (round-off).

        The cache is rebuilt whenever W, b or the set differ from those it was built
        from (compared exactly at every step) and dropped when the first layer trains
        again. It is built only when it pays: when the frozen stretch ahead (from the
        rate schedules and ``trainer.max_steps``) draws at least n rows in total, and
        when Z fits in ``preactivation_cache_mb``.

        Returns:
            None where the product with x must be computed: no ``rows``, a first layer
            that trains at this step, a linearised network, or a cache that does not pay.
        """
        net = self.two_layer
        frozen = not (net.w.requires_grad or (net.b is not None and net.b.requires_grad))
        if rows is None or self.net is not net or not frozen:
            self._z_cache = None
            return None
        cache = self._z_cache
        if cache is None or not cache.matches(rows.inputs, net):
            self._z_cache = cache = None
            if not self._cache_pays(rows, step, _PreactivationCache.size_bytes(rows.inputs, net, self.grid_points)):
                return None
            cache = self._z_cache = _PreactivationCache(rows.inputs, net, self.grid_points)
        return cache.lookup(rows.index)

    def first_layer_frozen_through(self, step: int) -> float:
        """The last step through which w and b stay as they are after ``step`` (``step`` if they train at step + 1)."""
        rates = [lr for name, (_, lr, _) in self.sgd.groups.items() if name in ("w", "b")]
        return min((lr.zero_through(step + 1) for lr in rates), default=math.inf)

    def frozen_set_preactivations(self, x: Tensor) -> Tensor | None:
        r"""Z = W x + b (S, n, p) of a whole fixed set x (K, n, d) while W and b stay frozen; or None.

        An evaluation of a held-out set every few steps through the classifier stage
        (``HeldOutAccuracy``'s test curve) recomputes the product W x although W has not
        moved since the last one. So when the first layer stays frozen at the next step
        too, Z of the set is computed once and kept, and each evaluation reads it out:
        the training set's from the training cache (:meth:`frozen_preactivations`), any
        other set's from its own, within ``preactivation_cache_mb`` for all of them
        together. A kept Z is used only while W and b equal, exactly, those it was
        computed from; it is dropped when they move.

        Returns:
            None where the product must be computed: a linearised network, a first layer
            that trains at the next step, the last step, or no memory left.
        """
        net = self.two_layer
        if self.net is not net or self.preactivation_cache_mb <= 0:
            return None
        if self._z_cache is not None and self._z_cache.matches(x, net):
            return self._z_cache.lookup(None)
        self._set_z_caches = [cache for cache in self._set_z_caches if cache.matches(cache.inputs, net)]
        for cache in self._set_z_caches:
            if cache.inputs is x:
                return cache.lookup(None)
        step = self.global_step
        if self.first_layer_frozen_through(step) <= step or step >= self._max_steps():
            return None  # W moves before the next evaluation, or there is none
        if not self._cache_fits(_PreactivationCache.size_bytes(x, net, self.grid_points)):
            return None
        cache = _PreactivationCache(x, net, self.grid_points)
        self._set_z_caches.append(cache)
        return cache.lookup(None)

    def set_scorer(self, x: Tensor):  # noqa: D102
        z = self.frozen_set_preactivations(x)  # (S, n, p) or None
        return None if z is None else (lambda rows: self.two_layer.readout(z[:, rows]))  # (S, B)

    def held_cache_bytes(self) -> int:
        """The bytes every cache this learner keeps of a set takes now (training and held-out sets)."""
        caches = [*self._set_z_caches, *([] if self._z_cache is None else [self._z_cache])]
        return sum(cache.z.numel() * cache.z.element_size() for cache in caches)

    def _cache_fits(self, size_bytes: int) -> bool:
        """Whether one more cache of ``size_bytes`` keeps all of them within ``preactivation_cache_mb``."""
        return size_bytes + self.held_cache_bytes() <= self.preactivation_cache_mb * 2**20

    def _max_steps(self) -> float:
        """``trainer.max_steps``; infinite without a trainer or a step limit."""
        try:
            max_steps = self.trainer.max_steps
        except RuntimeError:  # no trainer attached
            return math.inf
        return math.inf if max_steps is None or max_steps < 0 else max_steps

    def check_batch(self, x: Tensor) -> None:
        """Also refuse inputs that are not vectors of this network's d (e.g. images left unflattened)."""
        super().check_batch(x)
        if x.dim() != 3 or x.shape[-1] != self.two_layer.input_dim:
            raise ValueError(
                f"The two-layer network takes inputs x of shape (S, B, d) with d = model.input_dim = "
                f"{self.two_layer.input_dim}, but the data model gives {tuple(x.shape)}: flatten images "
                f"(data.flatten: true) and let the command line set model.input_dim from the data."
            )

    def on_train_end(self) -> None:  # noqa: D102
        self._z_cache = None  # frees the sets' pre-activations
        self._set_z_caches = []
        super().on_train_end()

    def _cache_pays(self, rows: SetRows, step: int, size_bytes: int, valid_through: float | None = None) -> bool:
        """Whether a cache of ``size_bytes`` fits beside those held and the stretch ahead draws >= n rows of the set.

        The memory budget is ``preactivation_cache_mb`` for all caches together. The stretch
        ends at ``valid_through`` (default: the last step the first layer stays frozen) or
        ``trainer.max_steps``, whichever comes first.
        """
        n = rows.inputs.shape[1]
        if not self._cache_fits(size_bytes):
            return False
        if valid_through is None:
            valid_through = self.first_layer_frozen_through(step - 1)
        frozen_through = min(valid_through, self._max_steps())
        batch = n if rows.index is None else rows.index.shape[1]
        return (frozen_through - step + 1) * batch >= n

    def step_noise(self, x: Tensor, step: int) -> tuple[Tensor | None, float]:
        """The pre-activation noise of ``step`` for inputs x (S, B, d).

        Returns:
            ``(xi, 0)`` with xi (S, B, p) drawn from member s's noise stream of the step
            (``noise_mode: sample``), ``(None, sigma_xi)`` for ``noise_mode: expectation``,
            or ``(None, 0)`` when sigma_xi(t) = 0.
        """
        std = self.noise_std(step)
        if max(std) <= 0 if isinstance(std, tuple) else std <= 0:
            return None, 0.0
        if self.noise_mode == "expectation":
            return None, std
        shape = (x.shape[1], self.width)  # (B, p) per member
        noise = torch.stack(
            [
                torch.randn(
                    shape,
                    generator=self._generators.get(x.device, self.seed + offset, NOISE, step),
                    device=x.device,
                    dtype=x.dtype,
                )
                for offset in self.member_offsets
            ]
        )  # (S, B, p)
        if isinstance(std, tuple):  # each member's point's sigma_xi, (S, 1, 1)
            column = point_values(std, self.ensemble_size)
            return noise * torch.tensor(column, dtype=x.dtype, device=x.device).view(-1, 1, 1), 0.0
        return noise * std, 0.0

    def first_layer_features(self) -> Tensor:
        """The learned feature directions w (S, p, d) that alignment metrics compare to the truth."""
        return self.two_layer.w.detach()

    def output_weights(self) -> Tensor:
        """The second-layer weights a (S, p)."""
        return self.two_layer.a.detach()

    @torch.no_grad()
    def hidden_units(self, x: Tensor) -> Tensor:
        """The hidden activations sigma(w_j . x + b_j) (S, B, p), without the training noise xi."""
        return self.two_layer.hidden(x)

    def first_layer_gradient(self, x: Tensor, y: Tensor, chunk: int = 65536) -> Tensor:
        r"""The gradient of each member's mean data loss on a set with respect to its neurons: (S, p, d).

        :math:`\nabla_{w} \frac1n \sum_i \ell(y_i f_s(x_i))` for x (S, n, d) (or shared (n, d)) and
        y (S, n), in ``chunk`` samples at a time; the objective's decay and the training noise
        are left out (the population gradient of the loss, estimated on the set). Observers use
        it for the gradient's structure (Barak et al.'s Fourier gap), never to update.
        """
        w = self.two_layer.w
        frozen = not w.requires_grad  # a frozen first layer (or one idle this step) still has a gradient
        grad = torch.zeros_like(w)
        n = x.shape[-2]
        try:
            w.requires_grad_(True)
            with torch.enable_grad():
                for i in range(0, n, chunk):
                    xs = x[..., i : i + chunk, :].to(w.device)
                    ys = y[..., i : i + chunk].to(w.device)
                    f = self.two_layer(xs)  # (S, B), the network itself (no noise, no linearisation)
                    total = self.margin_loss(ys * f).sum()  # summed over members: their gradients stay apart
                    (part,) = torch.autograd.grad(total, w)
                    grad += part
        finally:
            w.requires_grad_(not frozen)
        return grad.detach() / n

    def scores(self, x: Tensor) -> Tensor:  # noqa: D102
        return self.net(x)

    def forward(self, x: Tensor) -> Tensor:
        """F (S, B) for x (S, B, d) or (B, d)."""
        return self.scores(x)


class _PreactivationCache:
    """Z = W X + b (S, n, p) of a fixed set X (K, n, d), with the W and b it was computed from.

    With G > 1 grid points whose first layers are all equal (each point's block of K
    members holds the same W and b, as a frozen first layer does: every point starts from
    the same K networks), Z is computed and kept for one block only, (K, n, p), and repeated
    on lookup.
    """

    def __init__(self, inputs: Tensor, net: TwoLayerNetwork, points: int = 1) -> None:
        self.inputs = inputs
        self.points = points
        streams = inputs.shape[0]
        with torch.no_grad():
            self.w = net.w.detach().clone()
            self.b = None if net.b is None else net.b.detach().clone()
            self.shared = self.points_share(net, streams, points)
            if self.shared:
                self.z = net.preactivation(inputs, slice(0, streams))  # (K, n, p)
            else:
                self.z = net.preactivation(net.per_member(inputs))  # (S, n, p)

    @staticmethod
    def points_share(net: TwoLayerNetwork, streams: int, points: int) -> bool:
        """Whether ``points`` > 1 grid points' blocks of ``streams`` members hold equal W and b."""
        blocks = [slice(g * streams, (g + 1) * streams) for g in range(points)]
        return points > 1 and all(
            torch.equal(net.w[block], net.w[blocks[0]])
            and (net.b is None or torch.equal(net.b[block], net.b[blocks[0]]))
            for block in blocks
        )

    @staticmethod
    def size_bytes(inputs: Tensor, net: TwoLayerNetwork, points: int) -> int:
        """The bytes Z of ``inputs`` (K, n, d) will take: K n p floats when the points share W and b, else S n p."""
        streams, n, _ = inputs.shape
        rows = streams if _PreactivationCache.points_share(net, streams, points) else streams * points
        return rows * n * net.width * inputs.element_size()

    def matches(self, inputs: Tensor, net: TwoLayerNetwork) -> bool:
        """Same set object, and W and b exactly as they were."""
        return inputs is self.inputs and torch.equal(net.w, self.w) and (net.b is None or torch.equal(net.b, self.b))

    def lookup(self, index: Tensor | None) -> Tensor:
        """Rows ``index`` (K, B) of Z: (S, B, p); all of Z for None."""
        if self.shared:
            rows = self.z if index is None else take_rows(self.z, index)  # (K, B, p)
            return repeat_streams(rows, rows.shape[0] * self.points)
        if index is not None and index.shape[0] != self.z.shape[0]:
            index = repeat_streams(index, self.z.shape[0])
        return self.z if index is None else take_rows(self.z, index)
