"""The base class of featlearn's data models: a distribution we can sample from."""

from __future__ import annotations

import abc
import hashlib
import inspect
from collections.abc import Iterator

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor

from featlearn.batches import SetRows, TrainBatch, take_rows
from featlearn.contracts import GroundTruth, Placement
from featlearn.sampling import distinct_indices
from featlearn.schedules import ScheduleSpec, as_schedule
from featlearn.seeding import PROBE_SET, TEST_SET, TRAIN_BATCH, TRAIN_SET, VAL_SET, GeneratorPool
from featlearn.steps import StepChunk, StepPlan
from featlearn.validation import check_int


class DataModel(pl.LightningDataModule, abc.ABC):
    """The base of featlearn's data models: per-step training batches for an ensemble.

    Two kinds build on it: :class:`SyntheticDataModule` (a distribution to draw from,
    online or as a finite sample) and :class:`~featlearn.datamodules.ImageDataModule`
    (a finite set of real images read from files). This base holds what they share:

    * **Per-step batches** of ``batch_size(t)`` samples, a positive integer or a per-step
      schedule; batch ``t`` is a pure function of ``t`` (seeded from ``(seed + member,
      stream, step)``, :mod:`featlearn.seeding`), so resuming and Lightning's prefetch
      change nothing.
    * **Finite sets**: step ``t`` of member s uses a uniformly random subset of
      ``batch_size(t)`` distinct training rows, drawn from member s's own stream, or the
      whole set when ``batch_size(t) >= n``; the batch says which rows it holds
      (:class:`~featlearn.batches.TrainBatch`).
    * **Ensembles**: batches have shape ``x: (S, B, d)``, ``y: (S, B)`` with S =
      ``ensemble_size`` (the command line sets it from ``model.init_args.ensemble_size``).
    * **On-device data**: sets and batches live on the training device; no DataLoader
      workers, no host-to-device copy on the hot path.
    * Several updates per Lightning batch (``updates_per_batch: K``, a
      :class:`~featlearn.steps.StepChunk` planned by :class:`~featlearn.steps.StepPlan`).

    A subclass implements :attr:`input_dim`, :meth:`train_set` and :meth:`eval_set`.

    Args:
        batch_size: Samples per update step: a positive integer or a per-step
            schedule of integers (see :mod:`featlearn.schedules`).
        seed: Seed of the sample streams; fixed while the training seed varies.
        eval_batch_size: Largest chunk evaluated at once on validation/test sets.
        ensemble_size: S, the number of independent streams (one per ensemble member).
        updates_per_batch: K, the most update steps one Lightning batch carries (a
            throughput setting that changes no result).
    """

    #: Dtype of the inputs.
    dtype: torch.dtype = torch.float32
    #: Constructor arguments that may change when a run resumes: they change no sample a
    #: step draws before the resume (throughput settings, the ensemble size the learner
    #: checks itself, and the batch-size schedule of the steps ahead). Every other argument
    #: is the data model's identity (:meth:`identity`): a checkpoint made with another value
    #: is refused. A subclass adds its own (where its files are, for example).
    resume_free_arguments: tuple[str, ...] = ("batch_size", "eval_batch_size", "ensemble_size", "updates_per_batch")
    #: Where the run trains (device, rank, processes, max_steps), handed over by
    #: :class:`~featlearn.wiring.DataWiring` before any set is drawn; CPU, one process, by default.
    placement: Placement = Placement()

    def __init__(
        self,
        batch_size: ScheduleSpec = 256,
        seed: int = 0,
        eval_batch_size: int = 65536,
        ensemble_size: int = 1,
        updates_per_batch: int = 1,
    ) -> None:
        super().__init__()
        # Before anything else: the arguments of every __init__ on the way here are the identity.
        self._constructor_arguments = _constructor_arguments(self, inspect.currentframe())
        self.batch_size = as_schedule(batch_size, "data.batch_size", integer=True, positive=True)
        check_int("data.eval_batch_size", eval_batch_size, 1)
        check_int("data.seed", seed, 0)
        self.ensemble_size = check_int("data.ensemble_size", ensemble_size, 1)
        self.updates_per_batch = check_int("data.updates_per_batch", updates_per_batch, 1)
        self.seed = seed
        self.eval_batch_size = eval_batch_size
        self._generators = GeneratorPool()
        self._device_views: dict[str, tuple[Tensor, ...]] = {}

    # ------------------------------------------------------------------ subclass API
    @property
    @abc.abstractmethod
    def input_dim(self) -> int:
        """The input dimension d."""

    @abc.abstractmethod
    def train_set(self) -> tuple[Tensor, Tensor]:
        """The finite training set on the training device: x (S, n, d), y (S, n).

        The same tensor objects on every call while the set and the device are
        unchanged (learners may key caches on them).

        Raises:
            RuntimeError: Where there is no finite training set (online sampling).
        """

    @abc.abstractmethod
    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The validation (``"val"``) or test (``"test"``) set: x (S, n, d), y (S, n)."""

    def ground_truth(self) -> GroundTruth:
        """The feature directions the labels depend on, for diagnostics: a :class:`~featlearn.contracts.GroundTruth`.

        Set the fields the distribution has; :class:`~featlearn.contracts.GroundTruth` lists
        every field, its shape and the observers that read it (``mu_1``/``mu_2`` for
        ``XORPhaseDiagnostics``; ``feature``, ``centres`` or ``class_means`` for
        ``FeatureAlignment``). The default sets none: observers that need one say so at fit start.
        """
        return GroundTruth()

    def epochs_at(self, step: int) -> float | None:
        """Passes over the finite training set after ``step`` updates: sum_t min(B(t), n) / n; None online."""
        n = self.set_size("train")
        if not n:
            return None
        return sum(min(self.batch_size(t), n) for t in range(1, step + 1)) / n

    def set_size(self, split: str) -> int | None:
        """The number of rows of ``train``, ``val`` or ``test`` (None: online sampling has no training set).

        The default reads the sets' shapes; a data model that knows its sizes without
        building the sets overrides it.

        Raises:
            ValueError: ``split`` is none of the three.
        """
        if split == "train":
            try:
                return int(self.train_set()[1].shape[-1])
            except RuntimeError:  # online sampling
                return None
        if split not in ("val", "test"):
            raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}.")
        return int(self.eval_set(split)[1].shape[-1])

    def process_constants(self) -> dict[str, float]:
        """Constants of a paper's training process that follow from this data.

        For example Shi et al.'s sigma_w = 1/k (see :meth:`SparseCoding.process_constants`).
        The command line fills a learner's unset (null) constants from these. Default: none.
        """
        return {}

    def structure_free_overrides(self) -> dict:
        """``init_args`` that turn this data model into its variant *without input structure*.

        Shi et al. (2022) compare every method on data whose labels are unchanged but
        whose inputs lose the structure the theory relies on (their Theorem 4). A
        data model with such a variant overrides this; ``featlearn compare`` uses it
        for the "w/o structure" columns.

        Raises:
            NotImplementedError: This data model has no structure-free variant.
        """
        raise NotImplementedError(f"{type(self).__name__} has no variant without input structure.")

    # ------------------------------------------------------------------ properties
    def place(self, placement: Placement) -> None:
        """Receive where the run trains (:class:`~featlearn.contracts.PlacedData`), before any set is drawn."""
        self.placement = placement

    @property
    def device(self) -> torch.device:
        """The training device (:attr:`placement`'s; the CPU until a run places this data model)."""
        return self.placement.device

    def stream_generator(
        self, member: int, stream: int, step: int, device: torch.device | None = None
    ) -> torch.Generator:
        """The generator of ``member``'s ``stream`` at ``step`` on ``device`` (default: the training device).

        Seeded from ``(seed + member, stream, step)`` (:mod:`featlearn.seeding`): every draw a
        data model makes comes from one of these, so member s sees the data of a single run
        with seed ``seed + s``, whatever the ensemble size, and a resumed run the same draws.
        """
        return self._generators.get(self.device if device is None else device, self.seed + member, stream, step)

    def shared_views(self, key: str, *tensors: Tensor, build=None) -> tuple[Tensor, ...]:
        """One copy of each tensor (n, ...) on the training device, seen by all S members as (S, n, ...).

        The members' views have stride 0 along S: a real dataset is stored once however
        large the ensemble. Cached under ``key`` while the device and the ensemble size
        stay the same (the same tensor objects on every call, as :meth:`train_set`
        promises). With ``build`` (a callable returning the (S, n, ...) tensors), its
        result is cached instead, for sets that differ between members.
        """
        device, members = self.device, self.ensemble_size
        cached = self._device_views.get(key)
        if cached is None or cached[0].device != device or cached[0].shape[0] != members:
            if build is not None:
                cached = tuple(t.to(device) for t in build())
            else:
                cached = tuple(t.to(device).unsqueeze(0).expand(members, *t.shape) for t in tensors)
            self._device_views[key] = cached
        return cached

    def forget_device_views(self) -> None:
        """Drop the cached device views (after the underlying sets changed)."""
        self._device_views.clear()

    # ------------------------------------------------------------------ finite sets
    def train_batch(self, step: int) -> TrainBatch:
        """The training batch of update step ``step`` (>= 1): x (S, B, d), y (S, B), and its rows."""
        x_all, y_all = self.train_set()  # (S, n, d), (S, n)
        idx = self.train_batch_indices(step)  # (S, B) or None
        if idx is None:
            return TrainBatch((x_all, y_all), SetRows(x_all, None))
        return TrainBatch((take_rows(x_all, idx), take_rows(y_all, idx)), SetRows(x_all, idx))

    def train_batch_indices(self, step: int) -> Tensor | None:
        """The training-set indices (S, B) of step ``step``'s batch.

        Member s's batch is a uniformly random subset of B distinct indices, drawn from
        its own stream (:func:`featlearn.sampling.distinct_indices`, O(B log B) per draw).
        ``None`` when the batch is the whole training set (``batch_size(step) >= n``).

        Raises:
            RuntimeError: Where there is no finite training set (online sampling).
        """
        n, size, device = self.train_set()[1].shape[1], self.batch_size(step), self.device
        if size >= n:
            return None
        return torch.stack(
            [
                distinct_indices(n, size, self.stream_generator(s, TRAIN_BATCH, step, device), device)
                for s in range(self.ensemble_size)
            ]
        )  # (S, B)

    def probe_set(self, n: int) -> tuple[Tensor, Tensor]:
        """A fixed sample to fit a classifier on frozen features: x (S, n', d), y (S, n').

        The training set (``n`` is then ignored); data models without one override this.
        """
        return self.train_set()

    # ------------------------------------------------------------------ several processes
    @property
    def process_grid(self) -> tuple[int, int]:
        """(this process's rank r, the number of processes W), from :attr:`placement`: (0, 1) until placed."""
        return self.placement.rank, self.placement.world_size

    def rank_part(self, batch: TrainBatch) -> TrainBatch:
        """Process r's part of a step's batch: columns [r B/W, (r+1) B/W) of every member's batch.

        Every process draws the same full batch (it is a pure function of the step), so
        W processes, each averaging the loss over its B/W samples and averaging their
        gradients (DDP), take exactly the SGD step of one process on the full batch.
        """
        rank, world = self.process_grid
        return batch if world == 1 else batch.part(rank, world)

    # ------------------------------------------------------------------ Lightning hooks
    def train_dataloader(self) -> _StepStream:
        """An endless stream of per-step batches, starting after the updates done when it starts (:attr:`placement`)."""
        max_steps = self.placement.max_steps
        if max_steps is not None:
            self.batch_size.check_covers(max_steps)
        self.warn_of_whole_set_batches(max_steps)
        return _StepStream(self)

    def warn_of_whole_set_batches(self, max_steps: int | None) -> None:
        """Say, once, at which steps ``batch_size`` asks for more rows than the training set has.

        Such a step uses the whole training set (a full-batch gradient, as Shi et al.'s
        steps 1-2 do on purpose), which is not what a batch size larger than the data set
        says; the warning names the steps and both sizes.
        """
        n = self.set_size("train")
        if not n:
            return
        over = [
            seg
            for seg in self.batch_size.segments
            if max(v for v in (seg.value, seg.end_value) if v is not None) > n
            and (max_steps is None or max_steps <= 0 or seg.start <= max_steps)
        ]
        for seg in over:
            steps = f"{seg.start}.." + (str(seg.end) if seg.end is not None else "")
            rank_zero_warn(
                f"data.batch_size is {int(seg.value)} at steps {steps}, more than the {n} training samples: those "
                f"steps use the whole training set (a full-batch gradient). Set data.batch_size <= {n} to sample "
                f"minibatches of the set."
            )

    def val_dataloader(self) -> _Chunks:
        """The validation set in chunks of at most ``eval_batch_size``."""
        return self._chunks(*self.eval_set("val"))

    def test_dataloader(self) -> _Chunks:
        """The test set in chunks of at most ``eval_batch_size``."""
        return self._chunks(*self.eval_set("test"))

    def _chunks(self, x: Tensor, y: Tensor) -> _Chunks:
        """Chunks of at most ``eval_batch_size``; with W processes, process r evaluates part r of each."""
        size = self.eval_batch_size
        rank, world = self.process_grid
        chunks = []
        for i in range(0, x.shape[1], size):
            xs, ys = x[:, i : i + size], y[:, i : i + size]
            if world > 1:  # near-equal parts (sizes differ by at most one sample); Lightning's sync averages them
                xs, ys = torch.tensor_split(xs, world, dim=1)[rank], torch.tensor_split(ys, world, dim=1)[rank]
            chunks.append((xs, ys))
        return _Chunks(chunks)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):  # noqa: D102
        # Batches are born on the device; skip Lightning's recursive move.
        return batch

    def identity(self) -> dict:
        """The constructor's arguments that define the data and its sample stream, as plain values.

        Every argument of the data model's ``__init__`` and its bases' (their defaults
        filled in), less :attr:`resume_free_arguments`. Derived from the constructor, so a
        subclass's own arguments count without being declared. Tensors count by their
        contents (a digest), paths and tuples as strings and lists.
        """
        arguments = self._constructor_arguments or {}
        return {k: plain_value(v) for k, v in sorted(arguments.items()) if k not in self.resume_free_arguments}

    def state_dict(self) -> dict:
        """What the checkpoint keeps of the data model: its :meth:`identity`."""
        return {"identity": self.identity()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Refuse to resume a run whose data model was built with other arguments.

        Raises:
            ValueError: An argument of :meth:`identity` differs from the checkpoint's; the
                message lists every one, with the checkpoint's value to set.
        """
        saved = state_dict.get("identity", state_dict)  # checkpoints before 0.2 kept some keys at top level
        mine = self.identity()
        changed = [key for key in sorted(saved) if key in mine and saved[key] != mine[key]]
        if changed:
            settings = "; ".join(f"data.{k}={saved[k]!r} there, {mine[k]!r} here" for k in changed)
            fixes = ", ".join(f"data.init_args.{k}: {saved[k]!r}" for k in changed)
            raise ValueError(
                f"The checkpoint's data model ({type(self).__name__}) was built with other arguments: {settings}. "
                f"Resuming would change the data. To resume it, set {fixes}; or start a new run without --ckpt_path."
            )


class SyntheticDataModule(DataModel):
    """A data model given by a distribution ``P`` over labelled inputs ``(x, y)``.

    A subclass states the distribution: it implements :meth:`sample`, which draws
    ``n`` i.i.d. pairs ``x in R^d``, ``y in {-1, +1}``, and the property
    :attr:`input_dim` (= d); it may override :meth:`ground_truth` to expose the
    feature directions that diagnostics compare the network against. The base does
    the rest (see :class:`DataModel` for what every data model shares):

    * **Online mode** (``train_size=None``, the setting of Glasgow 2023): update step
      ``t`` trains on a fresh batch of ``batch_size(t)`` i.i.d. samples.
    * **Finite-sample mode** (``train_size=n``): a training set of ``n`` samples is
      drawn once per member; step ``t`` uses a uniformly random subset of
      ``batch_size(t)`` distinct training samples, or the whole set when
      ``batch_size(t) >= n`` (the "approximate full gradient" of Shi et al. 2022).
    * Validation and test sets drawn once, from their own streams.
    * Reproducibility: every draw is seeded from ``(seed + member, stream, step)``, so
      ensemble member ``s`` sees exactly the data of a single run with ``seed + s``.

    Args:
        batch_size: Samples per update step (integer or per-step schedule).
        train_size: ``None`` for online SGD, else the size of the finite training set.
        val_size: Size of the validation set.
        test_size: Size of the held-out test set (population estimates).
        seed: Seed of the sample streams; fixed while the training seed varies.
        eval_batch_size: Largest chunk evaluated at once on validation/test sets.
        ensemble_size: S, the number of independent streams (one per ensemble member).
        updates_per_batch: K, the most update steps one Lightning batch carries.
    """

    #: ``val_size`` and ``test_size`` too: the held-out sets come from streams of their own.
    resume_free_arguments = DataModel.resume_free_arguments + ("val_size", "test_size")

    def __init__(
        self,
        batch_size: ScheduleSpec = 256,
        train_size: int | None = None,
        val_size: int = 4096,
        test_size: int = 16384,
        seed: int = 0,
        eval_batch_size: int = 65536,
        ensemble_size: int = 1,
        updates_per_batch: int = 1,
    ) -> None:
        super().__init__(
            batch_size=batch_size,
            seed=seed,
            eval_batch_size=eval_batch_size,
            ensemble_size=ensemble_size,
            updates_per_batch=updates_per_batch,
        )
        if train_size is not None:
            check_int("data.train_size", train_size, 1, hint=" (use null for online sampling)")
        for name, value, minimum in (("val_size", val_size, 0), ("test_size", test_size, 0)):
            check_int(f"data.{name}", value, minimum)
        self.train_size = train_size
        self.val_size = val_size
        self.test_size = test_size
        self._train_sets: tuple[Tensor, Tensor] | None = None  # (S, n, d), (S, n)
        self._eval_sets: dict[str, tuple[Tensor, Tensor]] = {}

    # ------------------------------------------------------------------ subclass API
    @abc.abstractmethod
    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw ``n`` i.i.d. labelled samples.

        Args:
            n: Number of samples.
            generator: The only source of randomness to use (on ``device``).
            device: Where to create the tensors.

        Returns:
            ``x`` of shape (n, d) and dtype :attr:`dtype`, and ``y`` of shape (n,) with
            values in {-1, +1} (same dtype).
        """

    # ------------------------------------------------------------------ drawing
    def draw(self, n: int, member: int, stream: int, step: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw ``n`` samples of ``member``'s ``stream`` at ``step`` (reproducible)."""
        gen = self.stream_generator(member, stream, step, device)
        x, y = self.sample(n, gen, device)
        self._check_sample(x, y, n)
        return x, y

    def _check_sample(self, x: Tensor, y: Tensor, n: int) -> None:
        d = self.input_dim
        if x.shape != (n, d) or y.shape != (n,):
            raise ValueError(
                f"{type(self).__name__}.sample(n={n}) must return x of shape ({n}, {d}) and y of "
                f"shape ({n},), got {tuple(x.shape)} and {tuple(y.shape)}."
            )

    def _draw_members(self, n: int, stream: int, step: int, device: torch.device) -> tuple[Tensor, Tensor]:
        pairs = [self.draw(n, s, stream, step, device) for s in range(self.ensemble_size)]
        if len(pairs) == 1:
            x, y = pairs[0]
            return x.unsqueeze(0), y.unsqueeze(0)
        return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])

    def train_batch(self, step: int) -> TrainBatch:
        """The training batch of update step ``step`` (>= 1): x (S, B, d), y (S, B).

        In finite-sample mode the batch also says which training-set rows it holds
        (:attr:`TrainBatch.rows <featlearn.batches.TrainBatch>`).
        """
        if self.train_size is None:
            return TrainBatch(self._draw_members(self.batch_size(step), TRAIN_BATCH, step, self.device))
        return super().train_batch(step)

    def train_batch_indices(self, step: int) -> Tensor | None:  # noqa: D102
        if self.train_size is None:
            raise RuntimeError("data.train_size is null (online sampling): batches have no training-set indices.")
        return super().train_batch_indices(step)

    def train_set(self) -> tuple[Tensor, Tensor]:
        """The finite training set, drawn once: x (S, n, d), y (S, n)."""
        if self.train_size is None:
            raise RuntimeError("data.train_size is null (online sampling): there is no training set.")
        device, members = self.device, self.ensemble_size
        cached = self._train_sets
        if cached is None or cached[0].device != device or cached[0].shape[0] != members:
            self._train_sets = self._draw_members(self.train_size, TRAIN_SET, 0, device)
        return self._train_sets

    def set_size(self, split: str) -> int | None:
        """``train_size`` (None online), ``val_size`` or ``test_size``, without drawing the sets."""
        sizes = {"train": self.train_size, "val": self.val_size, "test": self.test_size}
        if split not in sizes:
            raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}.")
        return sizes[split]

    def probe_set(self, n: int) -> tuple[Tensor, Tensor]:
        """A fixed sample to fit a classifier on frozen features: x (S, n', d), y (S, n').

        The training set in finite-sample mode (``n`` is then ignored); in online mode
        ``n`` samples drawn once from their own stream (they are fresh draws from the
        same distribution as the training batches).
        """
        if self.train_size is not None:
            return self.train_set()
        return self._draw_members(n, PROBE_SET, 0, self.device)

    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The validation (``"val"``) or test (``"test"``) set: x (S, n, d), y (S, n)."""
        stream, n = {"val": (VAL_SET, self.val_size), "test": (TEST_SET, self.test_size)}[split]
        device, members = self.device, self.ensemble_size
        cached = self._eval_sets.get(split)
        if cached is None or cached[0].device != device or cached[0].shape[0] != members:
            cached = self._draw_members(n, stream, 0, device)
            self._eval_sets[split] = cached
        return cached


class HiddenVariableDataModule(SyntheticDataModule):
    """A distribution whose inputs are drawn from hidden variables h: x = F(h, noise), y = g(h).

    A subclass implements :meth:`sample_with_hidden`, which also returns the hidden vectors
    (the dictionary's patterns phi~ of :class:`~featlearn.datamodules.DictionaryDataModule`,
    the cluster signs eps of :class:`~featlearn.datamodules.GaussianMixture`): tests and
    diagnostics check the law on them. :meth:`sample` is the same draw without them.
    """

    @abc.abstractmethod
    def sample_with_hidden(
        self, n: int, generator: torch.Generator, device: torch.device
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Draw n samples and the hidden vectors that generated them.

        Args:
            n: Number of samples.
            generator: The only source of randomness (on ``device``).
            device: Where to create the tensors.

        Returns:
            ``x`` (n, d), ``y`` (n,) in {-1, +1} and the hidden vectors h (n, ...), all of
            dtype :attr:`dtype`.
        """

    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw n samples: :meth:`sample_with_hidden` without the hidden vectors."""
        x, y, _ = self.sample_with_hidden(n, generator, device)
        return x, y


def _constructor_arguments(instance: DataModel, frame) -> dict:
    """The arguments every ``__init__`` of ``instance`` was called with, read from their frames.

    ``frame`` is :class:`DataModel`'s own ``__init__``; the frames above it that are
    ``__init__`` calls on the same object are its subclasses' (as Lightning's
    ``save_hyperparameters`` reads them). Arguments a subclass passes on through
    ``**kwargs`` arrive as the base's parameters, with the base's defaults where unset;
    its own keyword arguments are spread out.
    """
    values: dict = {}
    while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is instance:
        info = inspect.getargvalues(frame)
        for name in info.args[1:]:  # [0] is self
            values.setdefault(name, info.locals[name])
        if info.keywords:
            for name, value in info.locals[info.keywords].items():
                values.setdefault(name, value)
        frame = frame.f_back
    return values


def plain_value(value):
    """A value a checkpoint keeps and compares: tuples as lists, tensors by a digest of their contents."""
    if isinstance(value, tuple | list):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, Tensor):
        digest = hashlib.sha256(value.detach().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]
        return f"tensor{list(value.shape)}:{digest}"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class _StepStream:
    """Yields the batch of each update step, from the run's update count when the stream starts on.

    With ``updates_per_batch`` > 1, consecutive steps' batches come together as a
    :class:`StepChunk` whose length the :class:`StepPlan` gives.

    Lightning may fetch a batch ahead; since the batch of step ``t`` depends only on
    ``t``, prefetching and resuming do not change what each step trains on.
    """

    def __init__(self, datamodule: DataModel) -> None:
        self.datamodule = datamodule

    def __iter__(self) -> Iterator[TrainBatch | StepChunk]:
        data = self.datamodule
        placement = data.placement
        step = placement.updates_done()  # read now: after a resume has restored the run's step
        plan = placement.plan
        if plan is None:  # a stream no fit placed (iterated by hand): one update per batch
            max_steps = placement.max_steps
            plan = StepPlan(data.updates_per_batch, max_steps if max_steps is not None and max_steps > 0 else None)
        # Lightning fetches one batch ahead: stop at max_steps rather than draw past a schedule's end.
        while plan.max_steps is None or step < plan.max_steps:
            size = plan.chunk_length(step + 1)
            if size == 1:
                yield data.rank_part(data.train_batch(step + 1))
            else:
                yield StepChunk(data.rank_part(data.train_batch(s)) for s in range(step + 1, step + size + 1))
            step += size


class _Chunks:
    """One evaluation loader: a fixed sequence of (x, y) chunks.

    A bare list would read to Lightning as several loaders.
    """

    def __init__(self, chunks: list[tuple[Tensor, Tensor]]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        return iter(self.chunks)

    def __len__(self) -> int:
        return len(self.chunks)
