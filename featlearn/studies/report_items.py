"""The kinds of item of a reproduction report, one class each behind one protocol.

An item of a paper's plan (:class:`~featlearn.studies.plan.Item`) is run by its kind:

* :class:`ComparisonTable` (``compare``): a ``featlearn compare`` of methods, one table;
* :class:`Phases` (``phases``): a compare over (d, eta) settings whose phase lengths are fitted;
* :class:`Transitions` (``transitions``): a compare over sparse-parity settings whose transition
  steps, plateaus and hidden progress are measured and fitted (:mod:`featlearn.studies.transitions`);
* :class:`SampleComplexity` (``samples``): n*(d) per method and the fitted exponents;
* :class:`TeacherCheck` (``teacher_check``): students' U-curves under teachers of several sizes;
* :class:`CalibrationItem` (``calibration``): candidate choices of the paper's open constants on one
  table, and the candidate each objective chooses (:mod:`featlearn.studies.calibration`), which the
  plan's items with ``constants`` then run at.

Each kind runs its command (:meth:`ItemKind.run`, returning the item's *outcome*: ``status``,
``results`` (method -> metric -> per-seed values) and what its lines and pictures need),
writes the Markdown lines it adds under the item's table (:meth:`ItemKind.lines`), and the
pictures it shows (:meth:`ItemKind.pictures`). The report itself (verdicts, tables, page)
is :mod:`featlearn.studies.reproduce`.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from featlearn.config_files import resolve_config
from featlearn.studies.calibration import calibrate, calibration_methods, load_candidates
from featlearn.studies.compare import Comparison, compare
from featlearn.studies.exponents import (
    SAMPLE_FORMS,
    effective_slope,
    fit_exponent,
    fit_log_power,
    found_points,
    predict_largest,
)
from featlearn.studies.methods import DEFAULT_METHODS, Method, MethodNotApplicable, load_methods
from featlearn.studies.phases import (
    lemma_lines,
    loss_lines,
    phase_lines,
    phase_plot,
    phase_results,
    phase_settings,
    theta_lines,
)
from featlearn.studies.plan import SPEED_ACCURACY, TEACHER_SWEEP, Item, Plan, RunSettings, judgement_rules
from featlearn.studies.samples import samples
from featlearn.studies.transitions import (
    transition_lines,
    transition_plot,
    transition_results,
    transition_settings,
)
from featlearn.studies.trials import BuildRun
from featlearn.studies.tuning import CompareOptions


class ItemKind(Protocol):
    """What the report asks of one kind of item."""

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run the item (``configs``: its experiment, names and an overlay mapping) in ``folder``; its outcome."""

    def lines(self, outcome: dict) -> list[str]:
        """The Markdown lines the kind adds under the item's table (a run outcome)."""

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:
        """The pictures the kind shows, written into ``figures`` (a run outcome)."""


def compare_options(plan: Plan, args: RunSettings, methods: list[str]) -> CompareOptions:
    """The :class:`~featlearn.studies.tuning.CompareOptions` of a compare-based item at the report's scale.

    A scale's ``halving_only`` names methods across the plan; an item halves those of its own
    ``methods`` (its methods file, after ``only``), and none where it has none of them.
    """
    scale = plan.scales[args.scale]
    halving, halving_only = scale.get("halving"), None
    if halving and scale.get("halving_only"):
        halving_only = tuple(name for name in scale["halving_only"] if name in methods)
        halving = halving if halving_only else None
    return CompareOptions(
        seeds=scale["seeds"],
        tune_seeds=scale.get("tune_seeds"),  # choose grid points on the first K seeds, run the chosen on all
        halving=halving,  # successive halving of the tuning grids
        halving_only=halving_only or None,
        grid_members=args.grid_members,
        overwrite=args.overwrite,
    )


def run_compare(
    item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun
) -> Comparison | tuple[str, str]:
    """The item's :func:`~featlearn.studies.compare.compare`, or ("not run", why).

    Not run: the data files are missing, or a method does not apply.
    """
    only = item.only.get(args.scale) if isinstance(item.only, dict) else item.only
    methods = item.methods or plan.scales[args.scale].get("methods") or DEFAULT_METHODS
    listed = load_methods(resolve_config(methods), only)  # read once: the names choose the halving options
    names = [method.name for method in listed]
    try:
        return compare(
            configs,
            folder,
            build=build,
            methods=listed,
            only=only,
            options=compare_options(plan, args, names),
            launcher=replace(args.launcher, folder=folder / "submitit"),
        )
    except FileNotFoundError as err:  # real data a user places: say where
        then = " Then rerun with --data-root ROOT." if item.needs_files else ""
        return ("not run", f"{err}{then}")
    except MethodNotApplicable as err:
        return ("not run", str(err))


