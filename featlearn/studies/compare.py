"""``featlearn compare``: every method of a comparison on one experiment, over several seeds.

Shi, Wei, Liang (2022, Appendix E) compare the trained network against linear
models on fixed features and against the same network on data without input
structure. This command runs such a comparison from one experiment config::

    featlearn compare --config configs/experiments/shi_parity.yaml --seeds 5 --out DIR

* **Methods** come from a methods file (default: the shipped ``compare/shi.yaml``): each
  is a set of overrides of the experiment config, written in the config's own shape
  (``model``, ``data``, ``trainer``), plus ``without_structure: true`` for the data
  model's structure-free variant (:meth:`SyntheticDataModule.structure_free_overrides`),
  ``skip_steps: [t, ...]`` to leave steps out of the process and
  ``freeze_first_layer_from: t`` to fix the first layer from step t on
  (:func:`reshape_process`).
  The merged config of each method is saved as ``DIR/methods/<method>/config.yaml``
  and can be run alone with ``featlearn fit --config``.
* **Seeds** run as one vectorised ensemble per method: seed s is ensemble member s,
  initialised from ``model.seed + s`` (the global seed by default) and trained on
  data stream ``data.seed + s``; the distribution itself (dictionary, relevant set)
  is the config's, shared by all seeds. Every method sees the same data streams and
  starts from the same initial weights.
* **Tuning grids** (a method's ``tune:``) are chosen on the validation set. A grid that
  sets only the learner's scalar schedules trains side by side as one ensemble per
  ``--grid-members`` members (``model.init_args.member_values``: point g on seed j is
  member g K + j), each point's block equal to its own fit; other grids run a fit per point.
  A tuning fit runs without per-step diagnostics and curves (:func:`without_diagnostics`);
  the chosen values then train once more, with every curve, as the method's own run.
  ``--tune-seeds K`` chooses on the first K seeds (member s is seed + s whatever the
  ensemble's size, so they are the same runs as the first K of the final fit's).
* **No run twice**: a method whose config is that of a run made already, but for its
  logger, reuses that run's result and curves. ``run_times.csv`` gives such a method 0 s.
* **Outputs**: ``DIR/table.md`` (the paper's layout: rows Train Acc, Test Acc, Cos
  Similarity; one column per method; mean ± std over seeds), ``DIR/table.csv``
  (``method,metric,mean,std,n_seeds``, accuracies in percent, std with ddof 1,
  empty where undefined), ``DIR/run_times.csv``, and TensorBoard runs under
  ``DIR/tensorboard/<method>`` that all log ``heldout/test_acc`` so TensorBoard
  draws every method on one chart.
* **Resuming**: each finished method leaves ``DIR/methods/<method>/result.json``
  with a digest of its config; a re-run reuses every finished method whose config
  is unchanged and runs the rest. A method whose config changed stops the command
  (use a new ``--out`` or ``--overwrite``). Methods are trials of
  :mod:`featlearn.studies.trials`, shared with ``featlearn samples``.
* **Where**: in this process by default; ``--launcher slurm`` submits one submitit job
  per method (``--launcher submitit-local``: the same jobs as local subprocesses).

Metrics, per seed: train accuracy on the finite training set (NA in online mode,
where there is none), test accuracy on the data model's test set, and Cos Similarity
max_i cos(w_i, sum_{j in A} M_j) of the final first layer (NA where the model has no
learned first-layer features, as for the NTK, or the data model no ``feature``).
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import itertools
import json
import math
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from featlearn.config_files import resolve_config
from featlearn.contracts import FirstLayerArguments, PerMemberValues
from featlearn.runner.registry import config_class
from featlearn.schedules import canonical_segments, hold_from, is_segment_list, skip_steps
from featlearn.studies.halving import rung_steps, survivors
from featlearn.studies.trials import (
    BuildRun,
    Launcher,
    Trial,
    cli_flag,
    default_build,
    load_yaml,
    merge_configs,
    merge_experiment,
    run_trials,
    set_path,
    tensorboard_logger,
)

#: The default methods file: Table 1 of Shi et al. (2022).
DEFAULT_METHODS = "compare/shi"
#: Table rows: (csv metric name, row label, decimals).
METRICS = (("train_acc", "Train Acc (%)", 2), ("test_acc", "Test Acc (%)", 2), ("cos_similarity", "Cos Similarity", 3))
_METHOD_KEYS = {"model", "data", "trainer", "without_structure", "tune", "skip_steps", "freeze_first_layer_from"}


@dataclass
class Method:
    """One column of the comparison: overrides of the experiment config."""

    name: str
    overrides: dict = field(default_factory=dict)
    without_structure: bool = False
    #: Grid of the method's free constants: ``"dotted.path[|dotted.path...]": [values]``; the
    #: paths joined by ``|`` take the same value (e.g. the NTK's three rates).
    tune: dict = field(default_factory=dict)
    #: Steps of the experiment's process this method leaves out (every per-step schedule
    #: of ``model`` and ``data`` loses them, later steps move down, ``max_steps`` shrinks).
    skip_steps: tuple[int, ...] = ()
    #: The first layer (w and b) takes no update from this step on (after ``skip_steps``).
    freeze_first_layer_from: int | None = None

    def grid(self) -> list[dict[str, object]]:
        """Every combination of the tuned values, in the file's order: [{key: value}]."""
        keys = list(self.tune)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(self.tune[k] for k in keys))]

    def with_values(self, values: dict[str, object]) -> Method:
        """This method with the tuned ``values`` written into its overrides (no grid left)."""
        overrides = copy.deepcopy(self.overrides)
        for key, value in values.items():
            for path in key.split("|"):
                set_path(overrides, path, value, f"Method {self.name!r}: tune.{key}")
        return replace(self, overrides=overrides, tune={})

    @property
    def slug(self) -> str:
        """A folder name: ``Network w/o structure`` -> ``network_w_o_structure``."""
        return re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")


