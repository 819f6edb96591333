r"""``featlearn calibrate``: the constants a paper leaves open, chosen once on one table.

A paper that states its process but not all of its constants (Shi et al.'s step sizes and
decays, Section 3.1: "for some choice of the hyperparameters") leaves a reproduction free
to choose them. Chosen per table, they would fit every table and predict none. This study
chooses them **once**, on one table, by a stated objective, and the other tables are then
predictions at the chosen constants.

**The candidates file** (``featlearn calibrate --candidates NAME``; shipped:
``calibration/shi_table1``) names:

* ``methods``: the methods file whose methods every candidate runs *as the report's items run
  them*: a method's ``tune`` grid (a constant the paper leaves to each table, chosen on that
  table's validation set, such as the Network's first-layer rate from step 3) is tuned for
  every candidate too, so the chosen candidate's numbers are the ones its predictions will be
  made with; a candidate fixes only what it names;
* ``paper``, ``setting``: where the paper's numbers are (its table file, one setting);
* ``objectives``: name -> ``targets`` (``{method, metric, paper_method}``: featlearn's
  method and metric against the paper's value of ``paper_method``'s column) and, optionally,
  ``among`` (the candidates it chooses between; default all) and ``default`` (the candidate
  that stands unless the table prefers another: the file's reading of the paper's process);
* ``candidates``: name -> ``about`` (one line) and ``overlay`` (overrides of the experiment
  config, merged after it as a further ``--config`` is); optionally ``at_steps`` (``{step:
  {path: value}}``: that step of the experiment's schedule alone, its other steps kept, a
  :class:`~featlearn.studies.methods.StepValues` layer after the overlay), ``tune`` (method -> a grid
  that replaces that method's grid: a tuned first- and second-layer pair, say) or
  ``tuned: false`` (its methods run untuned: a candidate whose overlay *is* the constant a grid
  would tune, eq. (278)'s one rate for both layers, say).

**The objective** of a candidate c is the mean absolute error over its targets,

.. math::

    J(c) = \frac{1}{S} \sum_{s=1}^{S} J_s(c), \qquad
    J_s(c) = \frac{1}{|T|} \sum_{(m, q) \in T} e_{m,q,s}, \qquad
    e_{m,q,s} = \frac{|x_{m,q,s}(c) - x^{paper}_{m,q}|}{s_q},

with :math:`x_{m,q,s}(c)` seed s's value, :math:`s_q = 100` for accuracies (percent) and 1 for
cosines. A seed whose run degenerated (``DegenerateRuns``: it predicts one class, or its loss
grew by orders of magnitude: a failed fit) has :math:`e = 1` on an accuracy target, the whole
scale: a failed fit matches no number, even one at chance. Accuracies the paper reports on its
test set are matched by featlearn's *validation* accuracy (``val_acc``), so the choice never
reads the test set. The spread of J is the standard error over seeds,
:math:`\mathrm{sd}(J_s)/\sqrt{S}`; candidates within two of it of the chosen one are named as
not told apart. A candidate with a target it did not measure has J = inf. The chosen candidate
of an objective is its argmin (the first listed on a tie), except where the objective names a
``default``: the default stands unless the argmin's J is smaller by more than two standard
errors of their difference, :math:`J(c_0) - J(c^*) > 2\sqrt{\mathrm{se}(c_0)^2 + \mathrm{se}(c^*)^2}`;
a reproduction leaves the paper's own constants only where the table asks it to. ``shown`` targets are drawn in the
table but score nothing (a second classifier of a row the objective already counts, for
instance). ``diagnostics`` rows show featlearn's own measurements beside them, with no paper
value and no score (a diagnostic callback's per-seed results, such as ``CountAccuracy``'s
accuracy at each count): what explains a candidate's numbers.

**Outputs** in DIR: ``candidates/<slug>/`` (each candidate's ``featlearn compare`` folder;
finished trials are reused on a rerun), ``calibration.csv`` (one row per candidate and
target: featlearn's mean and std, the paper's value), ``calibration.json`` (the objectives'
values and chosen candidates) and ``calibration.md`` (the table a report shows).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from featlearn.config_files import resolve_config
from featlearn.studies.compare import compare
from featlearn.studies.methods import StepValues, load_methods
from featlearn.studies.plan import COLUMNS, paper_numbers
from featlearn.studies.trials import BuildRun, Launcher, cli_flag, default_build, load_yaml, summarize
from featlearn.studies.tuning import CompareOptions

#: compare's metric -> the paper table file's column (train_acc -> train, ...); val_acc stands for test.
PAPER_COLUMN = {metric: column for column, metric, _, _ in COLUMNS} | {"val_acc": "test"}
#: The scale s_q of each metric in the objective: accuracies are in percent.
METRIC_SCALE = {"train_acc": 100.0, "val_acc": 100.0, "test_acc": 100.0, "cos_similarity": 1.0}


@dataclass(frozen=True)
class Target:
    """One term of an objective: featlearn's ``method`` and ``metric`` against the paper's ``paper_method``."""

    method: str
    metric: str
    paper_method: str

    @property
    def label(self) -> str:  # noqa: D102
        return f"{self.method}: {self.metric}"


@dataclass(frozen=True)
class Objective:
    """A named objective: its targets, the candidates it chooses between (None: all), and its default.

    ``default``: the candidate that stands unless the argmin's J lies more than two standard errors
    below its own (:func:`choose`), the file's reading of the paper's process; None: the plain argmin.
    """

    name: str
    about: str
    targets: tuple[Target, ...]
    among: tuple[str, ...] | None = None
    default: str | None = None


@dataclass(frozen=True)
class Candidate:
    """One choice of the open constants: an overlay of the experiment config."""

    name: str
    about: str
    overlay: dict
    #: Method -> a grid replacing that method's ``tune`` grid (``{}``: the methods file's grids).
    tune: dict = field(default_factory=dict)
    #: False: every method runs untuned (the overlay sets what the grids would choose).
    tuned: bool = True
    #: Values at single steps, ``{step: {path: value}}`` (a :class:`~featlearn.studies.methods.StepValues`
    #: layer after the overlay): each changes one step of the experiment's schedule and keeps its others.
    at_steps: dict = field(default_factory=dict)

    @property
    def layers(self) -> list:
        """The config layers this candidate adds after an experiment's: its overlay, then its step values."""
        return [self.overlay, *([StepValues(self.at_steps)] if self.at_steps else [])]

    @property
    def slug(self) -> str:
        """A folder name: ``kept, eta1 = 18`` -> ``kept_eta1_18``."""
        return re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")


