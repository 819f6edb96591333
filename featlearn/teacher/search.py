r"""Algorithm 1 of Shi et al. (2022, E.5): choose the teacher's size, train it, label a mixture.

The teacher of a :class:`~featlearn.datamodules.TeacherMixture` extends the real data's
labelling function to injected inputs. Its size matters: a teacher far more complex
than the data's labelling gives the injected inputs labels of another complexity. So
Algorithm 1 sweeps the teacher's size m over a grid, trains each on L, records the
test loss against the number of parameters, takes the minimum of the classical
(U-shaped) regime, and trains that teacher on L with the regulariser
R = R1 + lambda R2 on the injected inputs U (eqs. 291-293,
:func:`~featlearn.models.multiclass.balance_entropy_regularizer`).

A config states it in a top-level ``teacher:`` section (a :class:`TeacherSearch`);
``featlearn fit`` then runs it before training the student, and every trained teacher
and sweep point is cached on disk (:class:`TeacherCache`).
"""

from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from featlearn.banners import quiet_lightning
from featlearn.datamodules import LabelledTensors
from featlearn.models import MulticlassClassifier
from featlearn.teacher.cache import TeacherCache, default_cache_dir
from featlearn.teacher.report import publish_teacher
from featlearn.validation import check_int, check_number


def first_local_minimum(losses: Sequence[Sequence[float]], neighbours: int = 1) -> tuple[int, list[float]]:
    r"""The index of the classical regime's minimum of a test-loss curve, and the smoothed curve.

    The rule: average the log test loss over the seeds at each size, then over the
    ``neighbours`` sizes on either side in the grid (a moving average, shorter at the
    ends), and take the first size at which the smoothed curve stops decreasing,
    :math:`\min\{i : \bar\ell_i \le \bar\ell_{i+1}\}`: the bottom of the first U. Where
    the smoothed curve decreases over the whole grid the last size is returned (the
    grid does not reach the U's rising arm; the caller warns).

    Args:
        losses: Test losses, one sequence of seeds' values per size (sizes in increasing order).
        neighbours: Half-width of the moving average over sizes (0: none).

    Returns:
        (index, smoothed log losses).
    """
    logs = [sum(math.log(max(v, 1e-12)) for v in seeds) / len(seeds) for seeds in losses]
    smoothed = []
    for i in range(len(logs)):
        window = logs[max(0, i - neighbours) : i + neighbours + 1]
        smoothed.append(sum(window) / len(window))
    for i in range(len(smoothed) - 1):
        if smoothed[i] <= smoothed[i + 1]:
            return i, smoothed
    return len(smoothed) - 1, smoothed


def network_class(class_path: str) -> type:
    """The class a teacher network's ``class_path`` names (a short name: one of :mod:`featlearn.models`)."""
    module, _, name = class_path.rpartition(".")
    return getattr(importlib.import_module(module or "featlearn.models"), name)


def check_network_spec(network: dict) -> None:
    """The teacher's network spec names only ``class_path`` and ``init_args``, and arguments its class takes.

    The spec is a plain mapping (the search sets ``width`` for each size), so the parser
    cannot check it: without this a misspelt argument was silently ignored.

    Raises:
        ValueError: An unknown key or argument, with the closest valid name.
    """
    try:
        cls = network_class(str(network["class_path"]))
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"teacher.init_args.network.class_path {network['class_path']!r} names no class.") from None
    parameters = inspect.signature(cls).parameters
    taken = [name for name in parameters if name != "width"]

    def fix(name: str) -> str:
        close = difflib.get_close_matches(name, taken, n=1)
        return f"did you mean {close[0]!r}?" if close else f"{cls.__name__} takes {', '.join(taken)}"

    extra = sorted(set(network) - {"class_path", "init_args"})
    if extra:  # where `--teacher.init_args.network.init_args.NAME` lands: this mapping is not parsed further
        raise ValueError(
            f"teacher.init_args.network got {extra[0]!r} beside class_path and init_args: the command line cannot set "
            f"the teacher network's arguments; write them in a config file, under teacher.init_args.network.init_args "
            f"({fix(extra[0]) if extra[0] not in taken else f'{cls.__name__} takes {extra[0]!r}'})"
        )
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return
    for name in network.get("init_args") or {}:
        if name not in parameters:
            raise ValueError(
                f"teacher.init_args.network.init_args.{name}: {cls.__name__} takes no argument {name!r}; {fix(name)}."
            )