def load_methods(path: Path, only: list[str] | None = None) -> list[Method]:
    """Read a methods file: ``methods: {name: {model: ..., data: ..., trainer: ..., without_structure: bool}}``.

    ``base: <methods file>`` (a path or a shipped name) starts from that file's methods, in
    its order: an entry of the same name is merged into the inherited one (mappings key by
    key, a ``tune`` grid's list replaced), a new name is added at the end.

    Args:
        path: The YAML file.
        only: Keep these methods (by name), in the file's order.

    Raises:
        ValueError: On an unknown key, a non-mapping entry, or an unknown name in ``only``.
    """
    content = load_yaml(path, "--methods")
    entries = content.get("methods")
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"--methods {str(path)!r} needs a non-empty mapping 'methods: {{name: overrides}}'.")
    base = content.get("base")
    if base is not None:  # another methods file, whose methods these entries edit (or extend)
        inherited = load_yaml(resolve_config(str(base)), f"base: of {str(path)!r}").get("methods") or {}
        entries = {
            **{name: merge_configs(spec or {}, entries.get(name) or {}) for name, spec in inherited.items()},
            **{name: spec for name, spec in entries.items() if name not in inherited},
        }
    methods = []
    for name, spec in entries.items():
        spec = {} if spec is None else copy.deepcopy(spec)  # a YAML alias shares one mapping between methods
        if not isinstance(spec, dict):
            raise ValueError(f"Method {name!r} in {str(path)!r} must be a mapping of overrides, got {spec!r}.")
        unknown = set(spec) - _METHOD_KEYS
        if unknown:
            raise ValueError(
                f"Method {name!r} in {str(path)!r} has unknown keys {sorted(unknown)}; allowed: {sorted(_METHOD_KEYS)}."
            )
        without = spec.pop("without_structure", False)
        if not isinstance(without, bool):
            raise ValueError(f"Method {name!r}: without_structure must be true or false, got {without!r}.")
        tune = spec.pop("tune", None) or {}
        if not isinstance(tune, dict) or any(not isinstance(v, list) or not v for v in tune.values()):
            raise ValueError(
                f"Method {name!r}: tune must map dotted config paths to non-empty lists of values, got {tune!r}."
            )
        skip = spec.pop("skip_steps", None) or []
        if not isinstance(skip, list) or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in skip):
            raise ValueError(f"Method {name!r}: skip_steps must be a list of steps >= 1, got {skip!r}.")
        freeze = spec.pop("freeze_first_layer_from", None)
        if freeze is not None and (isinstance(freeze, bool) or not isinstance(freeze, int) or freeze < 1):
            raise ValueError(f"Method {name!r}: freeze_first_layer_from must be a step >= 1, got {freeze!r}.")
        methods.append(Method(str(name), spec, without, tune, tuple(sorted(set(skip))), freeze))
    slugs = [m.slug for m in methods]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"Method names in {str(path)!r} must differ in letters and digits: {slugs}.")
    if only:
        names = {m.name for m in methods}
        missing = [n for n in only if n not in names]
        if missing:
            raise ValueError(f"--only names {missing} are not in {str(path)!r}; its methods are {sorted(names)}.")
        methods = [m for m in methods if m.name in only]
    return methods


@dataclass(frozen=True)
class CompareOptions:
    """How :func:`compare` runs its trials (the command line's options, as one value).

    Args:
        seeds: S, the seeds of every method (ensemble members s = 0..S-1).
        seed: The first seed (None: the experiment's ``seed_everything``).
        tune_seeds: Choose grid points on the first K seeds only (None: all S).
        halving: Search each grid by successive halving with this reduction factor
            (:mod:`featlearn.studies.halving`; None: every point to ``max_steps``).
        grid_members: Most ensemble members of one tuning fit (None: :func:`default_grid_members`).
        overwrite: Discard results in ``out`` whose config changed (else: refuse).
        halving_only: With ``halving``, halve only these methods' grids (None: every grid);
            the others train every point to ``max_steps``.
    """

    seeds: int = 5
    seed: int | None = None
    tune_seeds: int | None = None
    halving: int | None = None
    grid_members: int | None = None
    overwrite: bool = False
    halving_only: tuple[str, ...] | None = None

    def halves(self, method: str) -> bool:
        """Whether ``method``'s grid is searched by successive halving."""
        return bool(self.halving) and (self.halving_only is None or method in self.halving_only)

    def problem(self, flag: Callable[[str], str] = str) -> str | None:
        """The first option out of range, said with its name as ``flag`` writes it; None if all hold."""
        if self.seeds < 1:
            return f"{flag('seeds')} must be >= 1, got {self.seeds}."
        if self.seed is not None and self.seed < 0:
            return f"{flag('seed')} must be >= 0, got {self.seed}."
        if self.tune_seeds is not None and not 1 <= self.tune_seeds <= self.seeds:
            return f"{flag('tune_seeds')} must be between 1 and {flag('seeds')} ({self.seeds}), got {self.tune_seeds}."
        if self.halving is not None and self.halving < 2:
            return f"{flag('halving')} must be an integer >= 2 (a rung keeps the best 1/ETA), got {self.halving}."
        if self.halving_only is not None and not self.halving:
            return f"{flag('halving_only')} names the grids to halve: give {flag('halving')} ETA too."
        if self.grid_members is not None and self.grid_members < 1:
            return f"{flag('grid_members')} must be >= 1, got {self.grid_members}."
        return None

    def resolved(self, slurm_gpus: int = 0) -> CompareOptions:
        """These options with the defaults filled in (``tune_seeds``, ``grid_members``)."""
        tune_seeds = self.seeds if self.tune_seeds is None else self.tune_seeds
        members = default_grid_members(tune_seeds, slurm_gpus) if self.grid_members is None else self.grid_members
        return replace(self, tune_seeds=tune_seeds, grid_members=members)