class ComparisonTable:
    """A ``featlearn compare`` of methods: the paper's table, test accuracy curves and the neurons' pictures."""

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run the item's ``featlearn compare``: per-seed results, tuned constants, training time."""
        comparison = run_compare(item, plan, args, configs, folder, build)
        if isinstance(comparison, tuple):
            return {"status": comparison[0], "why": comparison[1]}
        record_curves(folder, list(comparison.results))  # before a killed report could leave them unread
        results = {method: with_worst_count(metrics) for method, metrics in comparison.results.items()}
        # The cosine's trivial value: each method's logged max cos at step 0, the random initialisation's.
        for method, (steps, values) in logged_curves(folder, list(results), "align/max_cos").items():
            if steps and steps[0] == 0:
                results[method] = {**results[method], "cos_start": [values[0]]}
        if item.speed:
            for method, step in steps_to_accuracy(folder, list(results), SPEED_ACCURACY).items():
                results[method] = {**results[method], "steps_to_accuracy": [step]}
        return {
            "status": "run",
            "results": results,
            "tuned": _tuned_values(folder),
            "tuned_edges": _tuned_values(folder, "grid end:"),
            "training_seconds": trial_seconds(folder),
            "folder": folder,
        }

    def lines(self, outcome: dict) -> list[str]:  # noqa: D102
        return []

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        curve = accuracy_curves(
            outcome["folder"],
            list(outcome["results"]),
            figures / f"{item.slug}_test_accuracy.png",
            f"{item.id}: test accuracy per method ({item.figures or 'featlearn'})",
        )
        train = accuracy_curves(
            outcome["folder"],
            list(outcome["results"]),
            figures / f"{item.slug}_train_accuracy.png",
            f"{item.id}: training set accuracy per method (does it memorise?)",
            split="train",
        )
        # Beside a memorisation item's training accuracy, its training loss: a hinge loss that stays at 1
        # (f = 0's) is a network that gained no margin, not one that fits badly.
        loss = (
            loss_curves(
                outcome["folder"],
                list(outcome["results"]),
                figures / f"{item.slug}_train_loss.png",
                f"{item.id}: training loss per method from step 3 (hinge: 1 is f = 0's loss)",
                first_step=3,  # Shi et al.'s steps 1-2 (rates 1e-3 and 1) have losses that would set the scale
            )
            if train
            else None
        )
        phases = phase_curves(
            outcome["folder"],
            list(outcome["results"]),
            figures / f"{item.slug}_phase_curves.png",
            f"{item.id}: the weakest margin, the heavy set's signal and the mass outside it, per method",
        )
        return [p for p in (curve, train, loss, phases) if p] + neuron_pictures(outcome["folder"], figures, item.slug)


class FittedSettings(ComparisonTable):
    """A compare whose methods are settings of one experiment, each measured, then fitted across settings.

    A subclass names its study's two steps: :meth:`settings_of` (each method's setting and its
    members' measurements, from the compare's folder and results) and :meth:`cells_of` (the
    report's cells and the fits, from those settings).
    """

    @staticmethod
    def settings_of(folder: Path, results: dict[str, dict], slug) -> list[dict]:
        """Each method's setting and its members' measurements."""
        raise NotImplementedError

    @staticmethod
    def cells_of(settings: list[dict]) -> tuple[dict[str, dict], dict]:
        """The report's cells (row -> {metric: values}) and the fits."""
        raise NotImplementedError

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run the item's compare over its settings, then measure each and fit across them."""
        outcome = super().run(item, plan, args, configs, folder, build)
        if outcome["status"] != "run":
            return outcome
        settings = self.settings_of(folder, outcome["results"], lambda name: Method(name).slug)
        cells, fits = self.cells_of(settings)
        return {**outcome, "results": cells, "settings": settings, "fits": fits, "tuned": {}}


class Phases(FittedSettings):
    """A compare over (d, eta) settings whose phase lengths are fitted (:mod:`featlearn.studies.phases`)."""

    settings_of = staticmethod(phase_settings)
    cells_of = staticmethod(phase_results)

    def lines(self, outcome: dict) -> list[str]:  # noqa: D102
        settings = outcome["settings"]
        return [
            "",
            *phase_lines(settings, outcome["fits"]),
            "",
            *theta_lines(settings),
            "",
            *lemma_lines(settings),
            "",
            *loss_lines(settings),
        ]

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        title = f"{item.id}: each phase's length x eta against its rate's L(d)"
        plot = phase_plot(outcome["settings"], figures / f"{item.slug}_phases.png", title, outcome["fits"])
        return [plot] if plot else []