@dataclass
class CandidatesFile:
    """A candidates file, loaded and checked."""

    path: Path
    methods: str
    paper: str
    setting: str
    objectives: list[Objective]
    candidates: list[Candidate]
    #: Targets drawn in the table that no objective scores.
    shown: list[Target] = field(default_factory=list)
    #: featlearn's own measurements drawn below the targets, with no paper value: (method, metric family, label).
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class Diagnostic:
    """A row of featlearn's own measurements (no paper value, no score): ``metric`` or, ending in ``*``, a family.

    A family (``count_acc_*``) names every result key with that prefix, ordered by its suffix
    (``count_acc_0`` ... ``count_acc_5``); its cell lists their means over seeds, ``a · b · ...``.
    """

    method: str
    metric: str
    label: str

    def keys(self, measured: Mapping) -> list[str]:
        """The result keys of ``measured`` (a method's results) this row reads, in order."""
        if not self.metric.endswith("*"):
            return [self.metric] if self.metric in measured else []
        prefix = self.metric[:-1]
        found = [key for key in measured if key.startswith(prefix)]
        return sorted(found, key=lambda key: (len(key), key))  # count_acc_2 before count_acc_10


def load_candidates(name: str | Path) -> CandidatesFile:
    """Read and check a candidates file (a shipped name such as ``calibration/shi_table1``, or a path).

    Raises:
        ValueError: A missing key, an unknown metric, a paper value that is not in the table
            file, or an ``among`` that names no candidate; each with the file and entry named.
    """
    try:
        path = Path(resolve_config(str(name)))
    except (FileNotFoundError, ValueError):
        raise ValueError(
            f"--candidates {str(name)!r} is neither a file nor a shipped candidates file: give the path of a YAML "
            "file, or a shipped name such as calibration/shi_table1 (list them with `featlearn configs`)."
        ) from None
    spec = load_yaml(path, "--candidates")
    for key in ("methods", "paper", "setting", "objectives", "candidates"):
        if not spec.get(key):
            raise ValueError(f"Candidates file {path}: '{key}' is missing.")
    candidates = []
    method_names = {method.name for method in load_methods(resolve_config(str(spec["methods"])))}
    for cname, entry in spec["candidates"].items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("overlay"), Mapping) or not entry.get("about"):
            raise ValueError(f"Candidates file {path}: candidate {cname!r} needs 'about' and an 'overlay' mapping.")
        at_steps = read_step_values(entry.get("at_steps"), f"Candidates file {path}: candidate {cname!r}")
        tune, tuned = entry.get("tune") or {}, entry.get("tuned", True)
        if not isinstance(tune, Mapping) or any(not isinstance(grid, Mapping) for grid in tune.values()):
            raise ValueError(f"Candidates file {path}: candidate {cname!r}: 'tune' maps a method to its grid.")
        unknown = sorted(set(tune) - method_names)
        if unknown:
            raise ValueError(
                f"Candidates file {path}: candidate {cname!r}: 'tune' names {unknown}, "
                f"not methods of {spec['methods']}."
            )
        if not isinstance(tuned, bool) or (tune and not tuned):
            raise ValueError(
                f"Candidates file {path}: candidate {cname!r}: 'tuned' is true or false, and false takes no 'tune'."
            )
        grids = {method: dict(grid) for method, grid in tune.items()}
        candidates.append(Candidate(str(cname), str(entry["about"]), dict(entry["overlay"]), grids, tuned, at_steps))
    names = {c.name for c in candidates}
    slugs = [c.slug for c in candidates]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"Candidates file {path}: candidate names must differ in letters and digits: {slugs}.")
    paper = paper_numbers(spec["paper"])

    def read_targets(entries, where: str) -> list[Target]:
        targets = []
        for raw in entries or []:
            target = Target(raw["method"], raw["metric"], raw.get("paper_method", raw["method"]))
            if target.metric not in METRIC_SCALE:
                raise ValueError(
                    f"Candidates file {path}: {where}: metric {target.metric!r} is not one of {sorted(METRIC_SCALE)}."
                )
            row = paper.get((spec["setting"], target.paper_method))
            if row is None or row.get(PAPER_COLUMN[target.metric]) is None:
                raise ValueError(
                    f"Candidates file {path}: {where}: the paper's table has no "
                    f"{PAPER_COLUMN[target.metric]!r} for {target.paper_method!r} in {spec['setting']!r}."
                )
            targets.append(target)
        return targets

    objectives = []
    for oname, entry in spec["objectives"].items():
        targets = read_targets(entry.get("targets"), f"objective {oname!r}")
        if not targets:
            raise ValueError(f"Candidates file {path}: objective {oname!r} has no targets.")
        among = tuple(entry["among"]) if entry.get("among") else None
        unknown = [a for a in among or () if a not in names]
        if unknown:
            raise ValueError(f"Candidates file {path}: objective {oname!r}: 'among' names no candidate {unknown}.")
        default = entry.get("default")
        if default is not None and (default not in names or (among is not None and default not in among)):
            raise ValueError(
                f"Candidates file {path}: objective {oname!r}: 'default' {default!r} is not a candidate it chooses "
                "between: name one of its 'among' (or of the candidates)."
            )
        objectives.append(Objective(str(oname), str(entry.get("about", "")), tuple(targets), among, default))
    shown = read_targets(spec.get("shown"), "shown")
    diagnostics = []
    for raw in spec.get("diagnostics") or []:
        if not isinstance(raw, Mapping) or not all(raw.get(key) for key in ("method", "metric", "label")):
            raise ValueError(f"Candidates file {path}: each diagnostics entry needs 'method', 'metric' and 'label'.")
        if raw["method"] not in method_names:
            raise ValueError(
                f"Candidates file {path}: diagnostics names {raw['method']!r}, not a method of {spec['methods']}."
            )
        diagnostics.append(Diagnostic(str(raw["method"]), str(raw["metric"]), str(raw["label"])))
    return CandidatesFile(
        path,
        str(spec["methods"]),
        str(spec["paper"]),
        str(spec["setting"]),
        objectives,
        candidates,
        shown,
        diagnostics,
    )


