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
unit-tested, with the cells and claims they judge, in :mod:`featlearn.studies.judgement`; the
page (Markdown, rendered to HTML by markdown-it-py) in :mod:`featlearn.studies.report_page`;
this module runs the items, writes the report and is the command.

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
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from featlearn.studies.calibration import PAPER_COLUMN, load_candidates
from featlearn.studies.judgement import Cell, Claim, claim_counts, judge_report, verdict_counts
from featlearn.studies.methods import StepValues
from featlearn.studies.plan import (
    PAPERS,
    SCALES,
    Item,
    Plan,
    RunSettings,
    calibration_item,
    judgement_rules,
    load_plan,
    paper_numbers,
)
from featlearn.studies.report_items import ITEM_KINDS
from featlearn.studies.report_page import summary_table, write_report
from featlearn.studies.trials import BuildRun, Launcher, cli_flag, default_build


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
    constants = None
    if item.constants is not None:  # the calibration's chosen constants, before the scale's sizes
        constants = calibrated_constants(item, plan, out)
        if "why" in constants:
            return {"status": "not run", "why": constants["why"]}
        configs.append(constants["overlay"])
        if constants.get("at_steps"):  # one step of a schedule each, the item's other steps kept
            configs.append(StepValues(constants["at_steps"]))
    if overrides:  # the scale's sizes and the data's root, merged after the item's configs
        configs.append(overrides)
    outcome = ITEM_KINDS[item.kind].run(item, plan, args, configs, folder, build)
    if constants is not None:
        outcome["constants"] = {k: v for k, v in constants.items() if k not in ("overlay", "at_steps")}
    return outcome


def calibrated_constants(item: Item, plan: Plan, out: Path) -> dict:
    """The constants ``item.constants`` (an objective) chose in the plan's calibration item, read from its output.

    Returns:
        ``{"objective", "candidate", "overlay", "at_steps", "calibration", "calibrated", "targets", "default"}``
        (``default``: the choice is the objective's default, kept because J told no candidate from it;
        ``calibrated``: the item runs on the table the constants were chosen on, its setting or its
        configs and sizes the calibration's; ``targets``: there,
        the objective's ``[method, column]`` cells, which the constants were chosen to fit), or
        ``{"why": ...}`` where the calibration has not run or chose nothing.
    """
    calibration = calibration_item(plan.items) or next(
        (i for i in load_plan(plan.paper).items if i.kind == "calibration"), None
    )
    record = out / "items" / calibration.slug / "calibration.json"
    if not record.is_file():
        return {
            "why": f"its constants come from the calibration item {calibration.id!r}, which has not run: run it first."
        }
    summary = json.loads(record.read_text())
    chosen = summary["objectives"][item.constants]["chosen"]
    if chosen is None:
        return {"why": f"the calibration's objective {item.constants!r} chose no candidate (every one unmeasured)."}
    # The chosen candidate's constants as its file states them now; a record whose constants or rule of choice
    # differ (a folder filled before the file changed) is refused, not silently applied.
    spec = load_candidates(calibration.study)
    objective = next((o for o in spec.objectives if o.name == item.constants), None)
    if objective is not None and summary["objectives"][item.constants].get("default") != objective.default:
        return {
            "why": f"the calibration item {calibration.id!r} chose {chosen!r} under another default than its "
            f"candidates file ({calibration.study}) names now ({objective.default!r}): rerun the calibration item "
            f"first (--only {calibration.id!r} --overwrite)."
        }
    candidate = next((c for c in spec.candidates if c.name == chosen), None)
    recorded = summary["candidates"].get(chosen) or {}
    at_steps = {int(s): v for s, v in (recorded.get("at_steps") or {}).items()}  # JSON's keys are strings
    if candidate is None or recorded.get("overlay") != candidate.overlay or at_steps != candidate.at_steps:
        return {
            "why": f"the calibration item {calibration.id!r} chose {chosen!r} with constants that its candidates "
            f"file ({calibration.study}) no longer states: rerun the calibration item first (--only "
            f"{calibration.id!r} --overwrite)."
        }
    # The table the constants were chosen on: the calibration's setting, or its very configs (a diagnostic
    # of featlearn's own on that table's data, under another name).
    calibrated = item.setting == summary["setting"] or (
        list(item.configs) == list(calibration.configs) and item.scales == calibration.scales
    )
    # On the table the constants were chosen on, the objective's cells were fitted (featlearn's validation
    # accuracy stood for the paper's test accuracy): the judgement marks a match of theirs as the fit it is.
    targets = sorted({(t.method, PAPER_COLUMN.get(t.metric, t.metric)) for t in objective.targets}) if objective else []
    return {
        "objective": item.constants,
        "candidate": chosen,
        "overlay": candidate.overlay,
        "at_steps": candidate.at_steps,
        "calibration": calibration.id,
        "calibrated": calibrated,
        "targets": [list(t) for t in targets] if calibrated else [],
        "default": objective is not None and chosen == objective.default,  # kept on a tie, not fitted
    }


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
        counts: Verdict -> how many of the paper's claims have it (``reproduced``, ``differs``,
            ``cannot decide``, ``by construction``, ``not run``), the diagnostic items' claims not counted.
        cell_counts: The same for the cells.
        cells: One :class:`~featlearn.studies.judgement.Cell` per judged number or relation (its item,
            method, metric, featlearn's and the paper's values, per-seed values, verdict, category and
            reason, and the claim it tests).
        claims: The paper's claims (:class:`~featlearn.studies.judgement.Claim`), each with its cells.
        wall_seconds: This invocation's wall time.
        training_seconds: The sum of every trial's training time behind the report.
    """

    out: Path
    counts: dict[str, int]
    cell_counts: dict[str, int]
    cells: list[Cell]
    claims: list[Claim]
    wall_seconds: float
    training_seconds: float

    def verdicts(self, item: str | None = None, verdict: str | None = None) -> list[Cell]:
        """The cells of one item (its id) and/or with one verdict; every cell without arguments."""
        return [
            cell
            for cell in self.cells
            if (item is None or cell.item == item) and (verdict is None or cell.verdict == verdict)
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
    settings = RunSettings(scale, overwrite, grid_members, data_root, launcher or Launcher(), tuple(only or ()) or None)
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
    cells, claims = judge_report(plan, outcomes, numbers, rules)
    if only:  # a partial report: the claims its items test, not the plan's others as "not run"
        claims = [claim for claim in claims if claim.cells]
    write_report(out, plan, settings, outcomes, cells, claims, wall)
    counts = claim_counts(claims)
    print(
        f"[reproduce] claims: {counts['reproduced']} reproduced, {counts['differs']} differ, {counts['cannot decide']} "
        f"cannot be decided, {counts['by construction']} hold by construction, {counts['not run']} not run "
        f"(diagnostic items not counted); report: {out / 'report.md'} and {out / 'report.html'}",
        flush=True,
    )
    cell_counts = verdict_counts(cells)
    return Reproduction(out, counts, cell_counts, cells, claims, wall["wall_seconds"], wall["training_seconds"])


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
