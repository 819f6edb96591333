"""Base learner: an ensemble trained by plain SGD with per-step schedules."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from featlearn.batches import SetRows, batch_rows
from featlearn.contracts import EvaluationData, require
from featlearn.models.evaluation import HeldOutLog, MemberEvaluation
from featlearn.models.losses import LOSSES
from featlearn.models.networks import repeat_streams
from featlearn.models.sgd import AnySchedule, ScheduledSGD, named_values
from featlearn.models.updates import UpdateRecord, world_size
from featlearn.schedules import Schedule, ScheduleSpec, as_schedule
from featlearn.steps import StepChunk
from featlearn.validation import check_choice, check_int, check_number
from featlearn.wiring import DataWiring


def constructor_arguments(cls: type) -> set[str] | None:
    """The keyword arguments ``cls(...)`` takes, its bases' through ``**kwargs`` included; None: any keyword."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        parameters = inspect.signature(init).parameters.values()
        names |= {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):  # ScheduledSGDModule's, at the latest
            return names
    return None


def _segment_values(schedule: Schedule) -> list[float]:
    """Every value a schedule's segments state (start and end values): its extremes."""
    return [v for seg in schedule.segments for v in (seg.value, seg.end_value) if v is not None]


class ScheduledSGDModule(pl.LightningModule, abc.ABC):
    r"""Trains S independent models by SGD whose hyperparameters are functions of the step.

    Each member ``s`` minimises its own objective on its own batch,

    .. math::

        L_s = \frac{1}{B} \sum_{i=1}^{B} \ell\big(y_{s i} f_s(x_{s i})\big)
              + \sum_g \lambda_g(t) \lVert \theta_{s,g} \rVert^2 ,

    with the L2 terms written out in the loss (as in Shi et al. 2022, eq. (4); no
    optimizer-side decay), and each parameter group g takes the step

    .. math::  \theta_g \leftarrow \theta_g - c\, \eta_g(t)\, \partial L / \partial \theta_g ,

    where ``c`` is :attr:`gradient_scale` (``p`` under Glasgow's mean-field
    convention). Since the members' objectives are summed, their gradients stay
    independent. The update runs under manual optimization so that the schedules,
    not an optimizer config, define the step.

    **Its parts.** The update rule is a :class:`~featlearn.models.sgd.ScheduledSGD`
    (:attr:`sgd`); what follows each update (the divergence check, the logged losses, the
    train curves) an :class:`~featlearn.models.updates.UpdateRecord` (:attr:`updates`);
    the held-out sums are torchmetrics metrics (:attr:`evaluation`), reduced and written by
    the :class:`~featlearn.models.evaluation.HeldOutLog` callback. This class composes them
    with Lightning's loop and the data model.

    **Writing a learner.** A subclass sets its network ``self.net`` (a plain ``nn.Module``),
    declares its parameter groups and their rate and decay schedules with
    ``self.sgd.set_groups(...)``, and implements :meth:`training_output` and :meth:`scores`.
    It may set :attr:`gradient_scale` and override these documented methods (all public;
    nothing that starts with an underscore): :meth:`training_losses`, :meth:`member_losses`,
    :meth:`extra_objective`, :meth:`check_batch`, :meth:`training_update` (a hand-made
    update then steps through :attr:`sgd` and records through :attr:`updates`),
    :meth:`evaluate_scores`, :meth:`named_schedules`, :meth:`connect_data` and the readers below.

    **The data model.** A learner never reads ``trainer.datamodule``: it is handed the run's
    data model by :meth:`connect_data` (before ``setup``, see :mod:`featlearn.wiring`) and
    keeps it as :attr:`data_model`. It needs the capabilities in :attr:`data_requirements`
    (protocols of :mod:`featlearn.contracts`), checked then.

    **What observers read.** Diagnostics and commands read a learner only through
    :meth:`scores`, :meth:`evaluate_dataset`, :meth:`first_layer_features` and
    :meth:`output_weights` (None where the learner has no such thing, as the NTK has
    no learned neurons), :attr:`ensemble_size`, :attr:`margin_loss_derivative_abs` and
    the record of its updates (:attr:`updates`: the logged member losses, the diverged
    members): never through the network's attributes.

    **Several updates per Lightning batch.** When the data model's stream carries
    several consecutive steps in one batch (a :class:`~featlearn.steps.StepChunk`, see
    ``data.updates_per_batch``), :meth:`training_step` makes one update per element,
    so ``global_step`` still counts updates.

    Args:
        loss: ``logistic`` or ``hinge`` (see :mod:`featlearn.models.losses`).
        ensemble_size: S, the number of independent members.
        max_members_logged: Log per-member curves when S is at most this.
        class_weighting: *schedule*, omega(t) in [0, 1]: each sample's training loss is
            weighted by 1 + omega(t) (alpha_y - 1) with alpha_v = 1 / (2 Pr[y = v]), so
            omega = 1 is Shi et al.'s class-weighted loss for imbalanced classes (Appendix
            F.1.1, eq. 295) and omega = 0 (the default) the plain mean. Binary labels only;
            held-out losses stay unweighted.
        positive_rate: Pr[y = +1] for the class weights, in (0, 1); null: filled by the
            command line from the data model's ``process_constants()`` (needed only where
            omega is not zero).
        grid_points: G, grid points (value sets of per-point hyperparameters, see
            :class:`~featlearn.schedules.PointSchedules`) trained side by side on the same
            ``ensemble_size`` seeds: the learner holds S = G K members (K =
            ``ensemble_size``), member g K + j being point g on seed j, and reads K data
            streams (``data.ensemble_size`` stays K). A member whose loss becomes NaN or
            infinite is recorded in ``updates.diverged_members`` and the others train on (a
            grid's large rates may diverge); with G = 1 divergence stops the run.
        momentum: *schedule*, mu(t) in [0, 1): SGD with momentum, the heavy ball
            b_t = mu(t) b_{t-1} + g_t, theta_t = theta_{t-1} - c eta(t) b_t (no dampening;
            b_t = g_t at steps where mu(t) = 0), set at every step like the rates. The
            buffers live in the optimizer's state, so checkpoints keep them. 0 (the
            default) is plain SGD, bit for bit.
        update_rule: ``sgd`` (the default) steps along the gradient; ``sign`` along the sign
            of each of its coordinates, theta <- theta - c eta(t) sign(g_t) (sign SGD, Kou et
            al. 2024; plain steps only, momentum 0). Every learner takes it.
    """

    #: What the learner needs of its data model (protocols of :mod:`featlearn.contracts`), checked by
    #: :meth:`connect_data`. A subclass that reads more adds its own.
    data_requirements: ClassVar[tuple[type, ...]] = (EvaluationData,)

    @classmethod
    def unset_data_constants(cls, init_args: Mapping) -> dict[str, str]:
        """The null arguments of ``init_args`` that the data model's ``process_constants()`` fills.

        The command line calls it before building the learner (see
        :class:`~featlearn.contracts.DataDerivedConstants`): dotted argument path -> the name
        the data model states the constant under. Here ``positive_rate`` (Pr[y = +1]) where the
        class weights need it. A subclass with constants of its own extends the mapping.
        """
        weighting = init_args.get("class_weighting")
        if weighting not in (None, 0, 0.0) and init_args.get("positive_rate") is None:
            return {"positive_rate": "positive_rate"}
        return {}

    def __init__(
        self,
        loss: str = "logistic",
        ensemble_size: int = 1,
        max_members_logged: int = 8,
        momentum: ScheduleSpec = 0.0,
        class_weighting: ScheduleSpec = 0.0,
        positive_rate: float | None = None,
        grid_points: int = 1,
        update_rule: str = "sgd",
    ) -> None:
        super().__init__()
        check_choice("model.loss", loss, sorted(LOSSES))
        check_int("model.ensemble_size", ensemble_size, 1)
        check_int("model.max_members_logged", max_members_logged, 0)
        check_int("the number of grid points (model.member_values)", grid_points, 1)
        self.automatic_optimization = False
        self.loss_name = loss
        self.margin_loss, self.margin_loss_derivative_abs = LOSSES[loss]
        #: K, the data streams (seeds) the data model draws.
        self.streams = ensemble_size
        #: G, the grid points trained side by side on the K streams.
        self.grid_points = grid_points
        #: S = G K, the members: every per-member tensor has S rows.
        self.ensemble_size = ensemble_size * grid_points
        self.max_members_logged = max_members_logged
        #: The run's data model, handed over by :meth:`connect_data` (None until then).
        self.data_model: Any = None
        self.momentum = as_schedule(momentum, "model.momentum")  # values >= 0 checked there
        if any(v >= 1 for v in _segment_values(self.momentum)):
            raise ValueError(f"model.momentum must lie in [0, 1) at every step, got {momentum!r}.")
        #: The update rule: parameter groups, their schedules, momentum, idle groups (:mod:`~featlearn.models.sgd`).
        self.sgd = ScheduledSGD(self.momentum, update_rule)
        #: The divergence check, the logged member losses and the train curves after each update. Public:
        #: observers read its ``logged_member_losses`` (step -> losses (S,)) and the studies its
        #: ``diverged_members`` (member -> first bad step) (:class:`~featlearn.contracts.UpdateLog`).
        self.updates = UpdateRecord(self.streams, self.grid_points, max_members_logged)
        #: c, the factor multiplying every gradient step (1; ``p`` under the mean-field convention).
        self.gradient_scale = 1.0
        self.class_weighting = as_schedule(class_weighting, "model.class_weighting")
        if any(v > 1 for v in _segment_values(self.class_weighting)):
            raise ValueError(f"model.class_weighting must lie in [0, 1] at every step, got {class_weighting!r}.")
        if positive_rate is not None:
            check_number("model.positive_rate", positive_rate, 0.0, 1.0, strict=True)
            if positive_rate >= 1:
                raise ValueError(f"model.positive_rate must lie in (0, 1), got {positive_rate!r}.")
        self.positive_rate = positive_rate
        #: Per split, the sums over the set's chunks (and processes) of each member's loss and error.
        self.evaluation = nn.ModuleDict({"val": MemberEvaluation(), "test": MemberEvaluation()})

    # ------------------------------------------------------------------ subclass API
    @abc.abstractmethod
    def training_output(self, x: Tensor, step: int, rows: SetRows | None = None) -> Tensor:
        """The outputs f (S, B) used in the training loss at ``step`` (may add noise).

        ``rows`` says which rows of a fixed training set x holds, when it does (the
        batch's :attr:`~featlearn.batches.TrainBatch.rows`); a learner may use it.
        """

    @abc.abstractmethod
    def scores(self, x: Tensor) -> Tensor:
        """The outputs f (S, B) at evaluation (no noise)."""

    def extra_objective(self, batch: tuple[Tensor, Tensor], step: int) -> Tensor | None:
        """A term the update adds to the summed member losses at ``step`` (None: nothing).

        For objectives with more than a data loss and L2 decay, e.g. a regulariser on
        unlabelled inputs the batch carries (:class:`~featlearn.models.MulticlassClassifier`).
        """
        return None

    def first_layer_features(self) -> Tensor | None:
        """The learned first-layer neurons w (S, p, d) that alignment diagnostics read; None if none."""
        return None

    def output_weights(self) -> Tensor | None:
        """The second-layer weights a (S, p) on :meth:`first_layer_features`'s neurons; None if none."""
        return None

    def named_schedules(self) -> dict[str, AnySchedule]:
        """Every schedule by its log name: each group's ``lr_<g>`` and ``weight_decay_<g>``, ``momentum``, ...

        A subclass with schedules of its own adds them. All are checked to cover the run at
        fit start; :meth:`scheduled_values` logs their values.
        """
        named = self.sgd.named_schedules()
        named["class_weighting"] = self.class_weighting
        return named

    def scheduled_values(self, step: int) -> dict[str, float]:
        """The hyperparameters in effect at ``step``, by log name (per grid point, ``name_point<g>``).

        Every schedule of :meth:`named_schedules`, but for one that is zero at every step
        and switches something off by being so (``momentum``, ``class_weighting``, ...):
        the groups' rates and decays and ``noise_std`` are always there.
        """
        values = {}
        for name, schedule in self.named_schedules().items():
            if schedule.is_zero and name in self.QUIET_WHEN_ZERO:
                continue
            values.update(named_values(name, schedule(step)))
        return values

    #: Schedules that :meth:`scheduled_values` leaves out while they are zero at every step; a
    #: subclass adds its own.
    QUIET_WHEN_ZERO: ClassVar[frozenset[str]] = frozenset({"momentum", "class_weighting"})

    # ------------------------------------------------------------------ training
    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Plain SGD, one group per parameter group; rates (and momentum) are set at every step."""
        return self.sgd.optimizer()

    def configure_callbacks(self) -> list:
        """The learner's own callbacks: :class:`~featlearn.wiring.DataWiring` and :class:`HeldOutLog`.

        DataWiring hands the data model to this learner and its observers; HeldOutLog
        reduces and writes the held-out metrics. Each only when the trainer has none
        already (a test after fit, or one the user added).
        """
        present = self.trainer.callbacks
        return [kind() for kind in (DataWiring, HeldOutLog) if not any(isinstance(c, kind) for c in present)]

    def connect_data(self, data: Any) -> None:
        """Receive the run's data model before ``setup``; check it offers :attr:`data_requirements`.

        Also refuses a data model that draws for another ensemble size, before any
        evaluation or update. None (a run given plain dataloaders) is accepted: the batches
        are then checked one by one (:meth:`check_batch`).

        Raises:
            TypeError: The data model lacks a required capability (named in the message).
            ValueError: Its ensemble size differs from ``model.ensemble_size``.
        """
        if data is not None:
            for capability in self.data_requirements:
                require(data, capability, type(self).__name__)
            if data.ensemble_size != self.streams:
                raise ValueError(
                    f"The data model draws {data.ensemble_size} stream(s) (data.ensemble_size) but "
                    f"model.ensemble_size is {self.streams}: give both the same ensemble size (the command "
                    f"line copies model.init_args.ensemble_size into data.init_args.ensemble_size)."
                )
        self.data_model = data

    def on_fit_start(self) -> None:
        """Fail before the first step if a schedule ends before ``trainer.max_steps``."""
        schedules = list(self.named_schedules().values())
        self.updates.start(schedules)
        for schedule in schedules:
            schedule.check_covers(self.trainer.max_steps)
        if not self.class_weighting.is_zero and self.positive_rate is None:
            raise ValueError(
                "model.class_weighting needs Pr[y = +1]: set model.positive_rate, or leave it null with a data "
                "model whose process_constants() state it (SparseCoding, HiddenRepresentation)."
            )

    def member_losses(self, f: Tensor, y: Tensor) -> Tensor:
        """Mean loss of each member: f, y (S, B) -> (S,)."""
        return self.margin_loss(y * f).mean(dim=1)

    def training_losses(self, f: Tensor, y: Tensor, step: int) -> Tensor:
        r"""The members' training losses at ``step``: f, y (S, B) -> (S,).

        :meth:`member_losses`, with each sample weighted by :math:`1 + \omega(t)(\alpha_y - 1)`,
        :math:`\alpha_v = 1 / (2 \Pr[y = v])`, where ``class_weighting`` omega(t) is not zero.
        """
        omega = self.class_weighting(step)
        if omega == 0:
            return self.member_losses(f, y)
        rate = self.positive_rate
        alpha = torch.where(y > 0, 1.0 / (2.0 * rate), 1.0 / (2.0 * (1.0 - rate)))  # (S, B)
        return ((1.0 + omega * (alpha - 1.0)) * self.margin_loss(y * f)).mean(dim=1)

    def training_step(self, batch: tuple[Tensor, Tensor] | StepChunk, batch_idx: int) -> Tensor:
        """The update(s) a Lightning batch carries: one (x, y), or a :class:`StepChunk` of several."""
        if isinstance(batch, StepChunk):
            for update in batch:
                out = self.training_update(update)
            return out
        return self.training_update(batch)

    def training_update(self, batch: tuple[Tensor, Tensor]) -> Tensor:
        """One SGD update of every member on its batch x (S, B, d), y (S, B)."""
        x, y = batch
        step = self.global_step + 1
        self.check_batch(x)
        y = repeat_streams(y, self.ensemble_size)  # (S, B); the network maps x's K streams to its members itself
        idle = self.sgd.idle_parameters(step, world_size(self))
        try:
            for p in idle:
                p.requires_grad_(False)
            rows = batch_rows(batch)
            losses = self.training_losses(self.training_output(x, step, rows), y, step)  # (S,)
            objective = losses.sum()
            extra = self.extra_objective(batch, step)
            if extra is not None:
                objective = objective + extra
            for term in self.sgd.l2_terms(step):
                objective = objective + term
            optimizer = self.optimizers()
            optimizer.zero_grad(set_to_none=True)
            if objective.requires_grad:  # False when every group is idle at this step
                self.manual_backward(objective)
            self.sgd.step(optimizer, step, self.gradient_scale)  # also with nothing to train: it counts the step
        finally:
            for p in idle:
                p.requires_grad_(True)
        self.updates.add(self, losses.detach(), step, batch_size=x.shape[1])
        return objective.detach()

    def check_batch(self, x: Tensor) -> None:
        """Refuse batches drawn for another ensemble size: x is (K', B, d) with K' the data model's."""
        if x.shape[0] != self.streams:
            raise ValueError(
                f"The data model draws {x.shape[0]} stream(s) per batch but model.ensemble_size is "
                f"{self.streams}: give the data model the same ensemble_size (the command line "
                f"copies model.init_args.ensemble_size into data.init_args.ensemble_size)."
            )

    def on_train_end(self) -> None:
        """Raise at the first waiting update whose loss is NaN or infinite (:meth:`UpdateRecord.check`)."""
        self.updates.check(self)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Refuse to checkpoint weights a pending loss shows to have diverged; keep the logged member losses.

        The saved hyperparameters keep only arguments this learner's constructor takes:
        the command line links ``data.input_dim`` into every learner's config, and Lightning
        records the link even for a learner without ``input_dim``; a resume that rebuilt
        the learner from such a checkpoint would fail on the stray argument.
        """
        self.updates.check(self)
        checkpoint["featlearn_logged_member_losses"] = dict(self.updates.logged_member_losses)
        hparams = checkpoint.get("hyper_parameters")
        if isinstance(hparams, dict):
            taken = constructor_arguments(type(self))
            if taken is not None:
                for key in [k for k in hparams if not k.startswith("_") and k not in taken]:
                    del hparams[key]

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Restore the logged member losses, so observers of a resumed run see the whole run's."""
        self.updates.logged_member_losses.update(checkpoint.get("featlearn_logged_member_losses", {}))

    # ------------------------------------------------------------------ evaluation
    def evaluate_scores(self, f: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-member loss and 0-1 error of outputs f (S, B) against labels y (K or S, B): (S,), (S,).

        A zero output counts as an error. The outputs are :meth:`scores`' (for inputs of K
        streams or shared) or a :meth:`set_scorer`'s.
        """
        y = repeat_streams(y, self.ensemble_size)
        return self.member_losses(f, y), (y * f <= 0).to(f.dtype).mean(dim=1)

    def set_scorer(self, x: Tensor) -> Callable[[slice], Tensor] | None:
        """Outputs on a whole fixed set x (S, n, d) from what a learner keeps of it, or None.

        A learner whose outputs on a set depend on the set only through something that
        stays fixed between evaluations (a frozen layer's pre-activations, the NTK's
        tangent features) returns a function from a slice of the set's rows to the
        outputs (S, B) there, equal to :meth:`scores` on those rows up to round-off;
        :meth:`evaluate_dataset` then skips the product with x. The default: None.
        """
        return None

    @torch.no_grad()
    def evaluate_dataset(self, x: Tensor, y: Tensor, chunk: int = 65536) -> tuple[Tensor, Tensor]:
        """:meth:`evaluate_scores` over a whole set x (S, n, d), y (S, n), ``chunk`` samples at a time: (S,), (S,).

        Each chunk moves to the model's device: after ``fit`` Lightning returns the model to
        the CPU while the data model's sets stay on the training device. A set on the
        model's device is scored through :meth:`set_scorer` where the learner has one.
        """
        losses, errors = 0.0, 0.0
        device = self.device
        scorer = self.set_scorer(x) if x.device == device else None
        for i in range(0, x.shape[1], chunk):
            rows = slice(i, i + chunk)
            labels = y[:, rows].to(device)
            scores = self.scores(x[:, rows].to(device)) if scorer is None else scorer(rows)
            loss, error = self.evaluate_scores(scores, labels)
            weight = labels.shape[1]
            losses, errors = losses + loss * weight, errors + error * weight
        return losses / x.shape[1], errors / x.shape[1]

    def validation_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        """Add the batch's per-member loss and error to the validation sums (reduced by :class:`HeldOutLog`)."""
        x, y = batch
        self.evaluation["val"].update(*self.evaluate_scores(self.scores(x), y), x.shape[1])

    def test_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        """Add the batch's per-member loss and error to the test sums (reduced by :class:`HeldOutLog`)."""
        x, y = batch
        self.evaluation["test"].update(*self.evaluate_scores(self.scores(x), y), x.shape[1])