@dataclass
class Comparison(Mapping):
    """What :func:`compare` measured: method -> its per-seed metrics (a read-only mapping).

    ``comparison["Network"]["test_acc"]`` is the list of S test accuracies (percent);
    the keys of a method's metrics are those of :func:`~featlearn.studies.trials.measure_run`.

    Args:
        out: The folder of the tables, the runs and their TensorBoard curves.
        results: Method -> per-seed metrics, in the methods file's order.
        seconds: Method -> training seconds (0 for a run reused from an identical one).
        tuned: Method -> ``{"values", "val_acc", "edge", "seeds", "halving"}``: the grid point chosen
            on the validation set.
        skipped: Method -> why it does not apply to this experiment.
    """

    out: Path
    results: dict[str, dict]
    seconds: dict[str, float] = field(default_factory=dict)
    tuned: dict[str, dict] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, method: str) -> dict:  # noqa: D105
        return self.results[method]

    def __iter__(self) -> Iterator[str]:  # noqa: D105
        return iter(self.results)

    def __len__(self) -> int:  # noqa: D105
        return len(self.results)

    def summary(self, method: str, metric: str) -> tuple[float | None, float | None, int]:
        """(mean, sample std, seeds) of one method's metric (``test_acc``, ``train_acc``, ``cos_similarity``...)."""
        return summarize(self.results[method].get(metric))


# ---------------------------------------------------------------------- one method
def method_config(experiment: dict, method: Method, seeds: int, seed: int | None, out: Path) -> dict:
    """The full config of ``method``: the experiment, the method's overrides, then the comparison's settings."""
    config = copy.deepcopy(merge_configs(experiment, method.overrides))  # edited below: share nothing
    if seed is not None:
        config["seed_everything"] = seed
    reshape_process(config, method)
    if method.without_structure:
        data = config.get("data")
        if not isinstance(data, dict) or "class_path" not in data:
            raise ValueError(f"Method {method.name!r} needs the experiment config to give data.class_path.")
        overrides = _structure_free_overrides(config)
        config["data"] = merge_configs(data, {"init_args": overrides})
    model = config.setdefault("model", {})
    model.setdefault("init_args", {})["ensemble_size"] = seeds
    trainer = config.setdefault("trainer", {})
    trainer["logger"] = tensorboard_logger(out / "tensorboard", method.slug)
    trainer["enable_progress_bar"] = False
    trainer["enable_model_summary"] = False
    key = "callbacks" if "callbacks" in trainer and "callbacks+" not in trainer else "callbacks+"
    listed = [c for c in (trainer.get("callbacks") or []) + (trainer.get("callbacks+") or []) if isinstance(c, dict)]
    # Every method draws heldout/test_acc on one chart; an experiment that logs it already keeps its own
    # (two identical diagnostics would share one checkpoint key).
    added = []
    if not any(_is_test_accuracy(c) for c in listed):
        added.append({"class_path": "HeldOutAccuracy"})
    if "callbacks" in trainer:  # base.yaml's list (which flags degenerate runs) was replaced: flag them anyway
        from featlearn.callbacks import DegenerateRuns

        if not any(_is_a(c, DegenerateRuns) for c in listed):
            added.append({"class_path": "DegenerateRuns"})
    trainer[key] = list(trainer.get(key) or []) + added
    return config


def _is_test_accuracy(callback: dict) -> bool:
    """Whether a config's callback entry is a HeldOutAccuracy on the test set (its default split)."""
    from featlearn.callbacks import HeldOutAccuracy

    split = (callback.get("init_args") or {}).get("split", "test")
    return _is_a(callback, HeldOutAccuracy) and split == "test"


def reshape_process(config: dict, method: Method) -> None:
    """Apply ``method.skip_steps`` and ``method.freeze_first_layer_from`` to ``config`` in place.

    Shi et al.'s One Step is their process with the first layer fixed after step 1: step 2
    is skipped (``skip_steps: [2]``: every segment-list schedule under ``model.init_args``
    and ``data.init_args`` loses it) and the first layer is frozen from the new step 2 on
    (the arguments the learner class declares as its ``first_layer_arguments`` held at 0:
    ``lr_w``, ``lr_b``, ``weight_decay_w``, ``weight_decay_b`` for ``TwoLayerNet``), while
    the classifier stage keeps its length (``trainer.max_steps`` drops by the skipped steps).

    Raises:
        MethodNotApplicable: Freezing asked of a learner that declares no first-layer
            arguments (:class:`~featlearn.contracts.FirstLayerArguments`), or whose config
            sets none of them.
    """
    model = config.setdefault("model", {}).setdefault("init_args", {})
    if method.skip_steps:
        data = (config.get("data") or {}).get("init_args") or {}
        for section, args in (("model", model), ("data", data)):
            for key, spec in list(args.items()):
                if is_segment_list(spec):
                    args[key] = skip_steps(spec, method.skip_steps, f"{section}.init_args.{key}")
        trainer = config.setdefault("trainer", {})
        max_steps = trainer.get("max_steps")
        if isinstance(max_steps, int) and max_steps > 0:
            trainer["max_steps"] = max_steps - sum(1 for t in method.skip_steps if t <= max_steps)
    if method.freeze_first_layer_from is not None:
        freeze_first_layer(config, method)


def freeze_first_layer(config: dict, method: Method) -> None:
    """Hold the learner's first-layer rates and decays at 0 from ``method.freeze_first_layer_from`` on (in place).

    The learner class says which arguments those are and what an unset one follows
    (``first_layer_arguments``): an unset argument that follows another first-layer
    argument stays unset (it follows the held one), one that follows an outside argument
    (``lr_w`` following ``lr``) is set from it so it can be held, and one that follows
    nothing is 0 anyway.

    Raises:
        MethodNotApplicable: The learner declares no first-layer arguments, or the config
            sets none of them (nor what they follow).
    """
    model = config["model"]["init_args"]
    learner = config_class(config["model"].get("class_path"))
    declared = learner.first_layer_arguments if isinstance(learner, FirstLayerArguments) else {}
    for key, follows in declared.items():
        if key not in model and follows is not None and follows not in declared and follows in model:
            model[key] = model[follows]
    held = [key for key in declared if key in model]
    if not held:
        raise MethodNotApplicable(
            f"Method {method.name!r} freezes the first layer, but {config['model'].get('class_path')} declares no "
            f"first-layer arguments (first_layer_arguments) that model.init_args sets: nothing to hold."
        )
    for key in held:
        model[key] = hold_from(model[key], method.freeze_first_layer_from, 0.0, f"model.init_args.{key}")