class Transitions(FittedSettings):
    """A compare over sparse-parity settings: transitions, plateaus, hidden progress (:mod:`.transitions`)."""

    settings_of = staticmethod(transition_settings)
    cells_of = staticmethod(transition_results)

    def lines(self, outcome: dict) -> list[str]:  # noqa: D102
        return ["", *transition_lines(outcome["settings"], outcome["fits"])]

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        methods, folder = [r["method"] for r in outcome["settings"]], outcome["folder"]
        fits = transition_plot(
            outcome["fits"], figures / f"{item.slug}_transitions.png", f"{item.id}: transition step t_c (log-log)"
        )
        curves = [
            draw_curves(
                [(method, curve, "-", None) for method, curve in logged_curves(folder, methods, tag).items()],
                figures / f"{item.slug}_{name}.png",
                f"{item.id}: {label}, mean over seeds",
                label,
            )
            for tag, name, label in PARITY_CURVES
        ]
        return [p for p in (fits, *curves) if p]


#: Barak et al.'s curves a compare's runs log (ParityProgress): tag, file name, axis label.
PARITY_CURVES = (
    ("parity/test_error", "test_error", "test error"),
    ("parity/support_share", "support_share", "share of the first layer's mass on S"),
    ("parity/w_change_linf", "w_change_linf", "||w_t - w_0||_inf (Appendix C.3's rho)"),
    ("parity/gradient_gap", "gradient_gap", "Fourier gap: RMS gradient on S / off S (Section 4.1)"),
)


class SampleComplexity:
    """n*(d) per method and the fitted exponents (:mod:`featlearn.studies.samples`)."""

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run a ``samples`` item: n*(d) per method and the fitted exponents (:mod:`featlearn.studies.samples`)."""
        options = {"study": item.study, **item.options.get(args.scale, {})}
        study = samples(
            configs,
            folder,
            seeds=plan.scales[args.scale]["seeds"],
            overwrite=args.overwrite,
            launcher=replace(args.launcher, folder=folder / "submitit"),
            build=build,
            **options,
        )
        results, log_powers, predictions = {}, {}, {}
        for method, fit in study.fits.items():
            results[method] = {"alpha": None if fit is None else [fit["alpha"]]}
            if fit is not None:  # a fitted rate is judged by its interval (featlearn.studies.judgement)
                results[method]["alpha_interval"] = [fit["ci_low"], fit["ci_high"]]
            log_powers[method] = power = fit_log_power(
                found_points(study.rows, method),
                outcomes=study.outcomes.get(method),
                pass_fraction=study.pass_fraction,
            )
            if power is not None:
                results[method]["log_power"] = [power["k"]]
                results[method]["log_power_interval"] = [power["ci_low"], power["ci_high"]]
            predictions[method] = prediction = predict_largest(
                found_points(study.rows, method),
                outcomes=study.outcomes.get(method),
                pass_fraction=study.pass_fraction,
            )
            if prediction is not None:  # every form's prediction of the largest d: the judgement file names the claimed
                results[method]["form_error_forms"] = prediction["forms"]
        return {
            "status": "run",
            "results": results,
            "log_powers": log_powers,
            "predictions": predictions,
            "fits": study.fits,
            "rows": study.rows,
            "tuned": {},
            "training_seconds": trial_seconds(folder),
            "folder": folder,
        }

    def lines(self, outcome: dict) -> list[str]:  # noqa: D102
        return ["", *sample_complexity_lines(outcome)]

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        return [_copy(outcome["folder"] / "samples.png", figures / f"{item.slug}_samples.png")]


class TeacherCheck:
    """Students' U-curves under teachers of several sizes (Shi et al.'s Figure 26, :mod:`~.teacher_check`)."""

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run a ``teacher_check`` item (:func:`~featlearn.studies.teacher_check.check_teacher_sizes`).

        Each teacher's row holds log2 of its students' U-curve minimum; the row
        :data:`TEACHER_SWEEP` holds log2 of the size Algorithm 1 chose (the teacher sweep's
        own minimum), which the chosen teacher's students are judged against (Figure 26(b)).
        Teachers and students come from the teacher cache where trained before, so a killed
        check resumes; the seconds shown are those of the run that computed the numbers.
        """
        from featlearn.studies.teacher_check import starts_above_width_one, teacher_check

        started = time.perf_counter()
        rows = teacher_check(configs, folder, build=build, **item.options.get(args.scale, {})).rows
        seconds = time.perf_counter() - started
        results = {}
        for row in rows:
            name = "chosen teacher" if row["chosen"] else f"teacher FC({row['teacher_size']})"
            # The U-curve's minimum may lie past the sweep's larger end, or below a first size above width 1
            # (the smoothed minimum's window reaching it). A sweep that starts at width 1 hides nothing below
            # its first size: a minimum there is a result, the smallest U a student can have.
            edge = row["at_grid_end"] or starts_above_width_one(row)
            results[name] = {"log2_student_minimum": [math.log2(row["student_minimum"])], "at_grid_edge": [edge]}
            if row["chosen"]:
                results[TEACHER_SWEEP] = {"log2_student_minimum": [math.log2(row["teacher_size"])]}
        record = folder / "teacher_check.json"
        saved = json.loads(record.read_text()) if record.is_file() else {}
        if saved.get("results") == results:  # the same numbers, from the cache: keep the seconds that computed them
            seconds = saved["seconds"]
        record.write_text(json.dumps({"results": results, "seconds": seconds}, indent=1))
        return {
            "status": "run",
            "results": results,
            "tuned": {},
            "training_seconds": seconds,
            "folder": folder,
            "table": (folder / "teacher_check.md").read_text().splitlines()[2:],
        }

    def lines(self, outcome: dict) -> list[str]:  # noqa: D102
        return ["", *outcome["table"]]

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        return [_copy(outcome["folder"] / "teacher_check.png", figures / f"{item.slug}_teacher_check.png")]


