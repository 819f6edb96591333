r"""``featlearn calibrate``: the constants a paper leaves open, chosen once on one table.

A paper that states its process but not all of its constants (Shi et al.'s step sizes and
decays, Section 3.1: "for some choice of the hyperparameters") leaves a reproduction free
to choose them. Chosen per table, they would fit every table and predict none. This study
chooses them **once**, on one table, by a stated objective, and the other tables are then
predictions at the chosen constants.

**The candidates file** (``featlearn calibrate --candidates NAME``; shipped:
``calibration/shi_table1``) names:

* ``methods``: the methods file whose methods every candidate runs, untuned (a candidate
  *is* a choice of constants: a grid on top of it would be a second calibration);
* ``paper``, ``setting``: where the paper's numbers are (its table file, one setting);
* ``objectives``: name -> ``targets`` (``{method, metric, paper_method}``: featlearn's
  method and metric against the paper's value of ``paper_method``'s column) and, optionally,
  ``among`` (the candidates it chooses between; default all);
* ``candidates``: name -> ``about`` (one line) and ``overlay`` (overrides of the experiment
  config, merged after it as a further ``--config`` is).

**The objective** of a candidate c is the mean absolute error over its targets,

.. math::

    J(c) = \frac{1}{|T|} \sum_{(m, q) \in T} \frac{|\bar x_{m,q}(c) - x^{paper}_{m,q}|}{s_q},
    \qquad s_q = 100 \text{ for accuracies (percent)}, \; 1 \text{ for cosines},

with :math:`\bar x_{m,q}(c)` the mean over seeds. Accuracies the paper reports on its test
set are matched by featlearn's *validation* accuracy (``val_acc``), so the choice never
reads the test set. A candidate with a target it did not measure has J = inf. The chosen
candidate of an objective is its argmin (the first listed on a tie).

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
from featlearn.studies.methods import load_methods
from featlearn.studies.plan import COLUMNS, paper_numbers
from featlearn.studies.trials import BuildRun, Launcher, cli_flag, default_build, load_yaml
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
    """A named objective: its targets, and the candidates it chooses between (None: all)."""

    name: str
    about: str
    targets: tuple[Target, ...]
    among: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Candidate:
    """One choice of the open constants: an overlay of the experiment config."""

    name: str
    about: str
    overlay: dict

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
    for cname, entry in spec["candidates"].items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("overlay"), Mapping) or not entry.get("about"):
            raise ValueError(f"Candidates file {path}: candidate {cname!r} needs 'about' and an 'overlay' mapping.")
        candidates.append(Candidate(str(cname), str(entry["about"]), dict(entry["overlay"])))
    names = {c.name for c in candidates}
    slugs = [c.slug for c in candidates]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"Candidates file {path}: candidate names must differ in letters and digits: {slugs}.")
    paper = paper_numbers(spec["paper"])
    objectives = []
    for oname, entry in spec["objectives"].items():
        targets = []
        for raw in entry.get("targets") or []:
            target = Target(raw["method"], raw["metric"], raw.get("paper_method", raw["method"]))
            if target.metric not in METRIC_SCALE:
                raise ValueError(
                    f"Candidates file {path}: objective {oname!r}: metric {target.metric!r} is not one of "
                    f"{sorted(METRIC_SCALE)}."
                )
            row = paper.get((spec["setting"], target.paper_method))
            if row is None or row.get(PAPER_COLUMN[target.metric]) is None:
                raise ValueError(
                    f"Candidates file {path}: objective {oname!r}: the paper's table has no "
                    f"{PAPER_COLUMN[target.metric]!r} for {target.paper_method!r} in {spec['setting']!r}."
                )
            targets.append(target)
        if not targets:
            raise ValueError(f"Candidates file {path}: objective {oname!r} has no targets.")
        among = tuple(entry["among"]) if entry.get("among") else None
        unknown = [a for a in among or () if a not in names]
        if unknown:
            raise ValueError(f"Candidates file {path}: objective {oname!r}: 'among' names no candidate {unknown}.")
        objectives.append(Objective(str(oname), str(entry.get("about", "")), tuple(targets), among))
    return CandidatesFile(path, str(spec["methods"]), str(spec["paper"]), str(spec["setting"]), objectives, candidates)


def objective_value(results: Mapping[str, Mapping], targets: Sequence[Target], paper: Mapping) -> float:
    r"""J(c): the mean over ``targets`` of \|featlearn's seed mean - the paper's value\| / s_q (inf if one is missing).

    Args:
        results: method -> metric -> per-seed values (a candidate's comparison).
        targets: The objective's terms.
        paper: The paper's row per method: ``{paper_method: {column: value}}``.
    """
    errors = []
    for target in targets:
        values = [v for v in (results.get(target.method) or {}).get(target.metric) or [] if v is not None]
        if not values:
            return math.inf
        reference = paper[target.paper_method][PAPER_COLUMN[target.metric]]
        errors.append(abs(statistics.fmean(values) - reference) / METRIC_SCALE[target.metric])
    return statistics.fmean(errors)


def choose(values: Mapping[str, float], among: Sequence[str] | None = None) -> str | None:
    """The argmin of an objective's values over ``among`` (None: all); the first listed on a tie.

    None where no candidate it chooses between has a finite value.
    """
    names = [name for name in values if among is None or name in among]
    finite = [name for name in names if math.isfinite(values[name])]
    return min(finite, key=lambda name: values[name]) if finite else None


@dataclass
class Calibration:
    """What :func:`calibrate` measured: each candidate's results, each objective's values and choice."""

    out: Path
    results: dict[str, dict] = field(default_factory=dict)  # candidate -> method -> metric -> values
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # objective -> candidate -> J
    chosen: dict[str, str | None] = field(default_factory=dict)  # objective -> candidate


def calibrate(
    configs: Sequence[str | Path | Mapping],
    candidates: str | Path,
    out: str | Path,
    *,
    seeds: int = 5,
    only: Sequence[str] | None = None,
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
        only: Run only these candidates (names as in the file; a quick look, as a smoke test takes).
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
    calibration = Calibration(out)
    for candidate in spec.candidates:
        log(f"candidate {candidate.name}: {candidate.about}")
        comparison = compare(
            [*configs, candidate.overlay],
            out / "candidates" / candidate.slug,
            build=build or default_build(),
            methods=methods,
            options=CompareOptions(seeds=seeds, overwrite=overwrite),
            tune=False,
            launcher=launcher,
            log=lambda line, name=candidate.name: log(f"{name}: {line}"),
        )
        calibration.results[candidate.name] = dict(comparison.results)
    for objective in spec.objectives:
        values = {name: objective_value(res, objective.targets, paper) for name, res in calibration.results.items()}
        calibration.values[objective.name] = values
        calibration.chosen[objective.name] = choose(values, objective.among)
    write_calibration(calibration, spec, paper)
    return calibration


def _mean_std(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    clean = [v for v in values or [] if v is not None]
    if not clean:
        return None, None
    return statistics.fmean(clean), (statistics.stdev(clean) if len(clean) > 1 else 0.0)


def calibration_table(calibration: Calibration, spec: CandidatesFile, paper: Mapping) -> list[str]:
    """The Markdown lines of the calibration table: a row per target and per objective, a column per candidate.

    The paper's value stands beside featlearn's mean ± std of each candidate; the objectives' rows give
    J, the chosen candidate in bold, and in parentheses a candidate the objective does not choose between.
    """
    targets = list(dict.fromkeys(t for objective in spec.objectives for t in objective.targets))
    head = ["Method: metric", "the paper", *(c.name for c in spec.candidates)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for target in targets:
        digits = 3 if target.metric == "cos_similarity" else 1
        cells = [target.label, f"{paper[target.paper_method][PAPER_COLUMN[target.metric]]:g}"]
        for candidate in spec.candidates:
            mean, std = _mean_std((calibration.results[candidate.name].get(target.method) or {}).get(target.metric))
            cells.append("NA" if mean is None else f"{mean:.{digits}f} ± {std:.{digits}f}")
        lines.append("| " + " | ".join(cells) + " |")
    for objective in spec.objectives:
        cells = [f"**J: {objective.name}**", ""]
        for candidate in spec.candidates:
            value = calibration.values[objective.name][candidate.name]
            text = f"{value:.3f}" if math.isfinite(value) else "inf"
            among = objective.among is None or candidate.name in objective.among
            cells.append(
                f"**{text} (chosen)**"
                if calibration.chosen[objective.name] == candidate.name
                else (text if among else f"({text})")
            )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_calibration(calibration: Calibration, spec: CandidatesFile, paper: Mapping) -> None:
    """Write ``calibration.csv``, ``calibration.json`` and ``calibration.md`` into ``calibration.out``."""
    out = calibration.out
    out.mkdir(parents=True, exist_ok=True)
    targets = list(dict.fromkeys(t for objective in spec.objectives for t in objective.targets))
    with open(out / "calibration.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["candidate", "method", "metric", "mean", "std", "n_seeds", "paper_method", "paper"])
        for candidate in spec.candidates:
            for target in targets:
                values = (calibration.results[candidate.name].get(target.method) or {}).get(target.metric) or []
                mean, std = _mean_std(values)
                writer.writerow(
                    [
                        candidate.name,
                        target.method,
                        target.metric,
                        mean,
                        std,
                        len([v for v in values if v is not None]),
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
                "chosen": calibration.chosen[o.name],
            }
            for o in spec.objectives
        },
        "candidates": {c.name: {"about": c.about, "overlay": c.overlay} for c in spec.candidates},
    }
    (out / "calibration.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [
        f"Calibration on {spec.setting} ({spec.path.name}): each candidate's methods, untuned, mean ± std over seeds.",
        "J is the mean |featlearn - paper| over an objective's targets (accuracies / 100); "
        "featlearn's validation accuracy stands for the paper's test accuracy. A value in parentheses "
        "is a candidate that objective does not choose between.",
        "",
        *calibration_table(calibration, spec, paper),
        "",
    ]
    for objective in spec.objectives:
        lines.append(f"- **{objective.name}**: {objective.about} Chosen: {calibration.chosen[objective.name]}.")
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