def read_step_values(raw, where: str) -> dict[int, dict[str, float]]:
    """A candidate's ``at_steps``: ``{step: {dotted path: number}}`` with integer steps >= 1 ({} when absent).

    Raises:
        ValueError: Another shape; ``where`` names the candidate.
    """
    if raw is None:
        return {}
    problem = f"{where}: 'at_steps' maps update steps (integers >= 1) to {{dotted config path: number}}"
    if not isinstance(raw, Mapping):
        raise ValueError(f"{problem}, got {raw!r}.")
    values = {}
    for step, entries in raw.items():
        if isinstance(step, bool) or not isinstance(step, int) or step < 1 or not isinstance(entries, Mapping):
            raise ValueError(f"{problem}, got {step!r}: {entries!r}.")
        for key, value in entries.items():
            if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{problem}, got {key!r}: {value!r} at step {step}.")
        values[step] = {str(key): float(value) for key, value in entries.items()}
    return values


def calibration_methods(name: str | Path) -> list[str]:
    """The names of the methods a candidates file's candidates run (its ``methods`` file's)."""
    return [method.name for method in load_methods(resolve_config(load_candidates(name).methods))]


def at_face_value(results: Mapping[str, Mapping]) -> dict[str, dict]:
    """The results with no seed flagged degenerate: J as if such seeds matched by their values."""
    return {method: {k: v for k, v in metrics.items() if k != "degenerate"} for method, metrics in results.items()}