def build_network(spec: dict, width: int) -> nn.Module:
    """The network ``{class_path, init_args}`` of ``spec`` with ``width`` set: FC(m) or ResNet(m)."""
    return network_class(spec["class_path"])(**{**dict(spec.get("init_args") or {}), "width": width})


class TeacherSearch:
    r"""Algorithm 1: sweep the teacher's size, pick the U-curve's minimum, train it with R on U.

    For each m in ``sizes``, ``seeds`` teachers FC(m) (or whatever ``network`` is, with its
    ``width`` set to m) train together as one ensemble on L's training rows for ``steps``
    SGD steps of ``batch_size`` (rate ``lr``, ``momentum``) on the cross-entropy; their mean
    test loss on L's test rows is recorded against the number of parameters. The chosen
    m is :func:`first_local_minimum`'s (log loss averaged over seeds, then over
    ``neighbours`` sizes each side; the first size where it stops decreasing), or ``size``
    when given (no sweep). The teacher of size m (seed ``seed``) then trains for
    ``final_steps`` on L with ``regularizer_weight`` times R = R1 + ``entropy_weight`` R2 on
    minibatches of ``unlabelled_batch_size`` of U's training pool, and labels the
    mixture by its arg-max class.

    Outputs, into the run's folder and its TensorBoard: ``teacher_sweep.csv`` (m,
    parameters, each seed's test loss, the smoothed curve, the chosen row),
    ``teacher_sweep.png`` and the image ``teacher/sweep``, the text ``teacher/summary``
    (chosen size, the teacher's test accuracy on L, its label balance on U).

    Args:
        network: The teacher's network as ``{class_path, init_args}`` without ``width``
            (e.g. ``QuadraticFC`` with ``in_features`` and ``num_outputs``).
        sizes: The grid of m (increasing, at least three, unless ``size`` is set).
        size: Use this m and skip the sweep (the user's override).
        seeds: Teachers per size in the sweep (an ensemble; >= 1).
        steps: SGD steps of each sweep point.
        final_steps: SGD steps of the chosen teacher (default: ``steps``).
        batch_size: Labelled inputs per step.
        lr: Learning rate.
        momentum: SGD momentum in [0, 1).
        weight_decay: L2 on every parameter.
        regularizer_weight: rho, the weight of R on U for the chosen teacher (0: none).
        entropy_weight: lambda of R = R1 + lambda R2.
        unlabelled_batch_size: Inputs of U per step in R.
        neighbours: Half-width of the smoothing over sizes.
        seed: The teachers' initialisation and minibatch seed.
        cache_dir: Where trained teachers are kept (default :func:`default_cache_dir`).
        accelerator: Lightning accelerator for the teachers' training.
        updates_per_batch: SGD steps per Lightning batch in the teachers' training (a
            throughput setting that changes no result; see ``DataModel``).
    """

    def __init__(
        self,
        network: dict,
        sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
        size: int | None = None,
        seeds: int = 2,
        steps: int = 2000,
        final_steps: int | None = None,
        batch_size: int = 128,
        lr: float = 0.01,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        regularizer_weight: float = 1.0,
        entropy_weight: float = 1.0,
        unlabelled_batch_size: int = 128,
        neighbours: int = 1,
        seed: int = 0,
        cache_dir: str | None = None,
        accelerator: str = "auto",
        updates_per_batch: int = 16,
    ) -> None:
        if not isinstance(network, dict) or "class_path" not in network:
            raise ValueError(
                "teacher.init_args.network must be {class_path, init_args}, e.g. {class_path: QuadraticFC, "
                f"init_args: {{in_features: 784, num_outputs: 10}}}}; got {network!r}."
            )
        if "width" in (network.get("init_args") or {}):
            raise ValueError("teacher.init_args.network.init_args must not set width: the search sets it (sizes).")
        check_network_spec(network)
        self.network = {"class_path": network["class_path"], "init_args": dict(network.get("init_args") or {})}
        sizes = list(sizes)
        for m in sizes:
            check_int("teacher.init_args.sizes[...]", m, 1)
        if size is None and len(sizes) < 3:
            raise ValueError(
                f"teacher.init_args.sizes has {len(sizes)} size(s): a minimum of the test-loss curve needs at "
                f"least three; give more sizes, or set teacher.init_args.size to skip the sweep."
            )
        if sizes != sorted(set(sizes)):
            raise ValueError(f"teacher.init_args.sizes must increase strictly, got {sizes}.")
        self.sizes = sizes
        self.size = None if size is None else check_int("teacher.init_args.size", size, 1)
        self.seeds = check_int("teacher.init_args.seeds", seeds, 1)
        self.steps = check_int("teacher.init_args.steps", steps, 1)
        self.final_steps = (
            self.steps if final_steps is None else check_int("teacher.init_args.final_steps", final_steps, 1)
        )
        self.batch_size = check_int("teacher.init_args.batch_size", batch_size, 1)
        self.lr = float(check_number("teacher.init_args.lr", lr, 0.0, strict=True))
        self.momentum = float(check_number("teacher.init_args.momentum", momentum, 0.0, 1.0))
        if self.momentum >= 1:
            raise ValueError(f"teacher.init_args.momentum must lie in [0, 1), got {momentum}.")
        self.weight_decay = float(check_number("teacher.init_args.weight_decay", weight_decay, 0.0))
        self.regularizer_weight = float(check_number("teacher.init_args.regularizer_weight", regularizer_weight, 0.0))
        self.entropy_weight = float(check_number("teacher.init_args.entropy_weight", entropy_weight, 0.0))
        self.unlabelled_batch_size = check_int("teacher.init_args.unlabelled_batch_size", unlabelled_batch_size, 1)
        self.neighbours = check_int("teacher.init_args.neighbours", neighbours, 0)
        self.seed = check_int("teacher.init_args.seed", seed, 0)
        self.accelerator = accelerator
        self.updates_per_batch = check_int("teacher.init_args.updates_per_batch", updates_per_batch, 1)
        self.cache = TeacherCache(Path(cache_dir) if cache_dir else default_cache_dir())
        #: Filled by :meth:`run`: the sweep's rows and the chosen size.
        self.sweep: list[dict] = []
        self.chosen_size: int | None = None

    # ------------------------------------------------------------------ keys
    def _training_key(self, data_key: dict, width: int) -> dict:
        return {
            "data": data_key,
            "network": self.network,
            "width": width,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "seed": self.seed,
        }

    # ------------------------------------------------------------------ training
    def _train(self, data: dict[str, Tensor], num_classes: int, width: int, members: int, steps: int, regularize: bool):
        """Train ``members`` teachers of width m together; returns the learner (on the CPU)."""
        network = build_network(self.network, width)
        learner = MulticlassClassifier(
            network=network,
            num_classes=num_classes,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            regularizer_weight=self.regularizer_weight if regularize else 0.0,
            entropy_weight=self.entropy_weight,
            ensemble_size=members,
            seed=self.seed,
        )
        datamodule = LabelledTensors(
            train=(data["train_x"], data["train_y"]),
            test=(data["test_x"], data["test_y"]),
            unlabelled=data["unlabelled"] if regularize else None,
            unlabelled_batch_size=self.unlabelled_batch_size,
            num_classes=num_classes,
            batch_size=self.batch_size,
            seed=self.seed,
            ensemble_size=members,
            updates_per_batch=self.updates_per_batch,
        )
        with quiet_lightning():
            self._fit(learner, datamodule, steps)
        return learner.cpu()

    def _fit(self, learner: MulticlassClassifier, datamodule: LabelledTensors, steps: int) -> None:
        trainer = pl.Trainer(
            max_steps=steps,
            max_epochs=-1,
            accelerator=self.accelerator,
            devices=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            limit_val_batches=0,
            num_sanity_val_steps=0,
            log_every_n_steps=max(1, steps),
        )
        trainer.fit(learner, datamodule=datamodule)

    @staticmethod
    def _test_losses(learner: MulticlassClassifier, data: dict[str, Tensor]) -> tuple[list[float], list[float]]:
        members = learner.ensemble_size
        x = data["test_x"].unsqueeze(0).expand(members, *data["test_x"].shape)
        y = data["test_y"].unsqueeze(0).expand(members, -1)
        loss, error = learner.evaluate_dataset(x, y)
        return loss.tolist(), (100.0 * (1.0 - error)).tolist()

    def sweep_sizes(
        self, data: dict[str, Tensor], data_key: dict, num_classes: int, sizes: Sequence[int]
    ) -> list[dict]:
        """Test loss of ``seeds`` teachers of every size (cached per size: an interrupted sweep resumes)."""
        rows = []
        for width in sizes:
            spec = {**self._training_key(data_key, width), "kind": "sweep", "seeds": self.seeds, "steps": self.steps}
            result = self.cache.load("sweep", spec, "result.json")
            if result is None:
                learner = self._train(data, num_classes, width, self.seeds, self.steps, regularize=False)
                losses, accuracies = self._test_losses(learner, data)
                parameters = sum(p.numel() for p in learner.member_network(0).parameters())
                result = {"size": width, "parameters": parameters, "test_loss": losses, "test_acc": accuracies}
                self.cache.store("sweep", spec, "result.json", result)
            rows.append(result)
        return rows

    def teacher_spec(self, data_key: dict, width: int) -> dict:
        """Everything that determines the trained teacher of width m: its cache key."""
        return {
            **self._training_key(data_key, width),
            "kind": "teacher",
            "steps": self.final_steps,
            "regularizer_weight": self.regularizer_weight,
            "entropy_weight": self.entropy_weight,
            "unlabelled_batch_size": self.unlabelled_batch_size,
        }

    def teacher(self, data: dict[str, Tensor], data_key: dict, num_classes: int, width: int) -> nn.Module:
        """The teacher of width m trained with R on U: from the cache, or trained and cached."""
        spec = self.teacher_spec(data_key, width)
        network = build_network(self.network, width)
        state = self.cache.load("teacher", spec, "weights.pt")
        if state is not None:
            try:
                network.load_state_dict(state)
                return network.eval()
            except (RuntimeError, KeyError) as error:
                warnings.warn(f"Cached teacher of width {width} does not load ({error}): retraining it.", stacklevel=2)
        learner = self._train(data, num_classes, width, 1, self.final_steps, regularize=True)
        trained = copy.deepcopy(learner.member_network(0)).eval()
        self.cache.store("teacher", spec, "weights.pt", trained.state_dict())
        return trained

    def run(self, datamodule, trainer: pl.Trainer | None = None) -> nn.Module:
        """Algorithm 1 on ``datamodule`` (a TeacherMixture), then label it; returns the teacher.

        Args:
            datamodule: Gives ``teacher_data()``, ``teacher_data_key()``, ``labelled_data_key()``,
                ``num_classes`` and takes ``relabel()``.
            trainer: The student's trainer, whose loggers and folder receive the curve.
        """
        data, key, classes = datamodule.teacher_data(), datamodule.teacher_data_key(), datamodule.num_classes
        if self.size is None:
            # The sweep trains on L alone: its points serve every injected source.
            self.sweep = self.sweep_sizes(data, datamodule.labelled_data_key(), classes, self.sizes)
            index, smoothed = first_local_minimum([row["test_loss"] for row in self.sweep], self.neighbours)
            for row, value in zip(self.sweep, smoothed, strict=True):
                row["smoothed_log_loss"] = value
            self.chosen_size = self.sweep[index]["size"]
            if index == len(self.sweep) - 1:
                warnings.warn(
                    f"The teacher's test loss decreases over the whole grid {self.sizes}: the U-curve's minimum "
                    f"lies beyond it. Using m = {self.chosen_size}; add larger sizes to teacher.init_args.sizes.",
                    stacklevel=2,
                )
        else:
            self.chosen_size = self.size
        teacher = self.teacher(data, key, classes, self.chosen_size)

        @torch.no_grad()
        def labeller(x: Tensor) -> Tensor:
            return teacher(x).argmax(-1)

        datamodule.relabel(labeller)
        if trainer is not None:
            publish_teacher(self, trainer, teacher, data, datamodule)
        return teacher