def _structure_free_overrides(config: dict) -> dict:
    """Ask the configured data model for its ``init_args`` without input structure.

    The data model is built from the config's own ``data`` section (its constructor is all
    :meth:`~featlearn.datamodules.SyntheticDataModule.structure_free_overrides` reads); no run is made.
    """
    data = config["data"]
    data_class = config_class(data["class_path"])
    if not isinstance(data_class, type):
        raise ValueError(f"data.class_path {data['class_path']!r} is not a class featlearn can find.")
    model = data_class(**copy.deepcopy(data.get("init_args") or {}))
    try:
        return model.structure_free_overrides()
    except NotImplementedError as err:
        fix = "Drop the 'without structure' method (--only) for this experiment."
        raise MethodNotApplicable(str(err), fix) from err


class MethodNotApplicable(ValueError):
    """A method of the methods file that this experiment cannot run (e.g. no variant without structure).

    Args:
        why: What the experiment lacks (the table's note for a skipped method).
        fix: What to do about it, for a method asked for by name.
    """

    def __init__(self, why: str, fix: str = "") -> None:
        super().__init__(f"{why} {fix}".strip())
        self.why = why


# ---------------------------------------------------------------------- tables
def summarize(values: list[float] | None) -> tuple[float | None, float | None, int]:
    """(mean, sample std with ddof 1, n); (None, None, 0) when not measured; std None for one seed."""
    if not values:
        return None, None, 0
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return mean, std, n