def seed_errors(results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping) -> list[float] | None:
    r"""J_s(c) for each seed s: the mean over ``targets`` of e (see the module's docstring); None if one is unmeasured.

    Args:
        results: method -> metric -> per-seed values (a candidate's comparison), with ``degenerate``
            (per-seed flags: the run predicts one class) where the method has it.
        targets: The objective's terms.
        paper: The paper's row per method: ``{paper_method: {column: value}}``.
    """
    per_target = []
    for target in targets:
        measured = results.get(target.method) or {}
        values = list(measured.get(target.metric) or [])
        if not values or any(v is None for v in values):
            return None
        degenerate = list(measured.get("degenerate") or [False] * len(values))
        reference = paper[target.paper_method][PAPER_COLUMN[target.metric]]
        scale = METRIC_SCALE[target.metric]
        accuracy = target.metric != "cos_similarity"
        per_target.append(
            [
                1.0 if accuracy and flat else abs(v - reference) / scale
                for v, flat in zip(values, degenerate, strict=False)
            ]
        )
    seeds = min(len(errors) for errors in per_target)
    return [statistics.fmean(errors[s] for errors in per_target) for s in range(seeds)]


def objective_value(results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping) -> float:
    """J(c), the mean of :func:`seed_errors` over seeds (inf if a target is unmeasured)."""
    errors = seed_errors(results, targets, paper)
    return math.inf if errors is None else statistics.fmean(errors)


def objective_error(results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping) -> float:
    """The standard error of J(c) over seeds: sd(J_s) / sqrt(S) (inf if unmeasured).

    One seed has no spread to estimate it from: nan, and :func:`told_apart` then tells nothing apart.
    """
    errors = seed_errors(results, targets, paper)
    if errors is None:
        return math.inf
    return statistics.stdev(errors) / math.sqrt(len(errors)) if len(errors) > 1 else math.nan


def targets_met(
    results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping, floors: Mapping[str, float]
) -> list[str]:
    """The ``targets`` a candidate's seed mean meets within the paper's floor, each as "method metric".

    ``floors`` maps a column to its floor's width. A target whose seeds include a degenerate run meets
    nothing on an accuracy (as in J).
    """
    met = []
    for target in targets:
        measured = results.get(target.method) or {}
        values = [v for v in measured.get(target.metric) or [] if v is not None]
        failed = any(measured.get("degenerate") or []) and target.metric != "cos_similarity"
        column = PAPER_COLUMN[target.metric]
        if values and not failed and column in floors:
            if abs(statistics.fmean(values) - paper[target.paper_method][column]) <= floors[column]:
                met.append(f"{target.method} {target.metric}")
    return met


def within_floors(
    results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping, floors: Mapping[str, float]
) -> int:
    """How many ``targets`` a candidate's seed mean meets within the paper's floor (:func:`targets_met`)."""
    return len(targets_met(results, targets, paper, floors))


def told_apart(first: str, second: str, values: Mapping[str, float], errors: Mapping[str, float]) -> bool:
    """Whether J tells two candidates apart: more than two standard errors of their difference between them.

    An unknown error (nan: one seed) or an unmeasured one (inf) tells nothing apart.
    """
    spread = math.hypot(errors[first], errors[second])
    return math.isfinite(spread) and abs(values[first] - values[second]) > 2 * spread


