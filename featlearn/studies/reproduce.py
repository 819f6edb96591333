r"""``featlearn reproduce``: one command runs a paper's experiments and writes a report.

::

    featlearn reproduce --paper shi2022 --scale cpu --out DIR

**The plan** of a paper is a shipped file (``reproduce/<paper>.yaml``): its *items*, each
an experiment (config files, as ``featlearn fit`` layers them) run as a
``featlearn compare`` (methods file, ``--only`` methods), the paper's setting it
reproduces, and per *scale* (``smoke``: seconds, for CI; ``cpu``: a 2-core machine;
``full``: the paper's sizes, for a GPU or a cluster) the seeds, the methods file and
overrides of the experiment. An item a scale leaves out is reported as not run, with
the scale that runs it.

**The paper's numbers** ship in ``featlearn/papers/<paper>.csv`` (setting, method,
train / test accuracy in percent, Cos Similarity, fraction of centres found, source),
and the rules of judgement in ``featlearn/papers/<paper>.yaml``: a floor per metric, the
known reasons why cells differ, and the paper's claims that are relations between
measurements. Every cell with a paper value gets a verdict (:mod:`featlearn.studies.judgement`):

* **reproduced**: \|featlearn mean - paper\| <= the metric's floor (the spread over seeds is
  shown, never added to the window; a bound holds at the edge of the spread);
* **differs**: with the reason's category (a failed fit, a constant the paper leaves open, a
  contradiction in the paper, a featlearn limitation, a cause not established) and its reason, or "no reason
  recorded yet";
* **uninformative**: featlearn and the paper both at the trivial (majority-class) rate, or a
  measurement that cannot decide (a U-curve's minimum at the edge of its sweep);
* **not run**: why (a data file that is not there, and where to put it; a scale that
  leaves the item out).

**Outputs** in DIR: ``report.md`` (verdict counts first, then a section per item: the
paper beside featlearn, the tuned constants, the figures), ``report.html`` (the same,
self-contained: figures embedded), ``results.csv`` and ``results.json`` (every cell),
``figures/`` (test accuracy against steps per method, from each run's TensorBoard
events: the paper's Figures 5, 7, 9, 11 and 13; and the MDS pictures of the network's
neurons that the runs draw), and ``items/<item>/``, each item's ``featlearn compare``
folder.

**Where things live**: the plan and the paper's numbers in :mod:`featlearn.studies.plan`;
each kind of item (comparison table, phases, sample complexity, teacher check), one class
behind one protocol, in :mod:`featlearn.studies.report_items`; the rules of judgement, each
unit-tested, in :mod:`featlearn.studies.judgement`; the page (Markdown, rendered to HTML by
markdown-it-py) in :mod:`featlearn.studies.report_page`; this module runs the items, collects
the cells and the claims, and is the command.

**Resuming**: every item is a ``featlearn compare`` whose trials are reused when their
config is unchanged (a ``teacher_check`` item's teachers and students come from the
teacher cache), so a killed report resumes where it stopped. ``DIR/plan.json``
records the paper, scale and plan; a rerun with another one is refused unless
``--overwrite``. ``--launcher slurm`` (or ``submitit-local``) sends every trial to the
cluster, as ``compare`` does.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from featlearn.studies.judgement import (
    TRIVIAL_AT_START,
    TRIVIAL_SETS,
    column_relation,
    first_match,
    judge,
    verdict_counts,
)
from featlearn.studies.plan import (
    COLUMNS,
    PAPERS,
    SCALES,
    TRIVIAL_ROW,
    Item,
    Plan,
    RunSettings,
    judgement_rules,
    load_plan,
    paper_numbers,
)
from featlearn.studies.report_items import ITEM_KINDS
from featlearn.studies.report_page import CLAIM_PREFIX, summary_table, write_report
from featlearn.studies.trials import BuildRun, Launcher, cli_flag, default_build, summarize


# ---------------------------------------------------------------------- running the items
def run_item(item: Item, plan: Plan, args: RunSettings, out: Path, build: BuildRun) -> dict:
    """Run one item by its kind (or say why not): ``{"status", "results", "why", ...}``."""
    if args.scale in item.skip:
        return {"status": "not run", "why": item.skip[args.scale]}
    folder = out / "items" / item.slug
    folder.mkdir(parents=True, exist_ok=True)
    configs = list(item.configs)
    overrides = dict(item.scales.get(args.scale) or {})
    if item.needs_files and args.data_root is not None:
        data = dict(overrides.get("data") or {})
        root = Path(args.data_root).resolve()
        paths = {key: str(root / relative) for key, relative in item.data_paths.items()}
        data["init_args"] = {**(data.get("init_args") or {}), "root": str(root), **paths}
        overrides["data"] = data
    if overrides:  # the scale's sizes and the data's root, merged after the item's configs
        configs.append(overrides)
    return ITEM_KINDS[item.kind].run(item, plan, args, configs, folder, build)


# ---------------------------------------------------------------------- the report
def trivial_rates(results: dict[str, dict]) -> dict[str, dict[str, list[float]]]:
    """The item's trivial-rate rows: the train and test sets' majority-class rates (percent per seed).

    :data:`TRIVIAL_ROW` from the first method whose runs measured them on the data with its
    input structure (every such method trains on the same sets), and the same row "w/o
    structure" from the first method on the variant without it, whose labels can be far more
    one-sided; none where no run measured them. Its cosine is that method's at step 0 (the
    random initialisation's, which every method of the item shares).
    """
    rows: dict[str, dict[str, list[float]]] = {}
    for method, values in results.items():
        row = f"{TRIVIAL_ROW}, w/o structure" if "w/o structure" in method else TRIVIAL_ROW
        if row not in rows and values.get("test_majority"):
            rows[row] = {"train_acc": values.get("train_majority"), "test_acc": values["test_majority"]}
            if values.get("cos_start"):  # the cosine's trivial value: the random initialisation's
                rows[row]["cos_similarity"] = values["cos_start"]
    return dict(sorted(rows.items(), key=lambda item: item[0] != TRIVIAL_ROW))


def collect_cells(plan: Plan, outcomes: dict[str, dict], numbers: dict, rules: dict) -> list[dict]:
    """Every cell of the report: one row per item, method and metric featlearn or the paper has.

    A compare item gets a row :data:`TRIVIAL_ROW` with its sets' majority-class rates, and every
    accuracy cell is judged against its own method's trivial rate (:func:`~featlearn.studies.judgement.judge`).
    """
    cells = []
    for item in plan.items:
        outcome = outcomes[item.id]
        paper_methods = [m for (setting, m) in numbers if setting == item.setting]
        results = dict(outcome.get("results") or {})
        if item.kind == "compare":
            results.update(trivial_rates(results))
        methods = list(results) or paper_methods
        for method in dict.fromkeys(methods + paper_methods):
            values = results.get(method, {})
            row = numbers.get((item.setting, method), {})
            for column, metric, _, _ in COLUMNS:
                relation, reference = column_relation(row.get("relation", "="), column)
                paper_value = row.get(column)
                if reference is not None:  # judged against another method's mean in this item
                    paper_value, _, _ = summarize(_reached((results.get(reference) or {}).get(metric)))
                raw = values.get(metric)
                measured = _reached(raw)
                if paper_value is None and not measured and not raw:
                    continue
                cell = {"item": item.id, "setting": item.setting or "", "method": method, "metric": column}
                cell.update(relation=relation, reference=reference, unreached=len(raw or []) - len(measured or []))
                if outcome["status"] != "run":
                    judged = None if paper_value is None else {"verdict": "not run", "reason": outcome["why"]}
                    cell.update(paper=paper_value, mean=None, std=None, n=0, category="", reason=outcome["why"])
                    cell.update(verdict=judged["verdict"] if judged else "")
                elif method not in results:
                    cell.update(paper=paper_value, mean=None, std=None, n=0, category="")
                    cell.update(verdict="not run", reason="not among this scale's methods")
                else:
                    edges = [m for m in (method, reference) if all((results.get(m) or {}).get("at_grid_edge") or [0])]
                    interval = values.get(f"{metric}_interval")  # a fitted rate's 95% interval: its window
                    judged = judge(
                        paper_value,
                        measured,
                        column,
                        item.setting or "",
                        method,
                        rules,
                        relation,
                        **trivial_evidence(values, column, rules, row.get("train")),
                        inconclusive=(
                            f"the students' minimum of {', '.join(edges)} lies at the edge of the swept sizes (at "
                            "the last size, or smoothed over the first), so the sweep does not place the U-curve's "
                            "bottom"
                            if edges
                            else undecided_cell(rules, item.setting or "", method, column, values, row.get("train"))
                        ),
                        interval=None if interval is None else tuple(interval),
                    )
                    mean, std, n = summarize(measured)
                    cell.update(paper=paper_value, mean=mean, std=std, n=n, category="", reason="", verdict="")
                    if interval is not None:
                        cell["interval"] = list(interval)
                    cell["values"] = measured  # per seed, in seed order
                    if judged is not None:
                        cell.update({k: judged[k] for k in ("verdict", "category", "reason")})
                cells.append(cell)
    return cells


def undecided_cell(
    rules: dict, setting: str, method: str, column: str, values: dict, paper_train: float | None
) -> str | None:
    """Why a cell cannot be decided whatever its value, or None.

    Two cases: the judgement file's ``inconclusive`` entries (setting, method and metric
    patterns, as the reasons'; a value the method gives by construction, so a match with the
    paper's is a coincidence), and a cosine of a method that falls short of the paper's fit
    of its training set (more than the train floor below the paper's training accuracy):
    the neurons of a network that did not fit are not the paper's fitted network's, and
    their largest cosine with the ground truth is that of directions with no signal.
    """
    made = first_match(rules.get("inconclusive"), setting, method, column)
    if made is not None:
        return str(made["reason"]).rstrip(".")
    if column in TRIVIAL_AT_START and paper_train is not None:
        train, _, _ = summarize(_reached(values.get("train_acc")))
        floor = float(rules["tolerances"]["train"]["absolute"])
        if train is not None and train < paper_train - floor:
            return (
                f"featlearn's {method} falls short of the paper's fit of its training set ({train:.1f}% against "
                f"{paper_train:.1f}%), so its neurons are not those of the paper's fitted network, and their largest "
                "cosine with the ground truth says nothing of what that network learned"
            )
    return None


def collect_claims(plan: Plan, outcomes: dict[str, dict], rules: dict, numbers: dict | None = None) -> list[dict]:
    """The paper's claims that are relations between measurements: one judged cell each.

    Each entry of the judgement file's ``claims`` names its item, the claim in a few words,
    the paper's words and place (``source``), the measured side (``left``: a method and a
    metric column of that item), a relation (``=``, ``<``, ``>``) and the other side: a
    number (``value``) or another method's mean (``right``, its metric defaulting to the
    left's; ``right: {item}`` measures it in another item of the plan, and the claim is not
    run where that item was not). ``left: {statistic: std}`` measures the spread of the
    metric over the seeds instead of its mean (the paper's "standard deviations smaller than
    0.5%"): one number, so a bound on it holds or not, with no spread of its own.
    ``not_measured`` says why featlearn has no measurement for it yet. A claim is judged by
    :func:`~featlearn.studies.judgement.judge`, after :func:`claim_undecided` has set aside
    the claims its measurements cannot decide; the cells' trivial-rate rule itself does not
    apply, since a claim may be about chance ("all three methods drop to chance").
    ``numbers`` (:func:`~featlearn.studies.plan.paper_numbers`) gives the paper's own values,
    against which a spread's method must be reproduced for its spread to speak of the paper's.
    """
    cells = []
    for claim in rules.get("claims") or []:
        item = next((i for i in plan.items if i.id == claim["item"]), None)
        if item is None:  # an item --only left out (a test holds every claim to the shipped plan's items)
            continue
        outcome = outcomes.get(item.id, {"status": "not run", "why": "not among the items run"})
        results = dict(outcome.get("results") or {})
        results.update(trivial_rates(results))
        cell = {"item": item.id, "setting": item.setting or "", "method": CLAIM_PREFIX + claim["claim"]}
        cell.update(relation=claim.get("relation", ""), source=claim["source"], kind="claim", reference=None)
        cell.update(paper=None, mean=None, std=None, n=0, unreached=0, category="", reason="")
        if claim.get("not_measured"):  # said, with why, before anything is looked up
            cell.update(metric=claim.get("left", {}).get("metric", ""), verdict="not run")
            cell["reason"] = f"not measured: {claim['not_measured'].strip()}"
            cells.append(cell)
            continue
        left = claim["left"]
        metric = next(m for c, m, _, _ in COLUMNS if c == left["metric"])
        cell["metric"] = left["metric"]
        interval = (results.get(left["method"]) or {}).get(f"{metric}_interval")
        other = outcome  # the item the right side is measured in: this one, or right.item
        if "right" in claim:
            right = claim["right"]
            right_metric = next(m for c, m, _, _ in COLUMNS if c == right.get("metric", left["metric"]))
            cell["reference"] = right["method"] + ("" if right_metric == metric else f" ({right['metric']})")
            right_results = results
            if right.get("item", item.id) != item.id:  # a claim across two items (e.g. two mixtures' parts)
                cell["reference"] += f", {right['item']}"
                other = outcomes.get(right["item"], {"status": "not run", "why": "not among the items run"})
                other = {**other, "why": f"{right['item']}: {other.get('why', '')}"}
                right_results = dict(other.get("results") or {})
            paper, _, _ = summarize(_reached((right_results.get(right["method"]) or {}).get(right_metric)))
            right_interval = (right_results.get(right["method"]) or {}).get(f"{right_metric}_interval")
            if interval is not None and right_interval is not None:  # two fitted rates: interval against interval
                cell["paper_interval"] = list(right_interval)
        else:
            paper = float(claim["value"])
        values = _reached((results.get(left["method"]) or {}).get(metric))
        if left.get("statistic") == "std":  # the spread over seeds, one measured number
            _, spread, seeds = summarize(values)
            cell["metric_statistic"] = f"std over {seeds} seeds"
            cell["seed_values"] = values  # the evidence behind the spread, shown beside it
            values = None if spread is None else [spread]
        elif left.get("statistic") is not None:
            raise ValueError(f"A claim's left.statistic must be 'std' or absent, got {left['statistic']!r}: {claim}.")
        mean, std, n = summarize(values)
        cell.update(paper=paper, mean=mean, std=std, n=n, left=left["method"], values=values)
        if outcome["status"] != "run":
            cell.update(verdict="not run", reason=outcome["why"])
        elif other["status"] != "run":
            cell.update(verdict="not run", reason=other["why"])
        elif paper is None or mean is None:
            cell.update(verdict="not run", reason="a side of the claim was not measured at this scale")
        else:
            paper_row = (numbers or {}).get((item.setting, left["method"]), {})
            undecided = claim_undecided(claim, results, rules, paper_row.get(left["metric"]))
            judged = judge(
                paper, values, left["metric"], item.setting or "", cell["method"], rules, claim["relation"],
                inconclusive=undecided, interval=None if interval is None else tuple(interval),
                paper_interval=tuple(cell["paper_interval"]) if cell.get("paper_interval") else None,
            )  # fmt: skip
            if interval is not None:
                cell["interval"] = list(interval)
            cell.update({k: judged[k] for k in ("verdict", "category", "reason")})
        cells.append(cell)
    return cells


def claim_undecided(
    claim: dict, results: dict[str, dict], rules: dict, paper_value: float | None = None
) -> str | None:
    """Why a claim between accuracies cannot be decided by its measurements, or None.

    Five cases:

    * a bound on the spread over seeds (``statistic: std``) of a method within the floor of
      its trivial rate: it does not fit the task, so its spread says nothing of its stability;
    * a bound on the spread of a method some of whose seeds degenerated (a constant predictor's
      accuracy in the spread measures the failures, not the method's stability);
    * a bound on the spread of a method whose mean is not the paper's (``paper_value``, the
      paper's value of that method and metric, more than the floor away): the paper's spread
      is of its own fit, and a spread of another fit cannot confirm or refute it;
    * "tests at chance" (the right side a Trivial row) of a method that does not fit its own
      training set either: chance on the test set then says nothing about generalisation;
    * two methods compared on sets whose trivial rates differ by more than the floor (a task
      with and without its input structure): equal accuracies may be two constant predictors.
    """
    left, right = claim["left"], claim.get("right")
    if left["metric"] not in TRIVIAL_SETS:
        return None
    values = results.get(left["method"]) or {}
    floor = float(rules["tolerances"][left["metric"]]["absolute"])
    if left.get("statistic") == "std":
        mean, spread, seeds, trivial, failed = fit_summary(values, left["metric"])
        if mean is not None and trivial is not None and abs(mean - trivial) <= floor:
            return (
                f"{left['method']} sits within the floor of its trivial rate ({mean:.1f}% against {trivial:.1f}%): "
                "it does not fit the task, so its spread over the seeds says nothing of the method's stability"
            )
        if failed:
            return (
                f"{failed} of featlearn's {len(values['degenerate'])} seeds of {left['method']} degenerated "
                "(DegenerateRuns: one class predicted, or a loss that grew by orders of magnitude): a spread that "
                "failed fits are part of says nothing of the method's stability"
            )
        if mean is not None and paper_value is not None and abs(mean - paper_value) > floor:
            return (
                f"featlearn's {left['method']} ({mean:.1f}%) is not the paper's ({paper_value:.1f}%, this item's "
                f"table): the paper's spread is of its own fit, and the spread of another fit can neither confirm "
                f"nor refute it"
            )
        bound = claim.get("value")
        if bound is not None and spread is not None:
            low, high = std_interval(spread, seeds)
            if low <= float(bound) <= high:
                return (
                    f"{seeds} seeds bound a standard deviation only loosely: the sample's {spread:.2f} puts the true "
                    f"one between {low:.2f} and {high:.2f} (95%), which holds the paper's {float(bound):g}"
                )
        return None
    if right is None:
        return None
    if right["method"].startswith(TRIVIAL_ROW):
        evidence = trivial_evidence(values, left["metric"], rules)
        if evidence.get("fits_training_set") is False:
            train, _, _ = summarize(_reached(values.get("train_acc")))
            trivial, _, _ = summarize(values.get("train_majority"))
            return (
                f"{left['method']} does not fit its training set either ({train:.1f}% against a trivial rate of "
                f"{trivial:.1f}%), so chance on the test set says nothing about generalisation"
            )
        return None
    theirs_values = results.get(right["method"]) or {}
    their_column = right.get("metric", left["metric"])
    their_mean, _, _, their_trivial, their_failed = fit_summary(theirs_values, their_column)
    at_chance = their_mean is not None and their_trivial is not None and abs(their_mean - their_trivial) <= floor
    if their_column in TRIVIAL_SETS and (their_failed or at_chance):
        why = (
            f"{their_failed} of its {len(theirs_values['degenerate'])} seeds degenerated"
            if their_failed
            else f"it sits within the floor of its trivial rate ({their_mean:.1f}% against {their_trivial:.1f}%)"
        )
        return (
            f"the other side, {right['method']}, is a failed fit ({why}), so the relation compares "
            f"{left['method']} with a constant predictor, not with the method"
        )
    mine, _, _ = summarize((results.get(left["method"]) or {}).get(f"{TRIVIAL_SETS[left['metric']]}_majority"))
    theirs, _, _ = summarize((results.get(right["method"]) or {}).get(f"{TRIVIAL_SETS[left['metric']]}_majority"))
    if mine is not None and theirs is not None and abs(mine - theirs) > floor:
        return (
            f"the two sides are accuracies on sets whose trivial rates differ ({mine:.1f}% against {theirs:.1f}%), "
            "so equal accuracies may be two constant predictors and unequal ones say nothing of the method"
        )
    return None


def fit_summary(values: dict, column: str) -> tuple[float | None, float | None, int, float | None, int]:
    """A method's fit of one accuracy column: (mean, std, seeds, trivial rate of its set, degenerate seeds)."""
    metric = next(m for c, m, _, _ in COLUMNS if c == column)
    mean, std, seeds = summarize(_reached(values.get(metric)))
    trivial, _, _ = summarize(values.get(f"{TRIVIAL_SETS[column]}_majority"))
    return mean, std, seeds, trivial, sum(bool(flag) for flag in values.get("degenerate") or [])


def std_interval(std: float, n: int, level: float = 0.95) -> tuple[float, float]:
    r"""The ``level`` confidence interval of a normal law's standard deviation from a sample's ``std`` of ``n``.

    .. math:: \big[s \sqrt{(n-1)/\chi^2_{1-\alpha/2,\,n-1}},\; s \sqrt{(n-1)/\chi^2_{\alpha/2,\,n-1}}\big]

    (for 5 seeds, 0.60 s to 2.87 s at 95%).
    """
    from scipy.stats import chi2

    tail = (1.0 - level) / 2.0
    return std * math.sqrt((n - 1) / chi2.ppf(1.0 - tail, n - 1)), std * math.sqrt((n - 1) / chi2.ppf(tail, n - 1))


def trivial_evidence(values: dict, column: str, rules: dict, paper_train: float | None = None) -> dict:
    """What :func:`~featlearn.studies.judgement.judge` needs of a method's runs to apply the trivial-rate rule.

    ``trivial``: the mean majority-class rate of the cell's set, or for a cosine
    (:data:`~featlearn.studies.judgement.TRIVIAL_AT_START`) its mean value at step 0;
    ``fits_training_set``: whether the method fits its training set as the paper's does: its
    training accuracy more than the train floor above its own trivial rate and, where the paper
    gives the method's training accuracy (``paper_train``), not more than the floor below it (a
    network that reaches 55% where the paper's memorises at 100% has not fit, so its test at
    chance is no "fits, yet tests at chance"); ``degenerate``: whether every seed's run degenerated
    (:class:`~featlearn.callbacks.DegenerateRuns`), and ``degenerate_seeds`` how many did.
    """
    flags = values.get("degenerate") or []
    degenerate = {"degenerate": bool(flags) and all(flags), "degenerate_seeds": sum(bool(f) for f in flags)}
    if column in TRIVIAL_AT_START:  # the value at step 0 (ComparisonTable: from the runs' logged curves)
        start, _, _ = summarize(values.get(f"{column}_start"))
        return {"trivial": start, **degenerate}
    if column not in TRIVIAL_SETS:
        return {}
    trivial, _, _ = summarize(values.get(f"{TRIVIAL_SETS[column]}_majority"))
    train, _, _ = summarize(_reached(values.get("train_acc")))
    train_trivial, _, _ = summarize(values.get("train_majority"))
    tolerances = rules["tolerances"]
    floor = float(tolerances.get("train", tolerances[column])["absolute"])  # a paper may judge test accuracy only
    fits = None if train is None or train_trivial is None else train - train_trivial > floor
    if fits and paper_train is not None:
        fits = train >= paper_train - floor
    return {"trivial": trivial, "fits_training_set": fits, **degenerate}


def _reached(values: list | None) -> list[float] | None:
    """The seeds' values without those a run did not reach (None: a phase that never ended)."""
    return None if values is None else [v for v in values if v is not None]


# ---------------------------------------------------------------------- command
def parse_args(argv: list[str]) -> argparse.Namespace:
    """The ``featlearn reproduce`` options."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --ou must not be taken for --out: a misspelt option is refused
        prog="featlearn reproduce",
        description="Run every experiment of a paper's reproduction plan and write DIR/report.md, "
        "DIR/report.html and DIR/results.csv with a verdict per cell.",
    )
    parser.add_argument("--paper", choices=sorted(PAPERS), help="The paper to reproduce.")
    parser.add_argument("--scale", default="cpu", choices=SCALES, help="Preset sizes (default: %(default)s).")
    parser.add_argument("--out", help="Output folder DIR.")
    parser.add_argument("--summary", metavar="DIR", default=None, help="Print the verdict counts of the report in DIR.")
    parser.add_argument("--only", nargs="+", default=None, help="Run only these items (ids as in the plan).")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Replace DIR's report of another plan or scale: trials whose config is unchanged keep their results.",
    )
    parser.add_argument("--grid-members", type=int, default=None, help="compare's --grid-members (default: compare's).")
    parser.add_argument(
        "--data-root",
        default=None,
        help="Folder holding the real data sets you placed (CIFAR-10, SVHN, ...): the items that read files "
        "take it as data.init_args.root (default: their configs' root, 'data' under the working folder).",
    )
    Launcher.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.summary is None and (args.paper is None or args.out is None):
        parser.error("--paper and --out are required (or --summary DIR).")
    if args.grid_members is not None and args.grid_members < 1:
        parser.error(f"--grid-members must be >= 1, got {args.grid_members}.")
    return args


def check_plan_record(out: Path, plan: Plan, scale: str, overwrite: bool) -> None:
    """Refuse a DIR that holds another paper, scale or plan's results, unless ``overwrite``.

    Raises:
        ValueError: Naming what differs.
    """
    record = out / "plan.json"
    wanted = {"paper": plan.paper, "scale": scale, "plan_digest": plan.digest}
    if record.is_file():
        saved = json.loads(record.read_text())
        if saved != wanted and not overwrite:
            changed = [key for key in wanted if saved.get(key) != wanted[key]]
            raise ValueError(
                f"{out} holds a report of another {' and '.join(changed)} ({saved.get('paper')}, scale "
                f"{saved.get('scale')}): use a new --out, or --overwrite to replace it (a trial whose config is "
                f"unchanged keeps its result; the others rerun)."
            )
    out.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(wanted, indent=1))


@dataclass
class Reproduction:
    """What :func:`reproduce` judged: one verdict per cell of the paper's tables and per claim.

    Args:
        out: The report's folder (``report.md``, ``report.html``, ``results.csv``, ``results.json``, figures).
        counts: Verdict -> how many cells have it (``reproduced``, ``differs``, ``uninformative``, ``not run``),
            the diagnostic items' cells not counted (each cell's ``diagnostic`` says which).
        cells: One per judged number or claim: ``item``, ``method``, ``metric``, ``featlearn`` and
            ``paper`` values, ``verdict``, ``category`` and ``reason`` where it differs, per-seed values.
        wall_seconds: This invocation's wall time.
        training_seconds: The sum of every trial's training time behind the report.
    """

    out: Path
    counts: dict[str, int]
    cells: list[dict]
    wall_seconds: float
    training_seconds: float

    def verdicts(self, item: str | None = None, verdict: str | None = None) -> list[dict]:
        """The cells of one item (its id) and/or with one verdict; every cell without arguments."""
        return [
            cell
            for cell in self.cells
            if (item is None or cell["item"] == item) and (verdict is None or cell["verdict"] == verdict)
        ]


def reproduce(
    paper: str,
    out: str | Path,
    *,
    scale: str = "cpu",
    only: Sequence[str] | None = None,
    overwrite: bool = False,
    grid_members: int | None = None,
    data_root: str | Path | None = None,
    launcher: Launcher | None = None,
    build: BuildRun | None = None,
    flag: Callable[[str], str] = str,
) -> Reproduction:
    """Run a paper's reproduction plan at a scale and write its report: a verdict per number and claim.

    Args:
        paper: ``shi2022`` or ``glasgow2023`` (a shipped plan, ``configs/reproduce/<paper>.yaml``).
        out: The report's folder; the trials finished there before are reused.
        scale: ``smoke`` (minutes), ``cpu`` (the paper's protocol on 2 cores) or ``full``.
        only: Run only these items (ids as in the plan).
        overwrite: Discard results of another plan, scale or config in ``out`` (else: refuse).
        grid_members: compare's ``grid_members`` (None: compare's default).
        data_root: The folder of the real data sets you placed (CIFAR-10, SVHN, ...).
        launcher: Where trials run (default: one after another in this process).
        build: Builds and runs one ``featlearn fit`` (default: :func:`featlearn.runner.build_cli`).
        flag: How an error names an option (the command line passes its ``--flags``).

    Raises:
        ValueError: An unknown paper or item, or ``out`` holding another report (unless ``overwrite``).
    """
    import platform

    import torch

    build = build or default_build()
    if grid_members is not None and grid_members < 1:
        raise ValueError(f"{flag('grid_members')} must be >= 1, got {grid_members}.")
    settings = RunSettings(scale, overwrite, grid_members, data_root, launcher or Launcher())
    plan = load_plan(paper)
    if scale not in plan.scales:
        raise ValueError(f"{flag('scale')} must be one of {sorted(plan.scales)}, got {scale!r}.")
    if only:
        missing = sorted(set(only) - {item.id for item in plan.items})
        if missing:
            ids = [i.id for i in plan.items]
            raise ValueError(f"{flag('only')} names {missing}, which are not items of {paper}: {ids}.")
        plan.items = [item for item in plan.items if item.id in only]
    out = Path(out)
    check_plan_record(out, plan, scale, overwrite)
    numbers, rules = paper_numbers(paper), judgement_rules(paper)
    start = time.perf_counter()
    outcomes = {}
    for item in plan.items:
        print(f"[reproduce] {item.id}: {item.title}", flush=True)
        outcomes[item.id] = run_item(item, plan, settings, out, build)
        if outcomes[item.id]["status"] != "run":
            print(f"[reproduce] {item.id}: not run: {outcomes[item.id]['why']}", flush=True)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"{torch.get_num_threads()} CPU threads"
    wall = {
        "wall_seconds": time.perf_counter() - start,
        "training_seconds": sum(o.get("training_seconds", 0.0) for o in outcomes.values()),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "machine": f"{platform.machine()}, {device}, torch {torch.__version__}",
    }
    # Every invocation that filled this folder (a killed report resumes; a rerun reuses its trials).
    previous = out / "results.json"
    earlier = []
    if previous.is_file():
        summary = json.loads(previous.read_text())["summary"]
        earlier = summary.get("invocations") or [{k: summary[k] for k in ("wall_seconds", "peak_rss_gib", "machine")}]
    wall["invocations"] = [*earlier, {k: wall[k] for k in ("wall_seconds", "peak_rss_gib", "machine")}]
    cells = collect_cells(plan, outcomes, numbers, rules) + collect_claims(plan, outcomes, rules, numbers)
    diagnostics = {item.id for item in plan.items if item.diagnostic}
    for cell in cells:
        cell["diagnostic"] = cell["item"] in diagnostics
    write_report(out, plan, settings, outcomes, cells, wall)
    counts = verdict_counts(cells)
    print(
        f"[reproduce] {counts['reproduced']} reproduced, {counts['differs']} differ, {counts['uninformative']} "
        f"uninformative, {counts['not run']} not run (diagnostic items not counted); report: {out / 'report.md'} "
        f"and {out / 'report.html'}",
        flush=True,
    )
    return Reproduction(out, counts, cells, wall["wall_seconds"], wall["training_seconds"])


def reproduce_command(argv: list[str], build: BuildRun) -> Reproduction | str:
    """``featlearn reproduce`` with arguments ``argv`` (see :func:`parse_args`): :func:`reproduce`, or a summary.

    ``--summary DIR`` prints the verdict counts of the report in DIR (and returns that text).
    """
    args = parse_args(argv)
    if args.summary is not None:
        text = summary_table(Path(args.summary))
        print(text, end="")
        return text
    return reproduce(
        args.paper,
        args.out,
        scale=args.scale,
        only=args.only,
        overwrite=args.overwrite,
        grid_members=args.grid_members,
        data_root=args.data_root,
        launcher=Launcher.from_args(args, Path(args.out) / "submitit"),
        build=build,
        flag=cli_flag,
    )