def write_tables(
    out: Path,
    results: dict[str, dict],
    experiment: str,
    seeds: int,
    skipped: dict[str, str] | None = None,
    tuned: dict[str, dict] | None = None,
) -> None:
    """Write ``table.md`` and ``table.csv`` for the methods in ``results`` (in order).

    ``skipped`` (method -> why) is listed under the Markdown table; ``tuned`` (method ->
    ``{"values", "val_acc"}``) gives the constants chosen on the validation set, as
    ``tuned:<key>`` rows of the CSV and a line under the table.
    """
    tuned = tuned or {}
    names = list(results)
    metrics = METRICS
    if not any(results[n].get("cos_similarity") for n in names) and any(
        results[n].get("centre_coverage") for n in names
    ):  # no single feature to align with (Gaussian mixtures): the fraction of cluster centres found instead
        metrics = (*METRICS[:2], ("centre_coverage", "Centres found (fraction, cos >= 0.9)", 3))
    with open(out / "table.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "metric", "mean", "std", "n_seeds"])
        for name in names:
            for metric, _, _ in metrics:
                mean, std, n = summarize(results[name].get(metric))
                writer.writerow([name, metric, _num(mean), _num(std), n])
            flags = results[name].get("degenerate")
            if flags is not None:  # how many seeds degenerated (mean: that count)
                writer.writerow([name, "degenerate", repr(float(sum(flags))), "", len(flags)])
            for key, value in tuned.get(name, {}).get("values", {}).items():  # chosen on the validation set
                writer.writerow([name, f"tuned:{key}", repr(value), "", seeds])
    lines = [
        f"Comparison on `{experiment}`: mean ± std over {seeds} seed(s) (std with ddof 1).",
        "",
        "| Model | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for metric, label, decimals in metrics:
        cells = []
        for name in names:
            mean, std, _ = summarize(results[name].get(metric))
            if mean is None:
                cells.append("NA")
            else:
                cells.append(f"{mean:.{decimals}f}" + ("" if std is None else f" ± {std:.{decimals}f}"))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    flags = {name: results[name].get("degenerate") for name in names}
    if any(f is not None for f in flags.values()):  # runs that failed without an error (DegenerateRuns)
        cells = ["NA" if f is None else f"{sum(f)}/{len(f)}" for f in flags.values()]
        lines.append("| Degenerate runs | " + " | ".join(cells) + " |")
    if skipped:
        lines += ["", *(f"Skipped {name}: {why}" for name, why in skipped.items())]
    for name in names:
        if name in tuned:
            values = ", ".join(f"{key} = {value!r}" for key, value in tuned[name]["values"].items())
            on = tuned[name].get("seeds")
            where = f"the validation set of its first {on} seeds" if on and on != seeds else "the validation set"
            if tuned[name].get("halving"):
                where += f" by successive halving (eta = {tuned[name]['halving']})"
            lines += ["", f"{name}: tuned on {where}: {values} (val acc {tuned[name]['val_acc']:.2f}%)"]
            if tuned[name].get("edge"):
                lines.append(f"({', '.join(tuned[name]['edge'])}: the end of its grid; the optimum may lie beyond.)")
    (out / "table.md").write_text("\n".join(lines) + "\n")


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


# ---------------------------------------------------------------------- tuning
def tune_methods(
    methods: list[Method],
    experiment: dict,
    options: CompareOptions,
    out: Path,
    build: BuildRun,
    launcher: Launcher,
    log,
    changed: str,
) -> dict[str, dict]:
    """Choose each method's ``tune`` constants on the experiment's validation set.

    Every grid point is a trial (one ensemble over the seeds, in
    ``DIR/tuning/<method>/<k>/``, reused by a re-run like any trial); the point with
    the best mean validation accuracy wins, the first in the file's order on a tie. Writes
    ``DIR/tuning.csv`` (every point) and returns method -> ``{"values", "val_acc", "edge", "seeds"}``.

    With ``--tune-seeds K`` below ``--seeds``, every point trains on the first K seeds only (in
    ``DIR/tuning_K_seeds/``, with ``DIR/tuning_K_seeds.csv``), as tuning is usually done; only
    the chosen point then trains on every seed, as the method's own run.

    With ``--halving ETA`` the grid is searched by successive halving
    (:mod:`featlearn.studies.halving`, in ``DIR/tuning_halving_ETA/<method>/<point>/steps_<s>/``):
    every point trains its first rung's steps, the best 1/ETA on validation go on from their
    checkpoints, and only the points that reach ``trainer.max_steps`` are candidates.

    A tuning trial measures what tuning reads, its final accuracies: it runs without
    per-step diagnostics (:func:`without_diagnostics`) and without curves, which cost as
    much as the training itself for the NTK's grid. The chosen values' final run is then a
    fit of its own, with every curve; its accuracies equal its tuning trial's (diagnostics
    only read the learner).

    Raises:
        ValueError: The data model has no validation set (``data.init_args.val_size: 0``).
    """
    grids = {m.name: m.grid() for m in methods if m.tune}
    if not grids:
        return {}
    seeds = options.tune_seeds
    # Tuning on the first K of the seeds, or by halving, has folders of its own: beside the full grid, never mixed.
    full_folder = out / ("tuning" if seeds == options.seeds else f"tuning_{seeds}_seeds")
    halving_folder = full_folder.with_name(f"{full_folder.name}_halving_{options.halving}")
    run = lambda trials: run_trials(  # noqa: E731
        trials, build, launcher, overwrite=options.overwrite, changed=changed, log=log, divergence_ok=True
    )
    halved = {name: grid for name, grid in grids.items() if options.halves(name)}
    full = {name: grid for name, grid in grids.items() if name not in halved}
    scores = {}
    if full:
        points = sum(len(grid) for grid in full.values())
        chosen = [m for m in methods if m.name in full]
        scores.update(_grid_scores(chosen, full, experiment, options, out, full_folder, build, run, log, points))
    if halved:
        log(
            f"tuning {', '.join(halved)} by successive halving (eta = {options.halving}) on the validation set of "
            f"{seeds} seed(s): {sum(len(grid) for grid in halved.values())} grid point(s)"
        )
        chosen = [m for m in methods if m.name in halved]
        scores.update(_halving_scores(chosen, halved, experiment, options, out, halving_folder, build, run, log))
    tuned, rows = {}, []
    for method in methods:
        best = None
        for values in grids.get(method.name, []):
            metrics, steps, final = scores[method.name, _point_name(values)]
            if "diverged" in metrics:  # a rate too large for this experiment: not a candidate
                rows.append([method.name, values, None, None, steps, "diverged"])
                continue
            accuracy = metrics.get("val_acc")
            if accuracy is None:
                raise ValueError(
                    f"Tuning {method.name!r} needs a validation set: set data.init_args.val_size > 0, or pass "
                    f"--no-tune to use the methods file's values."
                )
            mean, std, _ = summarize(accuracy)
            rows.append([method.name, values, mean, std, steps, "" if final else "dropped by successive halving"])
            if final and (best is None or mean > best[1]):
                best = (values, mean)
        if grids.get(method.name) and best is None:
            raise ValueError(f"Every grid point of {method.name!r} diverged: give its tune grid smaller values.")
        if best is not None:
            edge = grid_edges(method.tune, best[0])
            tuned[method.name] = {
                "values": best[0],
                "val_acc": best[1],
                "edge": edge,
                "seeds": seeds,
                "halving": options.halving if method.name in halved else None,
            }
            log(f"{method.name}: chose {best[0]} (val acc {best[1]:.2f}%)")
            if edge:
                log(f"{method.name}: WARNING: {', '.join(edge)} chose the end of its grid; extend the grid past it.")
    for folder, names in ((full_folder, full), (halving_folder, halved)):  # a list beside each folder of points
        if not names:
            continue
        with open(folder.with_suffix(".csv"), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["method", "values", "val_acc_mean", "val_acc_std", "steps", "chosen", "note"])
            for name, values, mean, std, steps, note in rows:
                if name in names:
                    chosen = int(tuned[name]["values"] == values)
                    writer.writerow([name, json.dumps(values), _num(mean), _num(std), steps, chosen, note])
    return tuned


def _grid_scores(methods, grids, experiment, options, out, tuning, build, run, log, points) -> dict:
    """Every point of every grid trained to ``trainer.max_steps``: (method, point) -> (metrics, steps, True)."""
    seeds = options.tune_seeds
    trials, plan = [], {}  # plan: (method, point name) -> (trial label, the point's block of members or None)
    for method in methods:
        grid = grids.get(method.name, [])
        arguments = member_value_arguments(experiment, method) if grid else None
        per_fit = max(1, options.grid_members // seeds)  # points side by side in one ensemble
        if arguments is None or per_fit == 1:  # one trial per point
            for values in grid:
                config = method_config(experiment, method.with_values(values), seeds, options.seed, out)
                point = _point_name(values)  # a folder per value: a longer grid reuses the points it shares
                without_diagnostics(config)
                label = f"{method.name} tune {point}"
                trials.append(Trial(label, tuning / method.slug / point, config))
                plan[method.name, point] = (label, None)
            continue
        for first in range(0, len(grid), per_fit):
            chunk = grid[first : first + per_fit]
            config = method_config(experiment, method, seeds, options.seed, out)
            without_diagnostics(config)
            config["model"]["init_args"]["member_values"] = {
                argument: [values[key] for values in chunk] for argument, key in arguments.items()
            }
            name = f"points_{first}-{first + len(chunk) - 1}"
            label = f"{method.name} tune {name}"
            trials.append(Trial(label, tuning / method.slug / name, config))
            for g, values in enumerate(chunk):
                plan[method.name, _point_name(values)] = (label, g)
    log(
        f"tuning {', '.join(grids)} on the validation set of {seeds} seed(s): {points} grid point(s) in "
        f"{len(trials)} fit(s)"
    )
    done = run(trials)
    steps = {trial.label: (trial.config.get("trainer") or {}).get("max_steps") for trial in trials}  # to where it ran
    scores = {}
    for (name, point), (label, block) in plan.items():
        metrics = point_metrics(done[label]["metrics"], block, seeds)
        scores[name, point] = (metrics, steps[label], True)
    return scores


def _halving_scores(methods, grids, experiment, options, out, tuning, build, run, log) -> dict:
    """Successive halving of every grid, all methods' points of a rung in one batch of trials.

    Returns (method, point) -> (metrics at the last rung the point reached, its steps,
    whether that rung was the last, ``trainer.max_steps``).
    """
    alive, rungs, configs = {}, {}, {}
    for method in methods:
        grid = grids.get(method.name, [])
        if not grid:
            continue
        configs[method.name] = {}
        for values in grid:
            config = method_config(experiment, method.with_values(values), options.tune_seeds, options.seed, out)
            without_diagnostics(config)
            configs[method.name][_point_name(values)] = config
        total = int((next(iter(configs[method.name].values())).get("trainer") or {}).get("max_steps") or 0)
        if total < 1:
            raise ValueError(f"Tuning {method.name!r} by successive halving needs trainer.max_steps >= 1.")
        rungs[method.name] = rung_steps(total, len(grid), options.halving)
        alive[method.name] = [_point_name(values) for values in grid]
    scores: dict = {}
    checkpoints: dict = {}  # (method, point) -> the checkpoint its next rung resumes
    for r in range(max(len(steps) for steps in rungs.values())):
        trials, plan = [], {}
        for name, steps in rungs.items():
            if r >= len(steps):
                continue
            last = r == len(steps) - 1
            for point in alive[name]:
                folder = tuning / Method(name).slug / point / f"steps_{steps[r]}"
                config = rung_config(configs[name][point], folder, steps[r], checkpoints.get((name, point)), last)
                label = f"{name} tune {point} to step {steps[r]}"
                trials.append(Trial(label, folder, config))
                plan[name, point] = label
                checkpoints[name, point] = folder / "checkpoints" / "last.ckpt"
        log(f"successive halving, rung {r + 1}: {len(trials)} fit(s)")
        done = run(trials)
        for name, steps in rungs.items():
            if r >= len(steps):
                continue
            last = r == len(steps) - 1
            rung, errors = [], []  # mean validation accuracy per point, and its standard error over the seeds
            for point in alive[name]:
                metrics = done[plan[name, point]]["metrics"]
                scores[name, point] = (metrics, steps[r], last)
                if "diverged" in metrics:
                    rung.append(None)
                    errors.append(None)
                elif metrics.get("val_acc") is None:
                    raise ValueError(
                        f"Tuning {name!r} needs a validation set: set data.init_args.val_size > 0, or pass "
                        f"--no-tune to use the methods file's values."
                    )
                else:
                    mean, std, seeds = summarize(metrics["val_acc"])
                    rung.append(mean)
                    errors.append(None if std is None else std / math.sqrt(seeds))
            alive[name] = [alive[name][i] for i in survivors(rung, options.halving, last, errors)]
    return scores


def rung_config(config: dict, folder: Path, steps: int, resume: Path | None, last: bool) -> dict:
    """A halving rung's trial config: ``config`` trained to ``steps``, resumed from ``resume``.

    Every rung but the last saves ``folder/checkpoints/last.ckpt`` at its final step, which
    the next rung resumes with ``ckpt_path``: a resumed fit continues bit for bit as one
    uninterrupted fit would (``tests/featlearn/cli/test_resume_every_experiment.py``). The
    experiment's own checkpoint callbacks are replaced by that one (the last rung keeps none).
    """
    from pytorch_lightning.callbacks import ModelCheckpoint

    from featlearn.callbacks import DegenerateRuns

    config = copy.deepcopy(config)
    trainer = config.setdefault("trainer", {})
    trainer["max_steps"] = steps
    trainer["default_root_dir"] = str(folder)  # a logger-less fit checkpoints under it
    listed = (trainer.pop("callbacks", None) or []) + (trainer.pop("callbacks+", None) or [])
    kept = [entry for entry in listed if not _is_a(entry, ModelCheckpoint)]
    if not any(_is_a(entry, DegenerateRuns) for entry in kept):
        kept.append({"class_path": "DegenerateRuns"})  # base.yaml's list is replaced below
    if last:
        trainer["enable_checkpointing"] = False
    else:
        checkpoint = {"save_last": True, "every_n_train_steps": steps, "save_top_k": 0}
        kept.insert(0, {"class_path": "StepCheckpoint", "init_args": checkpoint})
    trainer["callbacks"] = kept
    if resume is not None:
        config["ckpt_path"] = str(resume)
    return config


def _is_a(entry, base: type) -> bool:
    """Whether a config's callback entry builds a ``base`` (its ``class_path`` resolved, short names included)."""
    cls = config_class(entry.get("class_path")) if isinstance(entry, dict) else None
    return isinstance(cls, type) and issubclass(cls, base)


def without_diagnostics(config: dict) -> None:
    """Strip a trial's config (in place) to what its result needs: no per-step diagnostics, no curves.

    Drops every :class:`~featlearn.callbacks.DiagnosticCallback` listed under ``trainer.callbacks``
    or ``trainer.callbacks+`` and the logger. The other callbacks stay (checkpoints, the end-of-fit
    :class:`~featlearn.callbacks.DegenerateRuns`): none of them changes training.
    """
    from featlearn.callbacks import DiagnosticCallback

    trainer = config.setdefault("trainer", {})
    trainer["logger"] = False
    for key in ("callbacks", "callbacks+"):
        if isinstance(trainer.get(key), list):
            trainer[key] = [entry for entry in trainer[key] if not _is_a(entry, DiagnosticCallback)]


def member_value_arguments(experiment: dict, method: Method) -> dict[str, str] | None:
    """How ``method``'s grid maps onto its learner's ``member_values``: argument -> tune key; None where it cannot.

    A grid trains as one ensemble (:class:`~featlearn.models.TwoLayerNet`'s ``member_values``)
    when every path of every tuned key is ``model.init_args.<argument>`` with an argument the
    learner class gives per grid point (:class:`~featlearn.contracts.PerMemberValues`); the paths a key joins
    by ``|`` all take its value. Otherwise (a data path, another learner) each point is its
    own trial.
    """
    config = merge_configs(experiment, method.overrides)
    learner = config_class((config.get("model") or {}).get("class_path"))
    allowed = learner.MEMBER_VALUE_ARGUMENTS if isinstance(learner, PerMemberValues) else ()
    arguments = {}
    for key in method.tune:
        for path in key.split("|"):
            prefix, _, argument = path.rpartition(".")
            if prefix != "model.init_args" or argument not in allowed:
                return None
            arguments[argument] = key
    return arguments


def same_run_digest(config: dict) -> str:
    """A digest of what a trial computes: its config without ``trainer.logger`` (where its curves go).

    Two trials with the same digest train the same networks on the same data, so one's
    result stands for the other's. Schedules under ``model.init_args`` and ``data.init_args``
    enter in their canonical form (:func:`~featlearn.schedules.canonical_segments`).
    """
    computed = copy.deepcopy(config)
    (computed.get("trainer") or {}).pop("logger", None)
    for section in ("model", "data"):  # one schedule written two ways (hold_from's cuts) is one run
        arguments = (computed.get(section) or {}).get("init_args") or {}
        for key, spec in arguments.items():
            arguments[key] = canonical_segments(spec, f"{section}.init_args.{key}")
    return hashlib.sha256(yaml.safe_dump(computed, sort_keys=True).encode()).hexdigest()


def point_metrics(metrics: dict, block: int | None, seeds: int) -> dict:
    """One grid point's metrics from its trial's: the whole trial's, or block ``block`` of a grid ensemble.

    A point of a grid ensemble owns members ``block * seeds .. (block + 1) * seeds - 1``; it
    diverged where one of them did.
    """
    if block is None:
        return metrics
    members = range(block * seeds, (block + 1) * seeds)
    diverged = {int(m): step for m, step in (metrics.get("diverged_members") or {}).items() if int(m) in members}
    if diverged:
        member, step = min(diverged.items(), key=lambda item: item[1])
        return {"diverged": f"member {member} (seed {member - block * seeds}) diverged at update step {step}"}
    return {
        key: value[block * seeds : (block + 1) * seeds] if isinstance(value, list) else value
        for key, value in metrics.items()
        if key != "diverged_members"
    }


def grid_edges(grid: dict[str, list], chosen: dict[str, object]) -> list[str]:
    """The tuned keys whose chosen value is the smallest or largest of three or more numbers.

    The best point at the end of a grid says the optimum may lie beyond it.
    """
    edges = []
    for key, values in grid.items():
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == len(values) >= 3 and chosen[key] in (min(numbers), max(numbers)):
            edges.append(key)
    return edges


def _point_name(values: dict[str, object]) -> str:
    """A grid point's folder name: its values, e.g. ``0.001`` or ``10.0_0.5``."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "_".join(repr(v) for v in values.values())).strip("_")


# ---------------------------------------------------------------------- command
def parse_args(argv: list[str]) -> argparse.Namespace:
    """The ``featlearn compare`` options."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --ou must not be taken for --out: a misspelt option is refused
        prog="featlearn compare",
        description="Run the methods of a comparison (default: Shi et al. 2022, Table 1) on one experiment "
        "over several seeds; write DIR/table.md, DIR/table.csv and TensorBoard curves.",
    )
    parser.add_argument(
        "--config", action="append", required=True, help="Experiment config (repeat to layer overrides, as in fit)."
    )
    parser.add_argument("--seeds", type=int, default=5, help="Number of seeds (ensemble members), default 5.")
    parser.add_argument("--out", required=True, help="Output folder DIR.")
    parser.add_argument(
        "--methods", default=DEFAULT_METHODS, help="Methods file, a path or a shipped name (default: %(default)s)."
    )
    parser.add_argument("--only", nargs="+", default=None, help="Run only these methods (names as in the file).")
    parser.add_argument("--seed", type=int, default=None, help="First seed (default: the config's seed_everything).")
    parser.add_argument("--overwrite", action="store_true", help="Discard results in DIR whose config changed.")
    parser.add_argument(
        "--no-tune", action="store_true", help="Use the methods file's constants; do not tune its grids."
    )
    parser.add_argument(
        "--tune-seeds",
        type=int,
        default=None,
        help="Choose each grid point on the first K seeds only, then run the chosen point on all --seeds "
        "(default: all of them).",
    )
    parser.add_argument(
        "--halving",
        type=int,
        default=None,
        metavar="ETA",
        help="Search each tuning grid by successive halving: every point trains max_steps / ETA^k steps, the "
        "best 1/ETA on validation go on from their checkpoints, and so on to max_steps (each point a fit of its "
        "own). Default: the full grid, every point to max_steps.",
    )
    parser.add_argument(
        "--halving-only",
        nargs="+",
        default=None,
        metavar="METHOD",
        help="With --halving: halve only these methods' grids (names as in the methods file); the others train "
        "every point to max_steps.",
    )
    parser.add_argument(
        "--grid-members",
        type=int,
        default=None,
        help="Most ensemble members of one tuning fit: grid points x seeds train side by side up to this. "
        "Default: 100 where trials run on a GPU (this machine has one, or --slurm-gpus > 0), else --seeds (one "
        "point per fit: on a CPU a grid's arithmetic costs the same either way, and a point that diverges "
        "stops its own fit early).",
    )
    Launcher.add_arguments(parser)
    args = parser.parse_args(argv)
    problem = options_of(args).problem(cli_flag)
    if problem:
        parser.error(problem)
    return args


def options_of(args: argparse.Namespace) -> CompareOptions:
    """The :class:`CompareOptions` of parsed ``featlearn compare`` options, defaults filled in."""
    options = CompareOptions(
        seeds=args.seeds,
        seed=args.seed,
        tune_seeds=args.tune_seeds,
        halving=args.halving,
        grid_members=args.grid_members,
        overwrite=args.overwrite,
        halving_only=tuple(args.halving_only) if args.halving_only else None,
    )
    return options if options.problem() else options.resolved(args.slurm_gpus)


def default_grid_members(seeds: int, slurm_gpus: int) -> int:
    """``--grid-members`` by default: 100 where trials get a GPU, else one grid point (``seeds`` members) per fit.

    On a GPU a grid side by side in one ensemble pays (the per-fit and per-step costs are
    shared; benchmarks/README.md). On a CPU
    the arithmetic is the same either way, a diverged member would keep computing to the
    end where its own fit stops at once, and memory grows with the members.
    """
    import torch

    return 100 if torch.cuda.is_available() or slurm_gpus > 0 else seeds


def compare(
    configs: Sequence[str | Path | Mapping],
    out: str | Path,
    *,
    build: BuildRun | None = None,
    methods: str | Path = DEFAULT_METHODS,
    only: Sequence[str] | None = None,
    options: CompareOptions | None = None,
    tune: bool = True,
    launcher: Launcher | None = None,
    log: Callable[[str], None] | None = None,
) -> Comparison:
    """Every method of a methods file on one experiment, over the seeds: Shi et al.'s Table 1 and the like.

    Args:
        configs: The experiment: shipped config names, paths, or mappings (overrides already
            loaded), merged in order as ``--config`` files are.
        out: Folder of the tables, the runs and their TensorBoard curves; finished trials
            there are reused.
        build: Builds and runs one ``featlearn fit`` (default: :func:`featlearn.runner.build_cli`).
        methods: The methods file, a path or a shipped name.
        only: Run only these methods (names as in the file); asked for by name, a method
            that does not apply is an error rather than a skip.
        options: Seeds and tuning (:class:`CompareOptions`; default: 5 seeds, full grids).
        tune: Choose each method's ``tune`` grid on the validation set (False: the file's values).
        launcher: Where trials run (default: one after another in this process).
        log: Where progress lines go (default: printed, prefixed ``[compare]``).

    Returns:
        The per-seed results by method, with their times, the tuned values and the skipped
        methods (:class:`Comparison`); ``out/table.md`` and ``out/table.csv`` hold the table.

    Raises:
        ValueError: An option out of range (named), a bad methods file, or no method that applies.
    """
    options = options or CompareOptions()
    build = build or default_build()
    problem = options.problem()
    if problem:
        raise ValueError(problem)
    options = options.resolved(launcher.gpus_per_trial if launcher else 0)
    methods_file, only = methods, list(only) if only else None
    listed = load_methods(resolve_config(methods_file), only)
    experiment, names = merge_experiment(configs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    launcher = launcher or Launcher()
    if launcher.folder is None:
        launcher = replace(launcher, folder=out / "submitit")
    log = log or (lambda line: print(f"[compare] {line}", flush=True))
    changed = "the experiment, methods file, --seeds or --seed changed"
    applicable, skipped = [], {}
    for method in listed:  # every config first: a bad method stops the command before any training
        try:
            method_config(experiment, method, options.seeds, options.seed, out)
        except MethodNotApplicable as err:
            if only:  # asked for by name: an error, not a skip
                raise
            skipped[method.name] = err.why
            continue
        applicable.append(method)
    for name, why in skipped.items():
        log(f"skipping {name!r}: {why}")
    if not applicable:
        raise ValueError(f"No method of {str(methods_file)!r} applies to this experiment: {skipped}.")
    tuned: dict[str, dict] = {}
    if tune:
        tuned = tune_methods(applicable, experiment, options, out, build, launcher, log, changed)
    trials = []
    for method in applicable:
        chosen = method.with_values(tuned[method.name]["values"]) if method.name in tuned else method
        config = method_config(experiment, chosen, options.seeds, options.seed, out)
        trials.append(Trial(method.name, out / "methods" / method.slug, config, (out / "tensorboard" / method.slug,)))
    experiment_name = " + ".join(names)
    results: dict[str, dict] = {}
    times: dict[str, float] = {}

    def finished(trial: Trial, result: dict) -> None:
        results[trial.label], times[trial.label] = result["metrics"], result["seconds"]
        write_tables(out, results, experiment_name, options.seeds, skipped, tuned)  # a partial table after each
        log(f"{trial.label}: done in {result['seconds']:.1f} s")

    # A run identical by construction to one made already is not repeated: another method whose config is
    # the same but for its logger (Two Step where the process freezes the first layer from step 3 anyway).
    earlier: dict[str, Trial] = {}
    copies: dict[str, tuple[Trial, Path]] = {}  # method -> (the run it repeats, that run's TensorBoard folder)
    unique = []
    for trial in trials:
        key = same_run_digest(trial.config)
        if key in earlier:
            source = earlier[key]
            copies[trial.label] = (source, Path(source.config["trainer"]["logger"]["init_args"]["save_dir"]))
            continue
        earlier[key] = trial
        unique.append(trial)
    done = run_trials(
        unique, build, launcher, overwrite=options.overwrite, changed=changed, log=log, on_result=finished
    )
    for trial in trials:
        if trial.label not in copies:
            continue
        source, save_dir = copies[trial.label]
        saved = trial.finished(options.overwrite, changed)
        if saved is None:
            origin = done.get(source.label) or json.loads(source.result_path.read_text())
            trial.prepare()
            events = save_dir / source.config["trainer"]["logger"]["init_args"]["name"]
            if events.is_dir():
                shutil.copytree(events, out / "tensorboard" / Method(trial.label).slug, dirs_exist_ok=True)
            saved = trial.save(origin["metrics"], 0.0)
            log(f"{trial.label}: the same run as {source.label!r}; its result and curves are reused")
        done[trial.label] = saved
        finished(trial, saved)
    done = {trial.label: done[trial.label] for trial in trials}
    results = {label: result["metrics"] for label, result in done.items()}
    times = {label: result["seconds"] for label, result in done.items()}
    write_tables(out, results, experiment_name, options.seeds, skipped, tuned)
    with open(out / "run_times.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "seconds"])
        for name, seconds in times.items():
            writer.writerow([name, f"{seconds:.1f}"])
    return Comparison(out, results, times, tuned, skipped)


def compare_command(argv: list[str], build: BuildRun) -> Comparison:
    """``featlearn compare`` with arguments ``argv`` (see :func:`parse_args`): :func:`compare`, then the table printed.

    Args:
        argv: The command's arguments.
        build: Builds and runs one ``featlearn fit`` (:func:`featlearn.runner.build_cli`).
    """
    args = parse_args(argv)
    comparison = compare(
        args.config,
        args.out,
        build=build,
        methods=args.methods,
        only=args.only,
        options=options_of(args),
        tune=not args.no_tune,
        launcher=Launcher.from_args(args, Path(args.out) / "submitit"),
    )
    print((comparison.out / "table.md").read_text(), flush=True)
    total = sum(comparison.seconds.values())
    tensorboard = comparison.out / "tensorboard"
    print(f"[compare] total training time {total:.1f} s; tensorboard --logdir {tensorboard}", flush=True)
    return comparison