def choose(
    values: Mapping[str, float],
    among: Sequence[str] | None = None,
    default: str | None = None,
    errors: Mapping[str, float] | None = None,
) -> str | None:
    """The argmin of an objective's values over ``among`` (None: all); the first listed on a tie.

    With a ``default`` (and the values' standard ``errors``): the default, unless the argmin is
    told apart from it (:func:`told_apart`). None where no candidate it chooses between has a
    finite value.
    """
    names = [name for name in values if among is None or name in among]
    finite = [name for name in names if math.isfinite(values[name])]
    if not finite:
        return None
    best = min(finite, key=lambda name: values[name])
    if default in finite and errors is not None and not told_apart(best, default, values, errors):
        return default
    return best


@dataclass
class Calibration:
    """What :func:`calibrate` measured: each candidate's results, each objective's values and choice."""

    out: Path
    results: dict[str, dict] = field(default_factory=dict)  # candidate -> method -> metric -> values
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # objective -> candidate -> J
    errors: dict[str, dict[str, float]] = field(default_factory=dict)  # objective -> candidate -> J's standard error
    #: objective -> candidate -> J with degenerate seeds at face value: what a choice owes to the degenerate-run rule.
    face_values: dict[str, dict[str, float]] = field(default_factory=dict)
    face_errors: dict[str, dict[str, float]] = field(default_factory=dict)  # objective -> candidate -> its error
    face_chosen: dict[str, str | None] = field(default_factory=dict)  # objective -> the choice at face value
    chosen: dict[str, str | None] = field(default_factory=dict)  # objective -> candidate
    met: dict[str, tuple[int, int]] = field(default_factory=dict)  # objective -> (targets within the floors, all)
    #: objective -> candidate -> (its targets within the floors, all): what a tie leaves to choose between.
    met_all: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    #: objective -> candidate -> the targets it meets within the floors ("method metric"): what a tie decides.
    met_targets: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    floors: dict[str, float] = field(default_factory=dict)  # column -> the paper's floor (empty: not given)
    tuned: dict[str, dict] = field(default_factory=dict)  # candidate -> method -> the grid values chosen

    def tied(self, objective: str, among: Sequence[str] | None = None) -> list[str]:
        """The candidates J does not tell from the chosen one: within two standard errors of their difference."""
        chosen = self.chosen.get(objective)
        if chosen is None:
            return []
        values, errors = self.values[objective], self.errors[objective]
        return [
            name
            for name in values
            if name != chosen
            and (among is None or name in among)
            and math.isfinite(values[name])
            and not told_apart(name, chosen, values, errors)
        ]