class CalibrationItem:
    """Candidates of the paper's open constants run on one table; each objective's choice (:func:`calibrate`)."""

    def run(self, item: Item, plan: Plan, args: RunSettings, configs: list, folder: Path, build: BuildRun) -> dict:
        """Run :func:`~featlearn.studies.calibration.calibrate` with the scale's seeds (and ``options``' ``only``)."""
        options = dict(item.options.get(args.scale) or {})
        calibration = calibrate(
            configs,
            item.study,
            folder,
            options=compare_options(plan, args, calibration_methods(item.study)),  # the items' seeds and tuning
            only=options.get("only"),
            floors={column: floor["absolute"] for column, floor in judgement_rules(plan.paper)["tolerances"].items()},
            overwrite=args.overwrite,
            build=build,
            launcher=replace(args.launcher, folder=folder / "submitit"),
        )
        objectives = load_candidates(item.study).objectives
        return {
            "status": "run",
            "results": {},
            "chosen": dict(calibration.chosen),
            "defaults": {o.name: o.default for o in objectives},
            "met": dict(calibration.met),
            "met_all": {name: dict(v) for name, v in calibration.met_all.items()},
            "met_targets": {name: dict(v) for name, v in calibration.met_targets.items()},
            "tied": {o.name: calibration.tied(o.name, o.among) for o in objectives},
            "at_face_value": dict(calibration.face_chosen),
            "values": {name: dict(v) for name, v in calibration.values.items()},  # objective -> candidate -> J
            # objective -> candidate -> J's standard error (None: one seed, or unmeasured)
            "errors": {
                name: {c: (e if math.isfinite(e) else None) for c, e in v.items()}
                for name, v in calibration.errors.items()
            },
            "face_values": {name: dict(v) for name, v in calibration.face_values.items()},
            "face_errors": {
                name: {c: (e if math.isfinite(e) else None) for c, e in v.items()}
                for name, v in calibration.face_errors.items()
            },
            "training_seconds": trial_seconds(folder),
            "folder": folder,
        }

    def lines(self, outcome: dict) -> list[str]:
        """The calibration table (``calibration.md``) and each objective's choice."""
        table = Path(outcome["folder"]) / "calibration.md"
        return ["", *table.read_text().rstrip().splitlines()] if table.is_file() else []

    def pictures(self, item: Item, outcome: dict, figures: Path) -> list[Path]:  # noqa: D102
        return []


