r"""What one part of featlearn may ask of another, declared in one place.

featlearn has three kinds of parts that a config builds and that never import each
other (``lint-imports`` checks it): **data models** (:mod:`featlearn.datamodules`),
**learners** (:mod:`featlearn.models`) and **observers** (:mod:`featlearn.callbacks`).
They meet only through what this module declares:

* :class:`GroundTruth`, the one type a data model's ``ground_truth()`` returns: every
  field an observer may read, with its shape and who reads it.
* Capabilities as :class:`typing.Protocol`\ s. A part that needs more than the basics
  (a data model that can be relabelled, one that has parts, a learner that predicts
  classes) checks its partner once, when the run connects them, with :func:`require`:
  the error names the missing methods and the class that lacks them.
* :class:`DataConsumer`, the one hook through which learners and observers receive the
  run's data model (:class:`featlearn.wiring.DataWiring` calls it at the start of every
  ``fit``, ``validate`` and ``test``): nothing reads ``trainer.datamodule`` itself.
* :class:`DataDerivedConstants` and :class:`FirstLayerArguments`, what a learner class
  says about its own arguments, so commands need not know any learner's argument names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import torch
from torch import Tensor

if TYPE_CHECKING:
    from featlearn.steps import StepPlan

#: Ground-truth fields that need another: a field -> the one that must accompany it.
_REQUIRED_WITH = {
    "mu_1": "mu_2",
    "mu_2": "mu_1",
    "relevant": "dictionary",
    "centres": "centre_labels",
    "centre_labels": "centres",
    "class_means": "class_mean_labels",
    "class_mean_labels": "class_means",
}


@dataclass(frozen=True)
class GroundTruth:
    r"""The feature directions a data model's labels depend on: what diagnostics compare neurons with.

    Every field is optional; a data model fills those its distribution has, and an observer
    reads the ones it needs (it names the fields it lacks when it starts). Shapes use d for
    the input dimension.

    Attributes:
        mu_1: (d,) XOR's first signal direction, Glasgow (2023), the cluster labelled +1: with
            y = -x_i x_j, mu_1 = e_i - e_j and mu_2 = e_i + e_j; every input is one of
            +-mu_1, +-mu_2 on the signal plane. Read by ``XORPhaseDiagnostics`` (w_sig, w_opp, w_perp,
            the four clusters' margins gamma_mu).
        mu_2: (d,) XOR's second signal direction (with ``mu_1``).
        feature: (d,) the effective label feature, Shi et al.'s sum_{j in A} M_j. Read by
            ``FeatureAlignment`` (``align/max_cos``: the paper's Cos Similarity, and the
            MDS pictures' stars +-feature) and ``featlearn compare``'s Cos Similarity row.
        dictionary: (d, D) the dictionary M whose columns are the patterns.
        relevant: (k,) integer indices A of the class-relevant columns of ``dictionary``
            (which it needs). With both, ``FeatureAlignment`` logs ``align/snr_*``.
        centres: (C, d) cluster centres of a mixture (with ``centre_labels``). Read by
            ``FeatureAlignment`` (``align/centre_coverage``, Figure 16's stars) and
            ``featlearn compare`` (centres found).
        centre_labels: (C,) the label +-1 of each centre.
        class_means: (C, d) the class means of real data, which has no ground truth (with
            ``class_mean_labels``). Read by ``FeatureAlignment`` (``align/class_mean_*``,
            Figure 17's stars).
        class_mean_labels: (C,) the label +-1 of each class mean.
        support: (k, d) the directions whose coordinates' product is a sparse parity's label
            (Barak et al. 2022): e_i for i in the hidden set S, turned with the data's basis.
    """

    mu_1: Tensor | None = None
    mu_2: Tensor | None = None
    feature: Tensor | None = None
    dictionary: Tensor | None = None
    relevant: Tensor | None = None
    centres: Tensor | None = None
    centre_labels: Tensor | None = None
    class_means: Tensor | None = None
    class_mean_labels: Tensor | None = None
    support: Tensor | None = None

    def __post_init__(self) -> None:
        for name in self.present():
            if not torch.is_tensor(getattr(self, name)):
                raise TypeError(f"GroundTruth.{name} must be a tensor, got {type(getattr(self, name)).__name__}.")
        for given, needed in _REQUIRED_WITH.items():
            if getattr(self, given) is not None and getattr(self, needed) is None:
                raise ValueError(f"GroundTruth.{given} needs GroundTruth.{needed} too: set both.")
        dims = {name: getattr(self, name).shape[-1] for name in self.directions() if getattr(self, name) is not None}
        if len(set(dims.values())) > 1:
            raise ValueError(f"GroundTruth's directions must share the input dimension d, got {dims}.")
        for rows, labels in (("centres", "centre_labels"), ("class_means", "class_mean_labels")):
            if getattr(self, rows) is not None and getattr(self, labels).shape != getattr(self, rows).shape[:1]:
                raise ValueError(f"GroundTruth.{labels} must have one label per row of GroundTruth.{rows}.")

    @staticmethod
    def directions() -> tuple[str, ...]:
        """The fields that hold vectors in input space (shape (..., d))."""
        return ("mu_1", "mu_2", "feature", "centres", "class_means", "support")

    def present(self) -> list[str]:
        """The names of the fields this ground truth sets."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> GroundTruth:
        """A copy on ``device`` with floating fields in ``dtype`` (the indices in ``relevant`` stay integers)."""
        moved = {}
        for name in self.present():
            value = getattr(self, name)
            moved[name] = value.to(device, dtype) if value.is_floating_point() else value.to(device)
        return GroundTruth(**moved)

    def require(self, names: tuple[str, ...], who: str, source: str, any_of: bool = False) -> None:
        """Raise unless the fields ``names`` are set (all of them, or at least one with ``any_of``).

        Args:
            names: The fields the reader needs.
            who: The reader, for the message (``FeatureAlignment``).
            source: The data model's class name, for the message.
            any_of: One of ``names`` suffices.

        Raises:
            ValueError: The fields are missing; the message names them and what the data model gives.
        """
        present = self.present()
        ok = any(n in present for n in names) if any_of else all(n in present for n in names)
        if not ok:
            wanted = " or ".join(names) if any_of else " and ".join(names)
            raise ValueError(
                f"{who} reads GroundTruth.{wanted} from the data model, but {source}.ground_truth() sets "
                f"{', '.join(present) or 'no field'}. Return a featlearn.contracts.GroundTruth with "
                f"{wanted} from {source}.ground_truth(), or remove {who} from the run's callbacks."
            )


# ---------------------------------------------------------------------------- capabilities
def protocol_members(protocol: type) -> list[str]:
    """The public methods and attributes a protocol declares, in declaration order."""
    names = [n for n in vars(protocol) if not n.startswith("_")]
    names += [n for n in getattr(protocol, "__annotations__", {}) if not n.startswith("_") and n not in names]
    return names


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (looked up on its class first: no property runs)."""
    return [n for n in protocol_members(protocol) if not (hasattr(type(obj), n) or hasattr(obj, n))]


def require(obj: object, protocol: type, who: str, role: str = "data model") -> None:
    """Check that ``obj`` offers every member of ``protocol``, once, before it is used.

    Args:
        obj: The partner (a data model or a learner); None counts as lacking everything.
        protocol: The capability (a Protocol of this module).
        who: The part that needs it, for the message (``PartAccuracy``).
        role: What ``obj`` is, for the message (``data model`` or ``learner``).

    Raises:
        TypeError: ``obj`` lacks members; the message names them, the class and the protocol.
    """
    if obj is None:
        raise TypeError(
            f"{who} needs a {role}, and this run has none: give the trainer a featlearn {role} "
            f"(the command line's `{'data' if role == 'data model' else 'model'}:` section)."
        )
    missing = missing_members(obj, protocol)
    if missing:
        wanted = ", ".join(protocol_members(protocol))
        raise TypeError(
            f"{who} needs a {role} that is a featlearn.contracts.{protocol.__name__} ({wanted}); "
            f"{type(obj).__name__} lacks {', '.join(missing)}. {protocol.__doc__.splitlines()[0]}"
        )


@runtime_checkable
class DataConsumer(Protocol):
    """A learner or observer that reads the run's data model: it is handed it before each fit, validate or test."""

    def connect_data(self, data: Any) -> None:
        """Receive the run's data model (None where the run has none); check what it needs of it."""


def _no_update_yet() -> int:
    return 0


@dataclass(frozen=True)
class Placement:
    """Where a run trains, as its data model is told it (a data model never reads the trainer).

    Attributes:
        device: The training device, where sets and batches are drawn.
        rank: This process's rank r, in [0, W).
        world_size: W, the number of processes; process r trains on part r of each batch.
        max_steps: The run's last update step, as the trainer states it (None or -1: unbounded).
        updates_done: The run's update counter. The training stream starts after the count
            it reads when it starts: after a checkpoint is restored, so a resumed run goes on
            from its step. The run's clock, not the trainer.
        plan: How many updates each Lightning batch carries (:class:`~featlearn.steps.StepPlan`),
            for a fit; None: one per batch.
    """

    device: torch.device = torch.device("cpu")
    rank: int = 0
    world_size: int = 1
    max_steps: int | None = None
    updates_done: Callable[[], int] = _no_update_yet
    plan: StepPlan | None = None


@runtime_checkable
class PlacedData(Protocol):
    """A data model told where its run trains (:class:`~featlearn.wiring.DataWiring` places it).

    Until it is placed it draws on the CPU, as one process, from step 0.
    """

    updates_per_batch: int

    def place(self, placement: Placement) -> None:
        """Receive the device, rank, clock and step plan of a fit, validate or test, before any set is drawn."""


@runtime_checkable
class EvaluationData(Protocol):
    """Every featlearn data model (``DataModel``): sets to evaluate on and their sizes."""

    ensemble_size: int
    eval_batch_size: int

    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The validation or test set: x (S, n, ...), y (S, n)."""

    def train_set(self) -> tuple[Tensor, Tensor]:
        """The finite training set: x (S, n, ...), y (S, n)."""

    def set_size(self, split: str) -> int | None:
        """Rows of ``train``, ``val`` or ``test`` (None: the training set of online sampling)."""

    def epochs_at(self, step: int) -> float | None:
        """Passes over the finite training set after ``step`` updates (None online)."""

    def ground_truth(self) -> GroundTruth:
        """The ground-truth feature directions (:class:`GroundTruth`)."""


@runtime_checkable
class CountedData(Protocol):
    """A data model whose labels are a function of a count: Shi et al.'s dictionary data.

    The count of an input is s = sum_{i in A} phi~_i, the class-relevant patterns present
    (Section 3: y = +1 iff s is in P); an observer groups the held-out inputs by it.
    """

    def count_sets(self, split: str) -> tuple[Tensor, int]:
        """The count of every row of ``eval_set(split)``: (K, n) long in 0..k (one row per data stream), and k."""


@runtime_checkable
class ProbeData(Protocol):
    """A data model that offers a fixed sample to fit a classifier on frozen features."""

    def probe_set(self, n: int) -> tuple[Tensor, Tensor]:
        """X (S, n', d), y (S, n')."""


@runtime_checkable
class ClassData(Protocol):
    """A data model whose labels are class indices 0..C-1."""

    num_classes: int


@runtime_checkable
class Relabelable(Protocol):
    """A data model whose labels a teacher gives (Shi et al.'s Algorithm 1): ``TeacherMixture``."""

    is_labelled: bool
    num_classes: int

    def relabel(self, labeller: Any, chunk: int = 4096) -> None:
        """Label every input by ``labeller(x)``, the teacher's predicted class indices."""

    def teacher_data(self) -> dict[str, Tensor]:
        """The real part L's sets the teacher is trained and chosen on."""

    def teacher_data_key(self) -> dict:
        """What identifies :meth:`teacher_data` (the teachers' cache key)."""

    def labelled_data_key(self) -> dict:
        """What identifies the inputs the teacher labels."""

    def label_counts(self) -> dict[str, Tensor]:
        """Per split, how many inputs each class got."""

    def labelled_part(self, split: str, part: str) -> tuple[Tensor, Tensor]:
        """One part's inputs and teacher labels of ``split``."""


@runtime_checkable
class PartedData(Protocol):
    """A mixture whose inputs come from parts: ``TeacherMixture`` (original and injected)."""

    num_classes: int

    def part_sets(self, split: str) -> dict[str, tuple[Tensor, Tensor]]:
        """``{"original": (x, y), "injected": (x, y)}`` of ``split``."""

    def member_groups(self) -> dict[str, list[int]]:
        """``{"mixture": [...], "reference": [...]}``: which members train on what."""


@runtime_checkable
class ClassPredictor(Protocol):
    """A learner with C class scores: ``MulticlassClassifier``."""

    def predict_classes(self, x: Tensor) -> Tensor:
        """The predicted class of every member: x (S, B, ...) -> (S, B)."""


@runtime_checkable
class UpdateLog(Protocol):
    """What a learner keeps of its updates (``UpdateRecord``), for observers and the studies."""

    #: Per-member training losses (S,) at step 1 and at each logging step, on the CPU: step -> losses.
    logged_member_losses: dict
    #: Members of a grid ensemble that diverged while the others trained on: member -> first bad step.
    diverged_members: dict


@runtime_checkable
class Learner(Protocol):
    """Every featlearn learner (``ScheduledSGDModule``): what observers and commands may read."""

    #: S, the members: the rows of every per-member tensor.
    ensemble_size: int
    #: K, the data streams the learner reads (S = G K with G grid points of ``member_values``; K = S without).
    streams: int
    #: The record of its updates: logged member losses, diverged members.
    updates: UpdateLog

    def scores(self, x: Tensor) -> Tensor:
        """The outputs f (S, B) (or (S, B, C)) at evaluation, for inputs of K streams (K, B, ...) or shared."""

    def evaluate_dataset(self, x: Tensor, y: Tensor, chunk: int = 65536) -> tuple[Tensor, Tensor]:
        """Per-member loss and 0-1 error over a whole set: (S,), (S,)."""

    def first_layer_features(self) -> Tensor | None:
        """The learned neurons w (S, p, d); None without learned neurons (the NTK)."""

    def output_weights(self) -> Tensor | None:
        """The second-layer weights a (S, p) on those neurons; None without them."""

    def scheduled_values(self, step: int) -> dict[str, float]:
        """The hyperparameters in effect at ``step`` by log name (``lr_w``, ``weight_decay_a``, ...)."""


@runtime_checkable
class MarginLearner(Protocol):
    """A binary learner on a margin loss l(y f): its |l'|, for the margins' weights g = |l'(gamma)|."""

    def margin_loss_derivative_abs(self, margin: Tensor) -> Tensor:
        """|l'(margin)|, elementwise."""


@runtime_checkable
class FilterLearner(Protocol):
    """A learner whose network has convolutions (ResNet(m)): its filters by layer."""

    def filter_banks(self, member: int = 0, gradients: bool = False) -> dict[str, Tensor] | None:
        """Layer name -> (filters, fan_in) of one member (or their gradients)."""


@runtime_checkable
class GradientLearner(Protocol):
    """A learner that gives the gradient of its loss with respect to its first-layer neurons (``TwoLayerNet``)."""

    def first_layer_gradient(self, x: Tensor, y: Tensor, chunk: int = 65536) -> Tensor | None:
        """The gradient (S, p, d) of each member's mean data loss on (x, y) in its neurons w; None without neurons."""


@runtime_checkable
class HiddenLearner(Protocol):
    """A learner with one hidden layer whose units an observer may read (``TwoLayerNet``)."""

    def hidden_units(self, x: Tensor) -> Tensor | None:
        """The hidden activations sigma(w_j . x + b_j) (S, B, p) for inputs (K, B, d) or shared (B, d)."""


# ---------------------------------------------------------------------------- learner declarations
@runtime_checkable
class DataDerivedConstants(Protocol):
    """A learner class whose null arguments the command line fills from ``data.process_constants()``.

    Shi et al.'s process states sigma_w = 1/k and the like: constants of the training
    process that follow from the data. The learner says which of its (dotted) arguments
    are such constants in the given config, and under which name the data model states them.
    """

    @classmethod
    def unset_data_constants(cls, init_args: Mapping) -> dict[str, str]:
        """Dotted argument path (``init.sigma_w``, ``training.noise_std.0.value``) -> process-constant name."""


@runtime_checkable
class FirstLayerArguments(Protocol):
    """A learner class that says which of its arguments move its first layer (to freeze it from a step on)."""

    #: Rate and decay arguments of the first layer, dotted under ``init_args`` (``training.lr_w``) -> the
    #: argument an unset one falls back to (None: 0).
    first_layer_arguments: ClassVar[dict[str, str | None]]


@runtime_checkable
class PerMemberValues(Protocol):
    """A learner class that trains a grid side by side: some arguments may take one value per grid point.

    ``model.init_args.member_values: {argument: [v_1, ..., v_G]}`` makes an ensemble of G K
    members, point g on stream j being member g K + j (``featlearn compare``'s grid ensembles).
    """

    #: The arguments that may take a value per grid point (scalar schedules: rates, decays). Where they
    #: sit in a group under ``model.init_args`` (``TwoLayerNet``'s ``training``), the class also says
    #: which as ``MEMBER_VALUE_GROUP: ClassVar[str]``; without it they sit directly under ``init_args``.
    MEMBER_VALUE_ARGUMENTS: ClassVar[tuple[str, ...]]