def calibrate(
    configs: Sequence[str | Path | Mapping],
    candidates: str | Path,
    out: str | Path,
    *,
    seeds: int = 5,
    options: CompareOptions | None = None,
    only: Sequence[str] | None = None,
    floors: Mapping[str, float] | None = None,
    overwrite: bool = False,
    build: BuildRun | None = None,
    launcher: Launcher | None = None,
    log: Callable[[str], None] | None = None,
) -> Calibration:
    """Run every candidate's methods on the experiment, then choose each objective's candidate.

    Args:
        configs: The experiment (shipped names, paths or mappings, merged in order).
        candidates: The candidates file (a shipped name or a path).
        out: Output folder (see the module's docstring); finished trials there are reused.
        seeds: Seeds per method and candidate.
        options: How the methods' grids are tuned, as the report's items tune them (its ``seeds``
            replace ``seeds``; ``overwrite`` is this function's own).
        only: Run only these candidates (names as in the file; a quick look, as a smoke test takes).
        floors: The paper's floor per column (``train``, ``test``, ``cos``: the judgement file's
            ``tolerances``): each objective's chosen candidate is then said to meet so many of its
            targets within them (a choice that meets few is a finding: no candidate reproduces the table).
        overwrite: Discard trials in ``out`` whose config changed (else: refuse).
        build: Builds and runs one ``featlearn fit`` (default: the LightningCLI's).
        launcher: Where trials run (default: one after another in this process).
        log: Where progress lines go (default: printed, prefixed ``[calibrate]``).

    Returns:
        The :class:`Calibration`; ``out/calibration.md``, ``.csv`` and ``.json`` hold it.

    Raises:
        ValueError: A bad candidates file, or ``only`` naming no candidate of it.
    """
    log = log or (lambda line: print(f"[calibrate] {line}", flush=True))
    spec = load_candidates(candidates)
    if only is not None:
        unknown = sorted(set(only) - {c.name for c in spec.candidates})
        if unknown:
            raise ValueError(f"only names {unknown}, which are not candidates of {spec.path.name}.")
        spec.candidates = [c for c in spec.candidates if c.name in only]
        spec.objectives = [
            o if o.among is None else replace(o, among=tuple(a for a in o.among if a in only)) for o in spec.objectives
        ]
    out = Path(out)
    paper = {method: row for (setting, method), row in paper_numbers(spec.paper).items() if setting == spec.setting}
    methods = load_methods(resolve_config(spec.methods))
    options = replace(options or CompareOptions(seeds=seeds), overwrite=overwrite)
    calibration = Calibration(out, floors=dict(floors or {}))
    for candidate in spec.candidates:
        log(f"candidate {candidate.name}: {candidate.about}")
        comparison = compare(
            [*configs, *candidate.layers],
            out / "candidates" / candidate.slug,
            build=build or default_build(),
            methods=[replace(method, tune=candidate.tune.get(method.name, method.tune)) for method in methods],
            options=options,
            tune=candidate.tuned,
            launcher=launcher,
            log=lambda line, name=candidate.name: log(f"{name}: {line}"),
        )
        calibration.results[candidate.name] = dict(comparison.results)
        calibration.tuned[candidate.name] = {
            method: dict(choice["values"]) for method, choice in comparison.tuned.items() if choice.get("values")
        }
    for objective in spec.objectives:
        values = {name: objective_value(res, objective.targets, paper) for name, res in calibration.results.items()}
        calibration.values[objective.name] = values
        calibration.errors[objective.name] = {
            name: objective_error(res, objective.targets, paper) for name, res in calibration.results.items()
        }
        calibration.chosen[objective.name] = choose(
            values, objective.among, objective.default, calibration.errors[objective.name]
        )
        face = {
            name: objective_value(at_face_value(res), objective.targets, paper)
            for name, res in calibration.results.items()
        }
        face_errors = {
            name: objective_error(at_face_value(res), objective.targets, paper)
            for name, res in calibration.results.items()
        }
        calibration.face_values[objective.name] = face
        calibration.face_errors[objective.name] = face_errors
        calibration.face_chosen[objective.name] = choose(face, objective.among, objective.default, face_errors)
        chosen = calibration.chosen[objective.name]
        if floors:
            calibration.met_targets[objective.name] = {
                name: targets_met(res, objective.targets, paper, floors) for name, res in calibration.results.items()
            }
            met_targets = calibration.met_targets[objective.name]
            calibration.met_all[objective.name] = {
                name: (len(met), len(objective.targets)) for name, met in met_targets.items()
            }
            if chosen is not None:
                calibration.met[objective.name] = calibration.met_all[objective.name][chosen]
    write_calibration(calibration, spec, paper)
    return calibration


def _mean_std(values: Sequence[float | None] | None) -> tuple[float | None, float | None]:
    """:func:`~featlearn.studies.trials.summarize`'s mean and std over the measured seeds (std 0 for one seed)."""
    mean, std, _ = summarize([v for v in values or [] if v is not None])
    return mean, (0.0 if mean is not None and std is None else std)


def _table_targets(spec: CandidatesFile) -> list[tuple[Target, bool]]:
    """Every target the table draws, once, with whether an objective scores it (else it is only shown)."""
    scored = list(dict.fromkeys(t for objective in spec.objectives for t in objective.targets))
    return [(t, True) for t in scored] + [(t, False) for t in spec.shown if t not in scored]


def _cell(calibration: Calibration, candidate: str, target: Target) -> str:
    """Featlearn's mean ± std of one target, with how many seeds degenerated where any did."""
    measured = calibration.results[candidate].get(target.method) or {}
    mean, std = _mean_std(measured.get(target.metric))
    if mean is None:
        return "NA"
    digits = 3 if target.metric == "cos_similarity" else 1
    flat = sum(bool(f) for f in measured.get("degenerate") or [])
    failed = f" ({flat} degenerate)" if flat and target.metric != "cos_similarity" else ""
    return f"{mean:.{digits}f} ± {std:.{digits}f}{failed}"


def _diagnostic_cell(calibration: Calibration, candidate: str, row: Diagnostic) -> str:
    """The means over seeds of a diagnostic row's keys, ``a · b · ...`` (3 significant digits); ``—`` unmeasured."""
    measured = (calibration.results.get(candidate) or {}).get(row.method) or {}
    means = [summarize([v for v in measured[key] or [] if v is not None])[0] for key in row.keys(measured)]
    return " · ".join("—" if m is None else f"{m:.3g}" for m in means) or "—"


