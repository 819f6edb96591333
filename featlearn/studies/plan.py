"""A paper's reproduction plan and its numbers: what ``featlearn reproduce`` runs and judges against.

The plan (``configs/reproduce/<paper>.yaml``) lists the paper's items and, per scale, the
seeds and methods; the paper's numbers ship in ``featlearn/papers/<paper>.csv`` and the rules
of judgement (floors, known reasons, claims) in ``featlearn/papers/<paper>.yaml``.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from featlearn.config_files import resolve_config
from featlearn.studies.trials import Launcher, load_yaml

#: The papers a plan ships for: name -> plan file (a shipped config name).
PAPERS = {"shi2022": "reproduce/shi2022", "glasgow2023": "reproduce/glasgow2023", "barak2022": "reproduce/barak2022"}
SCALES = ("smoke", "cpu", "full")
#: Metric columns of the paper's table file and of the report: (column, compare's metric, label, decimals).
COLUMNS = (
    ("train", "train_acc", "Train Acc (%)", 2),
    ("test", "test_acc", "Test Acc (%)", 2),
    ("cos", "cos_similarity", "Cos Similarity", 3),
    ("centres", "centre_coverage", "Centres found", 3),
    ("steps to 90% test", "steps_to_accuracy", "First step every seed tests >= 90% (from the logged minimum)", 0),
    ("within-group cos", "cluster_cos", "Within-group cos (k-means, 2 groups)", 3),
    ("within-group cos at step 0", "cluster_cos_start", "Within-group cos at step 0", 3),
    ("centre cos", "centre_cos", "Cos between the 2 group centres", 3),
    ("centre cos at step 0", "centre_cos_start", "Cos between the 2 group centres at step 0", 3),
    ("class-mean cos", "class_mean_cos", "Mean cos of each neuron to its nearest class mean", 3),
    ("class-mean cos at step 0", "class_mean_cos_start", "Mean cos to the nearest class mean at step 0", 3),
    ("affine in s", "count_affine_residual", "Mean output's distance from affine in the count s (0: a line)", 3),
    ("worst count", "count_acc_min", "Lowest test accuracy over the counts s (%)", 1),
    ("active units", "units_active_share", "Hidden units that fire on some training input (%)", 1),
    ("silent inputs", "units_silent_inputs", "Training inputs on which no unit fires, f = 0 (%)", 1),
    ("mean ||w_j||", "units_w_norm", "Mean norm of the first layer's neurons", 3),
    ("least early-gradient cos", "early_gradient_min_cos", "Table 7: smallest early-gradient cos (member 0)", 3),
    ("filter change 0-3", "filter_change_early", "Filter change, epochs 0-3: 1 - cos (member 0)", 3),
    ("filter change 3-20", "filter_change_late", "Filter change, epochs 3-20: 1 - cos (member 0)", 3),
    ("original", "part_original", "Original part (%)", 2),
    ("injected", "part_injected", "Injected part (%)", 2),
    ("gap", "part_gap", "Original - injected (points)", 2),
    ("alpha", "alpha", "Exponent alpha (n* ~ d^alpha)", 2),
    ("log_power", "log_power", "Power k of log d (n* ~ d log^k d)", 2),
    ("boundary", "boundary_step", "Signal finding ends (step)", 1),
    ("margin", "margin_step", "gamma_min reaches its target (step)", 1),
    ("gamma", "final_gamma_min", "gamma_min at the end", 3),
    ("growth", "heavy_growth", "Growth of ||w_sig|| on S: log(RSS lin / RSS exp)", 2),
    ("growth_rate", "growth_rate_ratio", "log-growth of ||w_sig|| on S / sum of eta tau |l'| (Section 4.1.1)", 2),
    ("outside_mass", "outside_mass_change", "Mass share outside S: change over the phase", 3),
    ("linear_rate", "linear_rate_ratio", "growth of ||w_sig|| on S / sum of eta tau |l'| (Remark 4.3)", 2),
    ("margin_rate", "margin_rate_ratio", "log-growth of gamma_min / sum of log(1 + 2 eta tau g_max) (Lemma 4.4)", 2),
    ("exp_log", "log_exponent", "Exponent of L(d)", 2),
    ("exp_eta", "eta_exponent", "Exponent of eta", 2),
    ("theta_slope", "theta_slope", "Slope c of T = c L(d)/eta + b (steps)", 3),
    ("form_error", "form_error", "Claimed form's error predicting the largest d (log or relative)", 3),
    ("loss_decay", "loss_decay", "c of the test loss ~ (log d)^(-c) at the stopping time", 2),
    ("minimum", "log2_student_minimum", "Students' U-curve minimum (log2 m)", 2),
    ("transition", "transition_step", "Transition step t_c (test error stays <= 5%)", 0),
    ("learned", "learned_share", "Seeds that learned within the run's steps (%)", 0),
    ("n_exponent", "n_exponent", "Exponent a of t_c ~ n^a", 2),
    ("plateau_share", "plateau_share", "Plateau share t_p / t_c (last step at chance / transition)", 2),
    ("share_gain", "support_share_gain", "Share of mass on S at the plateau's end / at step 0", 2),
    ("width_exponent", "width_exponent", "Exponent b of t_c ~ width^b", 2),
    ("log_spread", "log_spread", "Spread of log t_c over seeds (std)", 2),
    ("gap_start", "gradient_gap_start", "Fourier gap at step 0: RMS gradient on S / off S", 2),
    ("gap_plateau", "gradient_gap_at_plateau", "Fourier gap at the plateau's end", 2),
)
#: Item kinds: what command an item runs.
KINDS = ("compare", "samples", "phases", "transitions", "teacher_check", "calibration")
#: A ``teacher_check`` item's row of the sizes Algorithm 1's own sweep chooses (its minimum, log2 m).
TEACHER_SWEEP = "teacher sweep (Algorithm 1)"
#: The test accuracy (percent) whose first step an item with ``speed: true`` measures per method.
SPEED_ACCURACY = 90.0
#: The row of every compare item's table that holds its sets' trivial rates (always predicting the commonest class).
TRIVIAL_ROW = "Trivial (majority class)"


# ---------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class RunSettings:
    """How a plan's items run: the scale, and what the report command passes to each study.

    Args:
        scale: ``smoke``, ``cpu`` or ``full`` (the plan's preset sizes).
        overwrite: Discard results whose config changed (else: refuse).
        grid_members: compare's ``grid_members`` (None: compare's default).
        data_root: The folder of the real data sets a user placed (None: the configs' roots).
        launcher: Where trials run (its folder is set per item).
        only: The items a partial report runs (ids; None: every item of the plan).
    """

    scale: str = "cpu"
    overwrite: bool = False
    grid_members: int | None = None
    data_root: str | Path | None = None
    launcher: Launcher = field(default_factory=Launcher)
    only: tuple[str, ...] | None = None


@dataclass
class Item:
    """One experiment of a paper's plan, run as a ``featlearn compare``."""

    id: str
    title: str
    configs: list[str]
    #: The paper's setting (the ``setting`` column of its table file); None: no numbers to compare.
    setting: str | None = None
    methods: str | None = None
    #: compare's ``--only``: a list, or scale -> list.
    only: list[str] | dict[str, list[str]] | None = None
    #: The paper's figures this item's pictures correspond to.
    figures: str = ""
    #: scale -> overrides of the experiment (a mapping in the config's shape); a scale not named runs as is.
    scales: dict[str, dict] = field(default_factory=dict)
    #: Scales that leave this item out, with why.
    skip: dict[str, str] = field(default_factory=dict)
    #: The item reads data files a user places: ``--data-root`` sets its ``data.init_args.root``.
    needs_files: bool = False
    #: Further data arguments ``--data-root`` sets: argument -> a path under the root
    #: (e.g. ``injected_root: tiny-imagenet-200/train``).
    data_paths: dict[str, str] = field(default_factory=dict)
    #: ``compare`` (a table of methods), ``samples`` (n*(d) per method, :mod:`featlearn.studies.samples`),
    #: ``phases`` (a compare over (d, eta) settings whose phase lengths are fitted, :mod:`featlearn.studies.phases`)
    #: or ``teacher_check`` (students' U-curves under teachers of several sizes, Shi et al.'s Figure 26,
    #: :mod:`featlearn.studies.teacher_check`).
    kind: str = "compare"
    #: A ``samples`` item's study file, or a ``calibration`` item's candidates file (a shipped name or a path).
    study: str | None = None
    #: The objective of the plan's ``calibration`` item whose chosen candidate sets this item's open
    #: constants (its overlay is merged after the item's configs, before the scale's sizes): the item is
    #: *calibrated* where it runs on the calibration's table (its setting, or its configs and sizes, are the
    #: calibration item's), else *predicted* at those constants.
    constants: str | None = None
    #: scale -> keyword arguments of the item's study function (e.g. ``{"dims": [8, 16]}`` for
    #: :func:`~featlearn.studies.samples.samples`, ``{"teacher_sizes": "chosen,50"}`` for
    #: :func:`~featlearn.studies.teacher_check.teacher_check`).
    options: dict[str, dict] = field(default_factory=dict)
    #: A compare item measures how fast each method learns: the first logged step at which every
    #: seed tests at :data:`SPEED_ACCURACY` or more (``steps to 90% test``; a paper's "learns the fastest").
    speed: bool = False
    #: A diagnostic of featlearn's own (a sweep, other constants than the protocol's, an offline stand-in
    #: for the paper's data) judged against the paper's cells for what it shows: its verdicts stand under
    #: the item but are not among the headline's, which count the paper's protocol only.
    diagnostic: bool = False
    #: A choice of featlearn's process made on this item's own table, not taken from the calibration:
    #: ``{"why": the choice and what it was chosen to fit, "cells": [[method, column], ...]}``. A ✓ of
    #: one of those cells holds by construction (the choice was made to get it), and the report's
    #: line on the item's constants names the choice.
    fitted_here: dict = field(default_factory=dict)
    notes: str = ""

    @property
    def slug(self) -> str:
        """A folder name: ``E.2.1 d=100`` -> ``e_2_1_d_100``."""
        return re.sub(r"[^a-z0-9]+", "_", self.id.lower()).strip("_")


@dataclass
class Plan:
    """A paper's plan: its items and each scale's seeds and methods file."""

    paper: str
    title: str
    scales: dict[str, dict]
    items: list[Item]
    text: str

    @property
    def digest(self) -> str:  # noqa: D102
        return hashlib.sha256(self.text.encode()).hexdigest()


def load_plan(paper: str) -> Plan:
    """Read the shipped plan of ``paper``.

    Raises:
        ValueError: An unknown paper, or a malformed plan (the message names the entry).
    """
    if paper not in PAPERS:
        raise ValueError(f"--paper {paper!r} has no reproduction plan; choose one of {sorted(PAPERS)}.")
    path = resolve_config(PAPERS[paper])
    content = load_yaml(path, "the plan")
    scales = content.get("scales") or {}
    if set(scales) != set(SCALES):
        raise ValueError(f"Plan {path}: 'scales' must define {list(SCALES)}, got {sorted(scales)}.")
    for name, scale in scales.items():  # compare's own rule, said in the plan's words
        tune_seeds = scale.get("tune_seeds")
        if tune_seeds is not None and not (isinstance(tune_seeds, int) and 1 <= tune_seeds <= scale.get("seeds", 0)):
            raise ValueError(
                f"Plan {path}: scale {name!r}: tune_seeds must be an integer between 1 and its seeds "
                f"({scale.get('seeds')}), got {tune_seeds!r}."
            )
        halving = scale.get("halving")
        if halving is not None and not (isinstance(halving, int) and not isinstance(halving, bool) and halving >= 2):
            raise ValueError(
                f"Plan {path}: scale {name!r}: halving must be an integer >= 2 (successive halving's reduction "
                f"factor), got {halving!r}."
            )
        only = scale.get("halving_only")
        if only is not None and not (halving and isinstance(only, list) and all(isinstance(n, str) for n in only)):
            raise ValueError(
                f"Plan {path}: scale {name!r}: halving_only must be a list of method names, with halving set."
            )
    items = []
    for entry in content.get("items") or []:
        known = {f for f in Item.__dataclass_fields__}
        unknown = set(entry) - known
        if unknown or "id" not in entry or "configs" not in entry:
            raise ValueError(f"Plan {path}: item {entry.get('id')!r} needs id and configs; unknown keys {unknown}.")
        item = Item(**{**entry, "title": entry.get("title", entry["id"])})
        if item.kind not in KINDS or (item.kind in ("samples", "calibration") and not item.study):
            raise ValueError(
                f"Plan {path}: item {item.id!r} needs kind in {KINDS} (samples and calibration: with a study)."
            )
        if not isinstance(item.speed, bool) or (item.speed and item.kind != "compare"):
            raise ValueError(
                f"Plan {path}: item {item.id!r}: speed must be true or false, and true only on a compare item; "
                f"got {item.speed!r} on a {item.kind!r} item."
            )
        if not isinstance(item.diagnostic, bool):
            raise ValueError(
                f"Plan {path}: item {item.id!r}: diagnostic must be true or false, got {item.diagnostic!r}."
            )
        if isinstance(item.only, dict) and not set(item.only) <= set(SCALES):
            raise ValueError(
                f"Plan {path}: item {item.id!r}: 'only' by scale names {sorted(set(item.only) - set(SCALES))}; "
                f"its keys must be scales, {list(SCALES)}."
            )
        fitted = item.fitted_here
        if fitted and not (
            isinstance(fitted, dict)
            and set(fitted) == {"why", "cells"}
            and isinstance(fitted["why"], str)
            and fitted["why"].strip()
            and isinstance(fitted["cells"], list)
            and fitted["cells"]
            and all(
                isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in fitted["cells"]
            )
        ):
            raise ValueError(
                f"Plan {path}: item {item.id!r}: fitted_here must be {{why: the choice, cells: [[method, column], "
                f"...]}} with at least one cell; got {fitted!r}."
            )
        paths = item.data_paths
        if paths and (
            not item.needs_files
            or not isinstance(paths, dict)
            or not all(
                isinstance(k, str) and isinstance(v, str) and v and not Path(v).is_absolute() for k, v in paths.items()
            )
        ):
            raise ValueError(
                f"Plan {path}: item {item.id!r}: data_paths must map data arguments to paths relative to "
                f"--data-root, on an item with needs_files: true; got {paths!r}."
            )
        items.append(item)
    ids = [item.slug for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"Plan {path}: item ids must differ in letters and digits: {ids}.")
    check_constants(items, path)
    return Plan(paper, content.get("title", paper), scales, items, path.read_text())


def calibration_item(items: Sequence[Item]) -> Item | None:
    """The plan's ``calibration`` item (a plan has at most one), or None."""
    return next((item for item in items if item.kind == "calibration"), None)


def check_constants(items: Sequence[Item], path: Path) -> None:
    """Refuse a plan whose ``constants`` entries have no calibration item before them to come from.

    The calibration runs first: an item that takes its constants must come after it, and name one of
    its objectives.

    Raises:
        ValueError: Two calibration items, a ``constants`` without one before it, or an unknown objective.
    """
    calibrations = [i for i, item in enumerate(items) if item.kind == "calibration"]
    if len(calibrations) > 1:
        raise ValueError(f"Plan {path}: at most one calibration item, got {[items[i].id for i in calibrations]}.")
    objectives = None
    for position, item in enumerate(items):
        if item.constants is None:
            continue
        if not calibrations or position < calibrations[0]:
            raise ValueError(
                f"Plan {path}: item {item.id!r} takes constants {item.constants!r}, but no calibration item comes "
                "before it: list the calibration item first."
            )
        if objectives is None:
            spec = load_yaml(resolve_config(items[calibrations[0]].study), "the calibration's candidates file")
            objectives = dict(spec.get("objectives") or {})
        if item.constants not in objectives:
            raise ValueError(
                f"Plan {path}: item {item.id!r}: constants {item.constants!r} is not an objective of the "
                f"calibration item ({sorted(objectives)})."
            )
        # An item carries a candidate's overlay, not its grids: it tunes its own methods file's grids, so a
        # candidate with grids of its own ('tune') or none ('tuned: false') can be shown, not chosen for it.
        candidates = spec.get("candidates") or {}
        among = objectives[item.constants].get("among") or list(candidates)
        entries = {name: candidates.get(name) or {} for name in among}
        own = [name for name, entry in entries.items() if entry.get("tune") or entry.get("tuned") is False]
        if own:
            raise ValueError(
                f"Plan {path}: item {item.id!r}: objective {item.constants!r} chooses among {own}, whose grids are "
                "their own ('tune' or 'tuned: false'); items tune their methods file's grids: leave them out of "
                "its 'among'."
            )


# ---------------------------------------------------------------------- the paper's numbers
def paper_numbers(paper: str) -> dict[tuple[str, str], dict]:
    """The paper's values: (setting, method) -> {column: float | None, "source": str}."""
    text = (resources.files("featlearn") / "papers" / f"{paper}.csv").read_text()
    table = {}
    for row in csv.DictReader(text.splitlines()):
        values = {column: _number(row.get(column)) for column, _, _, _ in COLUMNS}
        relation = (row.get("relation") or "=").strip()
        table[row["setting"], row["method"]] = {**values, "relation": relation, "source": row.get("source", "")}
    return table


#: The judgement file's lists of entries and the keys each entry must have (``cells`` or ``not_measured``: a claim's).
RULE_ENTRIES = {
    "claims": ("id", "place", "words"),
    "by_construction": ("setting", "method", "metric", "why"),
    "undecidable": ("setting", "method", "metric", "why"),
    "rivals": ("setting", "method", "metric", "form", "value"),
    "forms": ("setting", "method", "metric", "form"),
}
#: What a claim's cell pattern may name.
CELL_PATTERN_KEYS = {"item", "method", "metric"}


def judgement_rules(paper: str) -> dict:
    """The paper's judgement file (``featlearn/papers/<paper>.yaml``): floors, reasons, claims, relations, ...

    Raises:
        ValueError: An entry of ``claims``, ``by_construction``, ``undecidable`` or ``rivals``
            that lacks a key, a claim with neither cells nor ``not_measured``, a cell pattern with
            an unknown key, or two claims with one id; naming the file and the entry.
    """
    rules = yaml.safe_load((resources.files("featlearn") / "papers" / f"{paper}.yaml").read_text())
    check_rule_entries(rules, f"featlearn/papers/{paper}.yaml")
    return rules


def check_rule_entries(rules: dict, where: str) -> None:
    """Refuse a malformed entry of a judgement file's lists (see :func:`judgement_rules`)."""
    for name, keys in RULE_ENTRIES.items():
        for index, entry in enumerate(rules.get(name) or []):
            missing = [key for key in keys if key not in (entry or {})]
            if missing:
                raise ValueError(f"{where}: {name}[{index}] lacks {', '.join(missing)}: give each entry {keys}.")
    # A relation's cell is named "relation: <its words>" (judgement.RELATION_PREFIX); "claim: " was its name before
    # claims became a report's headline, and a pattern written so would never match a cell.
    for name in ("reasons", "rivals", "by_construction", "undecidable", "forms"):
        for index, entry in enumerate(rules.get(name) or []):
            if str((entry or {}).get("method", "")).startswith("claim: "):
                raise ValueError(
                    f"{where}: {name}[{index}] names the method {entry['method']!r}: a relation's cells are "
                    f"'relation: <its words>' now; write 'relation: ' for 'claim: '."
                )
    for name in ("by_construction", "reasons", "rivals"):  # entries that hold under some processes only
        for index, entry in enumerate(rules.get(name) or []):
            processes = (entry or {}).get("processes")
            if processes is not None and not (
                isinstance(processes, list) and processes and all(isinstance(p, str) for p in processes)
            ):
                raise ValueError(
                    f"{where}: {name}[{index}] has processes {processes!r}: give a list of candidate-name "
                    "patterns, e.g. [\"erasing*\", \"(the experiment's own)\"], or leave it out (every process)."
                )
    for key in ("diagnostic_methods", "features_frozen_before_fit"):  # lists of method patterns
        patterns = rules.get(key)
        if patterns is not None and not (isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)):
            raise ValueError(f"{where}: {key} must be a list of method patterns, got {patterns!r}.")
    ids = [claim["id"] for claim in rules.get("claims") or []]
    for index, claim in enumerate(rules.get("claims") or []):
        if not claim.get("cells") and not claim.get("not_measured"):
            raise ValueError(f"{where}: claims[{index}] ({claim['id']}) names no cells: give cells, or not_measured.")
        for pattern in claim.get("cells") or []:
            unknown = set(pattern) - CELL_PATTERN_KEYS
            if unknown:
                raise ValueError(
                    f"{where}: claims[{index}] ({claim['id']}) has a cell pattern with {sorted(unknown)}: a pattern "
                    f"names {sorted(CELL_PATTERN_KEYS)}."
                )
        if ids.count(claim["id"]) > 1:
            raise ValueError(f"{where}: the claim id {claim['id']!r} is given twice: each claim needs its own.")


def _number(text: str | None) -> float | None:
    if text is None or text.strip() in ("", "NA"):
        return None
    return float(text)