#: Each kind of item (the plan's ``kind``) and the class that runs and draws it.
ITEM_KINDS: dict[str, ItemKind] = {
    "compare": ComparisonTable(),
    "phases": Phases(),
    "transitions": Transitions(),
    "samples": SampleComplexity(),
    "teacher_check": TeacherCheck(),
    "calibration": CalibrationItem(),
}


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def sample_complexity_lines(outcome: dict) -> list[str]:
    """A ``samples`` item's measurements: the fits with their intervals, and n* against the theory's rates."""
    lines = ["| Method | alpha | 95% bootstrap interval | points |", "|---|---:|---|---:|"]
    for method, fit in outcome["fits"].items():
        if fit is None:
            lines.append(f"| {method} | NA | NA (fewer than two bracketed dimensions) | - |")
        else:
            interval = f"[{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"
            lines.append(f"| {method} | {fit['alpha']:.2f} | {interval} | {fit['points']} |")
    powers = outcome.get("log_powers") or {}
    if any(powers.values()):
        lines += [
            "",
            "Fits of the form n* = C d log^k d (log(n*/d) = k log log d + c; the same bootstrap). Theorem 3.1's "
            "recipe spends n = t m <= C d log^3 d samples (t <= C log d / eta steps, eta = theta = 1/log d, "
            "m = d/theta), so k <= 3.",
            "",
            "| Method | k | 95% bootstrap interval | points |",
            "|---|---:|---|---:|",
        ]
        for method, power in powers.items():
            if power is not None:
                interval = f"[{power['ci_low']:.2f}, {power['ci_high']:.2f}]"
                lines.append(f"| {method} | {power['k']:.2f} | {interval} | {power['points']} |")
    dims = sorted({row["d"] for row in outcome["rows"] if row["n_star"] != ""})
    if len(dims) > 1:
        forms = {
            "d^2 (the NTK, Section 1)": lambda d: 2 * math.log(d),
            "d^2 log d": lambda d: 2 * math.log(d) + math.log(math.log(d)),
            "d log^2 d": lambda d: math.log(d) + 2 * math.log(math.log(d)),
            "d log^3 d (Theorem 3.1's recipe)": lambda d: math.log(d) + 3 * math.log(math.log(d)),
        }
        slopes = ", ".join(f"{name}: {effective_slope(dims, form):.2f}" for name, form in forms.items())
        lines += [
            "",
            f"The exponent alpha a power-law fit over d = {dims[0]} ... {dims[-1]} sees in each claimed form "
            f"(least squares of log f(d) against log d): {slopes}.",
        ]
    lines += prediction_lines(outcome.get("predictions") or {})
    lines += batch_share_lines(outcome["rows"])
    lines += [
        "",
        "n* divided by d log^2 d (between d and the d log^3 d that Theorem 3.1's recipe spends at most) and by "
        "d^2 log d (just above the NTK's d^2, Section 1): a ratio that stays flat or falls as d grows is within "
        "that rate. A tuned method's rate at each d is the one its validation set chose (the study's tuning.csv "
        "lists every value's).",
        "",
        "| Method | d | n* | n* / (d log^2 d) | n* / (d^2 log d) | status | tuned |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for row in outcome["rows"]:
        d, n_star = row["d"], row["n_star"]
        tuned = (row.get("tuned") or "") + (" (grid's end)" if row.get("edge") else "")
        if n_star == "":
            lines.append(f"| {row['method']} | {d} | NA |  |  | {row['status']} | {tuned} |")
            continue
        log_d = math.log(d)
        lines.append(
            f"| {row['method']} | {d} | {n_star} | {n_star / (d * log_d**2):.2f} | {n_star / (d**2 * log_d):.3f} "
            f"| {row['status']} | {tuned} |"
        )
    return lines


def prediction_lines(predictions: dict[str, dict | None]) -> list[str]:
    """Markdown: each method's candidate forms fitted on the smaller d, predicting n* at the largest d."""
    rows = []
    for method, prediction in predictions.items():
        if prediction is None:
            continue
        cells = " | ".join(
            f"{form['predicted']:,.0f}: {form['error']:+.3f} [{form['low']:+.3f}, {form['high']:+.3f}]"
            for form in prediction["forms"].values()
        )
        fitted_on = ", ".join(str(d) for d in prediction["fitted_on"])
        rows.append(f"| {method} | {fitted_on} | {prediction['target']} | {prediction['measured']:,} | {cells} |")
    if not rows:
        return []
    return [
        "",
        "The rate as a prediction: each form fitted on the smaller d predicts n* at the largest d (the predicted "
        "n*, then the error log(predicted / measured) with its 95% bootstrap interval over the seeds and the "
        "brackets; a form predicts where its interval holds 0).",
        "",
        "| Method | fitted on d | predicts d | measured n* | " + " | ".join(SAMPLE_FORMS) + " |",
        "|---|---|---:|---:|" + "---|" * len(SAMPLE_FORMS),
        *rows,
    ]


def batch_share_lines(rows: list[dict]) -> list[str]:
    """How much of each method's alpha its imposed minibatch m(d) accounts for: n* = T* m, so alpha = alpha_T + alpha_m.

    alpha_m is the least-squares slope of log m against log d over the bracketed d; alpha_T the
    exponent of the steps T* = n*/m (:func:`fit_exponent` on the brackets divided by m).
    """
    lines = []
    for method in dict.fromkeys(row["method"] for row in rows):
        found = [r for r in rows if r["method"] == method and r["status"] == "found"]
        if len({r["d"] for r in found}) < 2:
            continue
        batch = effective_slope(
            [r["d"] for r in found], lambda d, m={r["d"]: r["batch_size"] for r in found}: math.log(m[d])
        )
        steps = fit_exponent([(r["d"], r["n_pass"] / r["batch_size"], r["n_fail"] / r["batch_size"]) for r in found])
        lines.append(
            f"| {method} | {batch:.2f} | {steps['alpha']:.2f} | [{steps['ci_low']:.2f}, {steps['ci_high']:.2f}] |"
        )
    if not lines:
        return []
    return [
        "",
        "What the imposed minibatch accounts for: n* = T* m, so alpha is the batch's exponent alpha_m (m = the "
        "study's batch rule, its least-squares slope over these d) plus the steps' exponent alpha_T (T* = n*/m, "
        "the same bootstrap over the points):",
        "",
        "| Method | alpha_m (the batch) | alpha_T (the steps) | 95% bootstrap interval |",
        "|---|---:|---:|---|",
        *lines,
    ]


def with_worst_count(metrics: dict) -> dict:
    """``metrics`` with ``count_acc_min``: each member's lowest accuracy over the counts s (CountAccuracy's).

    A classifier whose output is affine in s misses whole counts (0% at parity's counts 1 and 4);
    counts a member's test set lacks (NaN) are left out.
    """
    counts = [metrics[key] for key in metrics if re.fullmatch(r"count_acc_\d+", key)]  # each: a value per member
    if not counts:
        return metrics
    worst = [
        min((v for v in member if v is not None and math.isfinite(v)), default=float("nan"))
        for member in zip(*counts, strict=True)
    ]
    return {**metrics, "count_acc_min": worst}


def _tuned_values(folder: Path, prefix: str = "tuned:") -> dict[str, dict]:
    """The tuned constants, method -> {tuned key: chosen value}, from a compare folder's ``table.csv``.

    ``prefix="grid end:"`` gives those of them chosen at an end of their grid (the optimum may lie beyond).
    """
    tuned: dict[str, dict] = {}
    table = folder / "table.csv"
    if not table.is_file():
        return tuned
    for row in csv.DictReader(table.open()):
        if row["metric"].startswith(prefix):
            tuned.setdefault(row["method"], {})[row["metric"][len(prefix) :]] = row["mean"]
    return tuned


def trial_seconds(folder: Path) -> float:
    """The seconds every trial of a compare folder took when it ran (tuning included; reused runs count 0)."""
    return sum(json.loads(path.read_text())["seconds"] for path in folder.glob("**/result.json"))


# ---------------------------------------------------------------------- figures
#: A compare folder's record of the curves its report read (:func:`logged_curves`):
#: ``{"<run>/<tag>": [steps, values]}``, None for a tag the run did not log.
CURVES_FILE = "curves.json"


def read_curves(run: Path, tags) -> dict[str, list | None] | None:
    """``{tag: [steps, values]}`` of one run's TensorBoard events (None for a tag it did not log); None: no events."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if not (run.is_dir() and any(run.glob("events.out.tfevents.*"))):
        return None
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    logged = set(events.Tags().get("scalars", []))
    curves = {}
    for tag in tags:
        points = events.Scalars(tag) if tag in logged else None
        curves[tag] = None if points is None else [[p.step for p in points], [p.value for p in points]]
    return curves


def logged_curves(folder: Path, methods: list[str], tag: str) -> dict[str, tuple[list[int], list[float]]]:
    """Each method's curve of ``tag`` (steps, values) from its run's TensorBoard events; methods without it left out.

    The curves come from ``folder/curves.json`` (:func:`record_curves` fills it as soon as the item
    has run), and from the events only where it lacks them, which are then recorded: a committed
    report keeps its runs' results and that record, not their events (megabytes a run), and still
    regenerates its figures and step counts on a fresh clone.
    """
    record_path = folder / CURVES_FILE
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    curves, read = {}, False
    for method in methods:
        key = f"{Method(method).slug}/{tag}"
        logged = None if key in record else read_curves(folder / "tensorboard" / Method(method).slug, [tag])
        if logged is not None:
            record[key], read = logged[tag], True
        if record.get(key) is not None:
            steps, values = record[key]
            curves[method] = (list(steps), list(values))
    if read:
        record_path.write_text(json.dumps(dict(sorted(record.items()))) + "\n")
    return curves


def record_curves(folder: Path, methods: list[str]) -> None:
    """Record every curve a report may read of ``methods``' runs (:data:`REPORT_CURVES`) in ``folder/curves.json``.

    Each run's events are read once, as soon as its item has run, so a report filled across
    machines has the curves of every finished item although only its results and this record
    travel with it.
    """
    record_path = folder / CURVES_FILE
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    for method in methods:
        logged = read_curves(folder / "tensorboard" / Method(method).slug, REPORT_CURVES)
        record.update({f"{Method(method).slug}/{tag}": curve for tag, curve in (logged or {}).items()})
    record_path.write_text(json.dumps(dict(sorted(record.items()))) + "\n")


def steps_to_accuracy(folder: Path, methods: list[str], accuracy: float) -> dict[str, int | None]:
    """Each method's first logged step >= 1 at which every seed tests at ``accuracy`` percent or more.

    Read from the runs' ``heldout/test_acc_min`` (the smallest test accuracy over the members, which
    are the seeds; ``heldout/test_acc`` for a run of one member), so the step is one that every seed
    has reached: an upper bound on each seed's own first step, at the logging cadence. None: not
    reached by the end; a method whose run logged no test accuracy is left out.
    """
    curves = logged_curves(folder, methods, "heldout/test_acc")
    curves.update(logged_curves(folder, methods, "heldout/test_acc_min"))
    return {
        # 1e-4 points: TensorBoard keeps float32, in which 0.9 reads 0.89999998
        method: next((s for s, a in zip(steps, values, strict=True) if s >= 1 and 100.0 * a >= accuracy - 1e-4), None)
        for method, (steps, values) in curves.items()
    }


def accuracy_curves(folder: Path, methods: list[str], target: Path, title: str, split: str = "test") -> Path | None:
    """Accuracy against steps, one line per method (``heldout/test_acc`` of each run): a PNG, or None.

    Where the runs log a mixture's parts (``parts/original``, ``parts/injected``: Shi et al.'s
    Figures 4 and 22-25), each method's two parts are drawn instead, the original solid and
    the injected dashed, in the method's colour. With ``split="train"``: the training set's
    accuracy (``trainset/train_acc``, a ``HeldOutAccuracy(split=train)``), where a run logs it.
    """
    tag = "trainset/train_acc" if split == "train" else "heldout/test_acc"
    parts = {name: logged_curves(folder, methods, f"parts/{name}") for name in ("original", "injected")}
    if parts["original"] and split == "test":
        lines = [
            (f"{method}: {name} part", curve, "-" if name == "original" else "--", colour)
            for colour, method in enumerate(parts["original"])
            for name in ("original", "injected")
            if (curve := parts[name].get(method))
        ]
    else:
        lines = [
            (method, curve, "--" if "w/o structure" in method else "-", None)
            for method, curve in logged_curves(folder, methods, tag).items()
        ]
    in_percent = [(label, (steps, [100.0 * a for a in acc]), style, c) for label, (steps, acc), style, c in lines]
    return draw_curves(
        in_percent,
        target,
        title,
        f"{split} accuracy (%), mean over seeds",
    )


def loss_curves(folder: Path, methods: list[str], target: Path, title: str, first_step: int = 1) -> Path | None:
    """The training loss against steps, one line per method (``train/loss``, the mean over seeds): a PNG, or None.

    For Shi et al.'s hinge loss max(0, 1 - y f), a loss of 1 is that of f = 0 on every input, and of
    any f with |f| < 1 uncorrelated with the labels: a network that has gained no margin at all,
    which a training accuracy near the majority rate alone does not tell apart from a weak fit.
    ``first_step`` leaves out earlier steps whose loss would set the axis's scale.
    """
    lines = [
        (method, curve, "--" if "w/o structure" in method else "-", None)
        for method, curve in logged_curves(folder, methods, "train/loss").items()
    ]
    return draw_curves(lines, target, title, "training loss, mean over seeds", first_step)


def draw_curves(
    lines: list[tuple[str, tuple[list[int], list[float]], str, int | None]],
    target: Path,
    title: str,
    ylabel: str,
    first_step: int = 1,
) -> Path | None:
    """Curves (label, (steps, values), line style, colour index or None) on a log step axis: a PNG, or None.

    From ``first_step`` (at least 1). The legend goes beside the axes, or below them where a label is
    long enough to squeeze the axes.
    """
    if not lines:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for label, (steps, values), style, colour in lines:
        # From step 1: at step 0 Section 3.1's symmetric initialisation gives f = 0 on every input, whose
        # accuracy (y f > 0) is a 0% artefact, and a log axis has no place for step 0 anyway.
        kept = [(s, v) for s, v in zip(steps, values, strict=True) if s >= max(first_step, 1)]
        if not kept:
            continue
        axis.plot(
            [s for s, _ in kept],
            [v for _, v in kept],
            style,
            marker=".",
            label=label,
            color=None if colour is None else f"C{colour}",
        )
    axis.set_xscale("log")
    axis.set_xlabel("update step")
    axis.set_ylabel(ylabel)
    axis.set_title(textwrap.fill(title, 75), fontsize=10)  # a long title ran past the figure's edge
    axis.grid(alpha=0.3)
    if max(len(label) for label, *_ in lines) > 32:  # long labels beside the axes would squeeze them
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    else:
        axis.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes: no curve hidden
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=90, bbox_inches="tight")
    plt.close(figure)
    return target


#: Glasgow's phase curves a compare's runs may log (XORPhaseDiagnostics): tag, axis label, log scale.
PHASE_CURVES = (
    ("phase/gamma_min", "gamma_min (weakest cluster's margin)", False),
    ("phase/heavy_w_sig_mean", "mean ||w_sig|| on the heavy set S (log)", True),
    ("phase/outside_mass_frac", "share of sum ||w||^2 outside S", False),
)


#: Every tag a report's measurements and figures read from a compare's runs (:func:`record_curves`).
REPORT_CURVES = (
    "align/max_cos",
    "heldout/test_acc",
    "heldout/test_acc_min",
    "trainset/train_acc",
    "train/loss",
    "parts/original",
    "parts/injected",
    *(tag for tag, _, _ in PHASE_CURVES),
    *(tag for tag, _, _ in PARITY_CURVES),
)


def phase_curves(folder: Path, methods: list[str], target: Path, title: str) -> Path | None:
    """Glasgow's phase curves against steps, a panel per quantity and a line per method: a PNG, or None.

    The weakest margin gamma_min (Lemma 4.4), the mean ||w_sig|| on the heavy set S fixed at
    the boundary step (on a log axis, where exponential growth is a straight line and linear
    growth bends over), and the share of Definition 4.2's mass outside S (Remark 4.3).
    Nothing is drawn where no run logs gamma_min.
    """
    curves = {tag: logged_curves(folder, methods, tag) for tag, _, _ in PHASE_CURVES}
    if not curves["phase/gamma_min"]:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(PHASE_CURVES), figsize=(13.0, 3.8))
    for axis, (tag, label, log_scale) in zip(axes, PHASE_CURVES, strict=True):
        for colour, method in enumerate(methods):
            if method in curves[tag]:
                steps, values = curves[tag][method]
                axis.plot(steps, values, marker=".", markersize=3, label=method, color=f"C{colour}")
        if log_scale and curves[tag]:
            axis.set_yscale("log")
        axis.set_xlabel("update step")
        axis.set_title(label, fontsize=9)
        axis.grid(alpha=0.3)
    axes[-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.suptitle(textwrap.fill(title, 110), fontsize=10)
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=90, bbox_inches="tight")
    plt.close(figure)
    return target


def neuron_pictures(folder: Path, target: Path, slug: str) -> list[Path]:
    """The pictures of the neurons the Network run drew, copied to ``target``.

    Shi et al.'s MDS pictures (``mds_step*.png``) and Glasgow's signal-plane pictures
    (``phase_neurons_step*.png``), in step order.
    """
    run = folder / "tensorboard" / "network"
    drawn = [*run.glob("mds_step*.png"), *run.glob("phase_neurons_step*.png")]
    pictures = sorted(drawn, key=lambda p: (p.stem.split("_step")[0], int(re.findall(r"\d+", p.stem)[-1])))
    copied = []
    for picture in pictures:
        destination = target / f"{slug}_{picture.name}"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(picture, destination)
        copied.append(destination)
    return copied