def _tuned_cell(calibration: Calibration, candidate: Candidate) -> str:
    """The grid values chosen for a candidate's methods (``Network: lr_w@3 = 0.001``), or why there are none."""
    if not candidate.tuned:
        return "nothing (untuned: its overlay sets the rates)"
    chosen = calibration.tuned.get(candidate.name) or {}
    return (
        "; ".join(
            f"{method}: " + ", ".join(f"{key.split('.')[-1]} = {value!r}" for key, value in values.items())
            for method, values in chosen.items()
        )
        or "nothing (no grid)"
    )


def calibration_table(calibration: Calibration, spec: CandidatesFile, paper: Mapping) -> list[str]:
    """The Markdown lines of the calibration table: a row per target and per objective, a column per candidate.

    The paper's value stands beside featlearn's mean ± std of each candidate (and how many seeds
    degenerated); a shown target says it scores nothing; the objectives' rows give J ± its
    standard error, the chosen candidate in bold, and in parentheses a candidate the objective does
    not choose between.
    """
    head = ["Method: metric", "the paper", *(c.name for c in spec.candidates)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for target, scored in _table_targets(spec):
        label = target.label if scored else f"{target.label} (shown, not scored)"
        cells = [label, f"{paper[target.paper_method][PAPER_COLUMN[target.metric]]:g}"]
        cells += [_cell(calibration, candidate.name, target) for candidate in spec.candidates]
        lines.append("| " + " | ".join(cells) + " |")
    for row in spec.diagnostics:  # featlearn's own measurements: no paper value, no score
        cells = [f"{row.method}: {row.label} (featlearn's diagnostic)", "—"]
        cells += [_diagnostic_cell(calibration, candidate.name, row) for candidate in spec.candidates]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "| tuned on the validation set | | " + " | ".join(_tuned_cell(calibration, c) for c in spec.candidates) + " |"
    )
    for objective in spec.objectives:
        cells = [f"**J: {objective.name}**", ""]
        for candidate in spec.candidates:
            value = calibration.values[objective.name][candidate.name]
            error = calibration.errors[objective.name][candidate.name]
            if not math.isfinite(value):
                text = "inf"
            else:
                text = f"{value:.3f} ± {error:.3f}" if math.isfinite(error) else f"{value:.3f} (one seed: no error)"
            among = objective.among is None or candidate.name in objective.among
            cells.append(
                f"**{text} (chosen)**"
                if calibration.chosen[objective.name] == candidate.name
                else (text if among else f"({text})")
            )
        lines.append("| " + " | ".join(cells) + " |")
        if calibration.floors:  # how many of the objective's numbers each candidate meets within the paper's floors
            counts = [
                within_floors(calibration.results[c.name], objective.targets, paper, calibration.floors)
                for c in spec.candidates
            ]
            lines.append(
                f"| {objective.name}: numbers within the paper's floors | | "
                + " | ".join(f"{k} of {len(objective.targets)}" for k in counts)
                + " |"
            )
        # What the choice owes to the degenerate-run rule: J with those seeds taken at face value.
        face = [calibration.face_values[objective.name][c.name] for c in spec.candidates]
        lines.append(
            f"| J: {objective.name}, degenerate seeds at face value | | "
            + " | ".join(f"{v:.3f}" if math.isfinite(v) else "inf" for v in face)
            + " |"
        )
    return lines


def write_calibration(calibration: Calibration, spec: CandidatesFile, paper: Mapping) -> None:
    """Write ``calibration.csv``, ``calibration.json`` and ``calibration.md`` into ``calibration.out``."""
    out = calibration.out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "calibration.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "candidate",
                "method",
                "metric",
                "scored",
                "mean",
                "std",
                "n_seeds",
                "degenerate_seeds",
                "paper_method",
                "paper",
            ]
        )
        for candidate in spec.candidates:
            for target, scored in _table_targets(spec):
                measured = calibration.results[candidate.name].get(target.method) or {}
                values = measured.get(target.metric) or []
                mean, std = _mean_std(values)
                writer.writerow(
                    [
                        candidate.name,
                        target.method,
                        target.metric,
                        scored,
                        mean,
                        std,
                        len([v for v in values if v is not None]),
                        sum(bool(f) for f in measured.get("degenerate") or []),
                        target.paper_method,
                        paper[target.paper_method][PAPER_COLUMN[target.metric]],
                    ]
                )
    summary = {
        "candidates_file": spec.path.name,
        "setting": spec.setting,
        "objectives": {
            o.name: {
                "about": o.about,
                "among": None if o.among is None else list(o.among),
                "values": {k: (v if math.isfinite(v) else None) for k, v in calibration.values[o.name].items()},
                "errors": {k: (v if math.isfinite(v) else None) for k, v in calibration.errors[o.name].items()},
                "default": o.default,
                "argmin": choose(calibration.values[o.name], o.among),
                "chosen": calibration.chosen[o.name],
                "tied": calibration.tied(o.name, o.among),
                "within_floors": list(calibration.met[o.name]) if o.name in calibration.met else None,
                "chosen_at_face_value": calibration.face_chosen[o.name],
            }
            for o in spec.objectives
        },
        "candidates": {
            c.name: {
                "about": c.about,
                "overlay": c.overlay,
                "at_steps": c.at_steps,
                "tuned": (calibration.tuned.get(c.name) if c.tuned else None),
            }
            for c in spec.candidates
        },
    }
    (out / "calibration.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [
        f"Calibration on {spec.setting} ({spec.path.name}): each candidate's methods, their grids tuned on the "
        "validation set as the report's items tune them (the row 'tuned on the validation set'), "
        "mean ± std over seeds.",
        "J is the mean over seeds and targets of |featlearn - paper| (accuracies / 100; a seed that degenerated, "
        "DegenerateRuns: one class predicted or the loss grown by orders of magnitude, counts 1 on an accuracy), "
        "± its standard error over seeds; featlearn's "
        "validation accuracy stands for the paper's test accuracy. A value in parentheses is a candidate that "
        "objective does not choose between. The rows 'degenerate seeds at face value' give J as if such seeds "
        "matched by their values: what a choice owes to that rule.",
        "",
        *calibration_table(calibration, spec, paper),
        "",
    ]
    for objective in spec.objectives:
        tied = calibration.tied(objective.name, objective.among)
        apart = f" Not told apart from it (within two standard errors): {', '.join(tied)}." if tied else ""
        if objective.name in calibration.met:
            met, total = calibration.met[objective.name]
            apart += f" It meets {met} of the {total} numbers within the paper's floors."
        chosen = calibration.chosen[objective.name]
        smallest = choose(calibration.values[objective.name], objective.among)
        if objective.default is not None and chosen == objective.default and smallest != chosen:
            chosen += (
                f", the objective's default (the candidates file's reading of the paper's process; the paper states "
                "no values), which J does not tell apart from the "
                f"smallest, {smallest}'s"
            )
        lines.append(f"- **{objective.name}**: {objective.about} Chosen: {chosen}.{apart}")
    lines.append("")
    lines += [f"- *{c.name}*: {c.about}" for c in spec.candidates]
    (out / "calibration.md").write_text("\n".join(lines) + "\n")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The ``featlearn calibrate`` options."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="featlearn calibrate",
        description="Run each candidate choice of a paper's open constants on one table and choose, by a "
        "stated objective, the candidate the other tables are then predicted with.",
    )
    parser.add_argument("--config", action="append", required=True, help="The experiment (repeatable, as in fit).")
    parser.add_argument("--candidates", required=True, help="Candidates file: a shipped name or a path.")
    parser.add_argument("--out", required=True, help="Output folder DIR.")
    parser.add_argument("--seeds", type=int, default=5, help="Seeds per method and candidate (default: 5).")
    parser.add_argument("--overwrite", action="store_true", help="Discard trials in DIR whose config changed.")
    return parser.parse_args(argv)


def calibrate_command(argv: list[str], build: BuildRun) -> Calibration:
    """``featlearn calibrate ...``: :func:`calibrate`, then each objective's chosen candidate."""
    args = parse_args(argv)
    if args.seeds < 1:
        raise ValueError(f"{cli_flag('seeds')} must be >= 1, got {args.seeds}.")
    calibration = calibrate(
        args.config, args.candidates, args.out, seeds=args.seeds, overwrite=args.overwrite, build=build
    )
    for objective, chosen in calibration.chosen.items():
        print(f"{objective}: {chosen}")
    print(f"Table: {Path(args.out) / 'calibration.md'}")
    return calibration
