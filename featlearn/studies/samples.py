r"""``featlearn samples``: how many samples a method needs, as a function of the dimension.

Glasgow (2023, Theorem 3.1) proves that SGD on the two-layer network learns the
XOR function from n = d polylog(d) samples, while kernel methods such as the
network's NTK need on the order of d^2. This command measures that curve::

    featlearn samples --config configs/experiments/glasgow_xor.yaml \
        --study samples/glasgow_cpu --out DIR [--dims 8,16,32] [--seeds 8] [--target-error 0.05]

**The study file** (default: the shipped ``samples/glasgow_cpu.yaml``) states, in the
experiment config's own shape:

* ``base``: overrides of the experiment shared by every method (e.g. no diagnostics);
* ``scale``: how the config grows with d, as ``dotted.config.path: expression in d``
  (``ceil(d * log(d))``; names: d, log, log2, sqrt, ceil, floor, min, max, numbers and
  + - * / **), applied after the overrides;
* ``methods``: ``name: {model: ..., data: ..., trainer: ..., scale: ..., tune: ...}`` overrides
  per method (e.g. the NTK is ``model.class_path: LinearizedTwoLayerNet``); ``tune:
  {dotted.path: [values]}`` (one path) chooses that constant per d (below);
* defaults of the options below (``dims``, ``seeds``, ``target_error``,
  ``pass_fraction``, ``resolution``, ``budget``, ``epochs``, ``n_max``); the command
  line wins.

**n\*(d)**, per method and d: the smallest number of training samples n at which at
least ``pass_fraction`` of the seeds reach test error <= ``target_error``. The search
starts at the smallest budget (one step's batch), doubles n until a trial passes
(or n would pass ``n_max``: "not found"), then bisects [n_fail, n_pass] at the
geometric mean until n_pass / n_fail <= ``resolution`` or no budget lies between.
The test error is measured on the data model's test set (``data.test_size`` fresh
samples). The search assumes that passing is monotone in n; a trial that contradicts
that is kept in ``trials.csv`` and the bracket keeps the smallest n that passed.

**Tuned constants** (a method's ``tune``, such as the NTK's step size): a baseline gets the
care the network gets, so its rate is chosen per d rather than fixed once. At each d every
grid value runs its own search, judged on the *validation* set (``data.val_size`` fresh
samples, which the study must set): its validation n*. A value needs no budget above the best
validation n* found so far at that d (its search stops there, "not better"). The value with the
smallest validation n* (the first listed on a tie) is the method's at that d, and its n* is
then searched on the test set, reusing every trial already run. ``tuning.csv`` lists each
value's validation n*; a choice at either end of the grid is flagged (``edge``): the optimum
may lie beyond it.

**Budgets** (the batch m is the scaled config's ``data.init_args.batch_size``):

* ``online`` (the setting of Theorem 3.1): n = T m, T update steps on fresh batches of m
  samples; the search runs over whole steps T, so n is a multiple of m.
* ``finite``: a training set of ``train_size = n`` samples, minibatches of m distinct
  samples, trained for ``ceil(epochs * n / m)`` steps (each sample seen ``epochs``
  times): the stopping rule, stated in the output with the trials' final train accuracy.

**Seeds** are one ensemble per trial (member s: ``model.seed + s``, data stream
``data.seed + s``), and every method sees the same data streams.

**Outputs** in DIR: ``samples.csv`` (method, d, m, n_star, n_fail, n_pass, seeds
passing, status), ``trials.csv`` (every trial), ``samples.md`` (the table and the
fitted exponents), ``samples.png`` and the TensorBoard image ``samples/n_star``
(``DIR/tensorboard``) with n*(d) per method on log-log axes and the least-squares fit
log n* = alpha log d + c; alpha's interval is a bootstrap over the points and over the
seeds within each d (the seeds drawn re-bracket n* among the budgets tried: ``seed_errors`` in
``trials.csv``), each n* drawn log-uniformly within its bracket. Each trial's folder
``DIR/trials/<method>/d<d>/n<n>`` holds ``config.yaml`` (``featlearn fit --config`` runs
it alone) and ``result.json``. A re-run reuses every finished trial whose config is
unchanged (an interrupted search resumes), and refuses to mix results of a changed
config (``--overwrite`` discards them).
"""

from __future__ import annotations

import argparse
import copy
import csv
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from featlearn.config_files import resolve_config
from featlearn.studies.exponents import fit_exponent, found_points
from featlearn.studies.scaling import apply_scale
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

DEFAULT_STUDY = "samples/glasgow_cpu"
BUDGETS = ("online", "finite")
#: Study-file keys besides base/scale/methods: defaults of the command-line options.
OPTION_KEYS = ("dims", "seeds", "target_error", "pass_fraction", "resolution", "budget", "epochs", "n_max")
_METHOD_KEYS = {"model", "data", "trainer", "scale", "tune"}


# ---------------------------------------------------------------------- the search
@dataclass
class SampleSearch:
    """Doubling, then bisection on a log scale, over integer budgets k (n = k * unit).

    Args:
        unit: Samples per budget unit (online: the batch m, k counts steps; finite: 1).
        k_min: The smallest budget (online 1 step; finite one batch, k = m).
        k_max: The largest budget tried.
        resolution: Stop when k_pass / k_fail <= resolution (> 1).
    """

    unit: int
    k_min: int
    k_max: int
    resolution: float
    k_fail: int | None = None
    k_pass: int | None = None
    tried: dict[int, bool] = field(default_factory=dict)

    def next_budget(self) -> int | None:
        """The next k to try, or None when the search is over."""
        if not self.tried:
            return self.k_min
        if self.k_pass is None:  # doubling up until a pass
            k = 2 * max(self.tried)
            if k > self.k_max:
                k = self.k_max if self.k_max not in self.tried else None
            return k
        if self.k_fail is None:  # only reachable if k_min ever passes: nothing smaller to try
            return None
        if self.k_pass / self.k_fail <= self.resolution:
            return None
        mid = round(math.sqrt(self.k_fail * self.k_pass))
        mid = min(max(mid, self.k_fail + 1), self.k_pass - 1)
        return mid if self.k_fail < mid < self.k_pass else None

    def record(self, k: int, passed: bool) -> None:
        """A trial at budget k passed (or not)."""
        self.tried[k] = passed
        if passed:
            self.k_pass = k if self.k_pass is None else min(self.k_pass, k)
        elif self.k_pass is None or k < self.k_pass:
            self.k_fail = k if self.k_fail is None else max(self.k_fail, k)

    @property
    def status(self) -> str:
        """``found`` (bracketed), ``at_min`` (the smallest budget passed) or ``not_found`` (none passed)."""
        if self.k_pass is None:
            return "not_found"
        return "at_min" if self.k_fail is None else "found"


# ---------------------------------------------------------------------- the study file
@dataclass
class SampleMethod:
    """One curve of the study: overrides of the experiment and its own scaling."""

    name: str
    overrides: dict
    scale: dict
    #: {dotted.path: [values]}: one constant chosen per d on the validation set (empty: none).
    tune: dict = field(default_factory=dict)

    @property
    def slug(self) -> str:  # noqa: D102
        return re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")

    def at(self, value) -> SampleMethod:
        """This method with its tuned constant set to ``value`` (a grid point; no grid left)."""
        (path,) = self.tune
        overrides = copy.deepcopy(self.overrides)
        set_path(overrides, path, value, f"methods.{self.name}.tune")
        scale = {key: expr for key, expr in self.scale.items() if key != path}  # the grid's value wins over a rule
        return SampleMethod(f"{self.name} [{path.rsplit('.', 1)[-1]} = {value!r}]", overrides, scale)


@dataclass
class Study:
    """A study file: shared overrides and scaling, the methods, and option defaults."""

    base: dict
    scale: dict
    methods: list[SampleMethod]
    options: dict


def load_study(path: Path) -> Study:
    """Read a study file (see the module docstring).

    Raises:
        ValueError: An unknown key, a method that is not a mapping, or a non-mapping scale.
    """
    content = load_yaml(path, "--study")
    unknown = set(content) - {"base", "scale", "methods", *OPTION_KEYS}
    if unknown:
        raise ValueError(
            f"--study {str(path)!r} has unknown keys {sorted(unknown)}; allowed: base, scale, methods, "
            f"{', '.join(OPTION_KEYS)}."
        )
    base, scale, entries = content.get("base") or {}, content.get("scale") or {}, content.get("methods")
    for name, value in (("base", base), ("scale", scale)):
        if not isinstance(value, dict):
            raise ValueError(f"--study {str(path)!r}: {name} must be a mapping, got {value!r}.")
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"--study {str(path)!r} needs a non-empty mapping 'methods: {{name: overrides}}'.")
    methods = []
    for name, spec in entries.items():
        spec = dict(spec or {})
        if set(spec) - _METHOD_KEYS:
            raise ValueError(
                f"Method {name!r} in {str(path)!r} has unknown keys {sorted(set(spec) - _METHOD_KEYS)}; "
                f"allowed: {sorted(_METHOD_KEYS)}."
            )
        own_scale = spec.pop("scale", None) or {}
        if not isinstance(own_scale, dict):
            raise ValueError(f"Method {name!r} in {str(path)!r}: scale must be a mapping, got {own_scale!r}.")
        tune = spec.pop("tune", None) or {}
        if tune and (
            not isinstance(tune, dict)
            or len(tune) != 1
            or any(not isinstance(v, list) or len(v) < 2 or len(set(map(repr, v))) != len(v) for v in tune.values())
        ):
            raise ValueError(
                f"Method {name!r} in {str(path)!r}: tune must map one dotted config path to a list of at least two "
                f"distinct values (model.init_args.training.lr: [3, 10, 30]), got {tune!r}."
            )
        methods.append(SampleMethod(str(name), spec, own_scale, dict(tune)))
    slugs = [m.slug for m in methods]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"Method names in {str(path)!r} must differ in letters and digits: {slugs}.")
    return Study(base, scale, methods, {k: content[k] for k in OPTION_KEYS if k in content})


# ---------------------------------------------------------------------- options
@dataclass
class Settings:
    """The checked settings of one ``featlearn samples`` run."""

    dims: list[int]
    seeds: int
    target_error: float
    pass_fraction: float
    resolution: float
    budget: str
    epochs: float
    n_max: int


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The ``featlearn samples`` options (None: the study file's value, else the default)."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --ou must not be taken for --out: a misspelt option is refused
        prog="featlearn samples",
        description="Sample complexity n*(d) of each method of a study (default: Glasgow's XOR, the network "
        "against its NTK): write DIR/samples.csv, DIR/samples.md and the log-log plot with fitted exponents.",
    )
    parser.add_argument("--config", action="append", required=True, help="Experiment config (repeat to layer).")
    parser.add_argument("--out", required=True, help="Output folder DIR.")
    parser.add_argument("--study", default=DEFAULT_STUDY, help="Study file, a path or a shipped name (%(default)s).")
    parser.add_argument("--dims", default=None, help="Comma-separated dimensions, e.g. 16,32,64.")
    parser.add_argument("--seeds", type=int, default=None, help="Seeds per trial (one ensemble), at least 2.")
    parser.add_argument("--target-error", type=float, default=None, help="Test error to reach, in (0, 0.5).")
    parser.add_argument("--pass-fraction", type=float, default=None, help="Fraction of seeds that must reach it.")
    parser.add_argument("--resolution", type=float, default=None, help="Stop when n_pass / n_fail <= this (> 1).")
    parser.add_argument("--budget", choices=BUDGETS, default=None, help="online (n = steps x m) or finite.")
    parser.add_argument("--epochs", type=float, default=None, help="finite budget: passes over the training set.")
    parser.add_argument("--n-max", type=int, default=None, help="Largest n tried (default 2^24).")
    parser.add_argument("--only", nargs="+", default=None, help="Run only these methods (names as in the study).")
    parser.add_argument("--seed", type=int, default=None, help="First seed (default: the config's seed_everything).")
    parser.add_argument("--overwrite", action="store_true", help="Discard results in DIR whose config changed.")
    Launcher.add_arguments(parser)
    return parser.parse_args(argv)


def settings_of(given: dict, study: Study, flag: Callable[[str], str] = str) -> Settings:
    """Merge the given options (None: not given) over the study file's defaults and check every value.

    Args:
        given: Option name (:data:`OPTION_KEYS`, ``seed``) -> value or None.
        study: The study file, whose options are the defaults.
        flag: How a message names an option (``--n-max`` on the command line, ``n_max`` in Python).

    Raises:
        ValueError: A setting out of range, naming it and what it must be.
    """
    options = dict(study.options)

    def pick(name: str, default):
        value = given.get(name)
        return value if value is not None else options.get(name, default)

    dims = pick("dims", None)
    if dims is None:
        raise ValueError(f"{flag('dims')} is required (e.g. 16,32,64), or give dims: [...] in the study file.")
    if isinstance(dims, str):
        try:
            dims = [int(x) for x in dims.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"{flag('dims')} must be comma-separated integers, got {dims!r}.") from None
    if not dims or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise ValueError(f"{flag('dims')} must be positive integers, got {dims!r}.")
    if len(set(dims)) != len(dims):
        raise ValueError(f"{flag('dims')} lists a dimension twice: {dims!r}.")
    settings = Settings(
        dims=sorted(dims),
        seeds=pick("seeds", 8),
        target_error=pick("target_error", 0.05),
        pass_fraction=pick("pass_fraction", 0.5),
        resolution=pick("resolution", 1.25),
        budget=pick("budget", "online"),
        epochs=pick("epochs", 20.0),
        n_max=pick("n_max", 2**24),
    )
    if not isinstance(settings.seeds, int) or settings.seeds < 2:
        raise ValueError(
            f"{flag('seeds')} must be an integer >= 2 (a success rate needs several seeds), got {settings.seeds}."
        )
    if not 0 < settings.target_error < 0.5:
        raise ValueError(
            f"{flag('target_error')} must lie in (0, 0.5) (0.5 is chance on a balanced binary task), "
            f"got {settings.target_error}."
        )
    if not 0 < settings.pass_fraction <= 1:
        raise ValueError(f"{flag('pass_fraction')} must lie in (0, 1], got {settings.pass_fraction}.")
    if not settings.resolution > 1:
        raise ValueError(f"{flag('resolution')} must be > 1 (the final n_pass / n_fail), got {settings.resolution}.")
    if settings.budget not in BUDGETS:
        raise ValueError(f"{flag('budget')} must be one of {BUDGETS}, got {settings.budget!r}.")
    if not settings.epochs > 0:
        raise ValueError(f"{flag('epochs')} must be > 0, got {settings.epochs}.")
    if not isinstance(settings.n_max, int) or settings.n_max < 1:
        raise ValueError(f"{flag('n_max')} must be a positive integer, got {settings.n_max}.")
    if given.get("seed") is not None and given["seed"] < 0:
        raise ValueError(f"{flag('seed')} must be >= 0, got {given['seed']}.")
    return settings


# ---------------------------------------------------------------------- one search
@dataclass
class Track:
    """One search of the study: a method (or one grid value of a tuned method) at one d.

    Args:
        label: The name its trials and row carry (``NTK``, or ``NTK [lr = 30]`` for a grid value).
        slug: Its trials' folder under ``trials/`` (a tuned method's n* reuses its chosen value's).
        d: The dimension.
        scaled: The scaled config (before the budget).
        search: The budget search.
        split: The set a trial is judged on: ``test`` (n*) or ``val`` (a grid value, tuning).
        value: The tuned constant's value (a grid value; a tuned method's chosen one, None if none passed).
        tuned: It is a tuned method's n* search.
        cap: No budget above this k (a grid value: the best validation k_pass at its d so far).
    """

    label: str
    slug: str
    d: int
    scaled: dict
    search: SampleSearch
    split: str = "test"
    value: object = None
    tuned: bool = False
    cap: int | None = None

    def budget(self) -> int | None:
        """The next k to try, or None when the search is over (or would pass its cap)."""
        k = self.search.next_budget()
        return None if k is None or (self.cap is not None and k > self.cap) else k


def new_track(
    experiment: dict,
    study: Study,
    method: SampleMethod,
    d: int,
    settings: Settings,
    *,
    split: str = "test",
    value: object = None,
    label: str | None = None,
) -> Track:
    """The search of ``method`` at dimension d (checked: a bad expression or budget raises here)."""
    scaled = scaled_config(experiment, study, method, d)
    m = batch_of(scaled, f"method {method.name!r} at d = {d}")
    if settings.budget == "online":
        search = SampleSearch(unit=m, k_min=1, k_max=max(1, settings.n_max // m), resolution=settings.resolution)
    else:
        if m > settings.n_max:
            raise ValueError(
                f"--budget finite: method {method.name!r} at d = {d} has batch m = {m} > --n-max "
                f"{settings.n_max}: a training set smaller than one batch. Raise --n-max or shrink the "
                f"batch (data.init_args.batch_size / the study's scale)."
            )
        search = SampleSearch(unit=1, k_min=m, k_max=settings.n_max, resolution=settings.resolution)
    return Track(label or method.name, method.slug, d, scaled, search, split, value)


def choose_value(grid: Sequence[Track]) -> Track | None:
    """The grid value with the smallest validation n* (the first listed on a tie); None if none passed."""
    found = [t for t in grid if t.search.k_pass is not None]
    return min(found, key=lambda t: t.search.k_pass * t.search.unit) if found else None


# ---------------------------------------------------------------------- one trial
def scaled_config(experiment: dict, study: Study, method: SampleMethod, d: int) -> dict:
    """The experiment with the study's and the method's overrides, scaled to dimension d."""
    config = merge_configs(merge_configs(experiment, study.base), method.overrides)
    config = apply_scale(config, study.scale, d, "scale")
    return apply_scale(config, method.scale, d, f"methods.{method.name}.scale")


def batch_of(config: dict, where: str) -> int:
    """The scaled config's batch size m (a positive integer).

    Raises:
        ValueError: The config has no integer ``data.init_args.batch_size``.
    """
    m = (config.get("data") or {}).get("init_args", {}).get("batch_size")
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise ValueError(
            f"{where}: the budget rule needs data.init_args.batch_size to be one positive integer (the batch "
            f"m), got {m!r}; set it in the experiment or in the study's scale."
        )
    return m


def trial_config(scaled: dict, settings: Settings, n: int, seed: int | None, folder: Path) -> dict:
    """The full config of one trial at budget n (see the module docstring's budget rules)."""
    config = copy.deepcopy(scaled)
    m = batch_of(config, "trial")
    data_args = config.setdefault("data", {}).setdefault("init_args", {})
    trainer = config.setdefault("trainer", {})
    if settings.budget == "online":
        data_args["train_size"] = None
        trainer["max_steps"] = n // m
    else:
        data_args["train_size"] = n
        trainer["max_steps"] = math.ceil(settings.epochs * n / m)
    if seed is not None:
        config["seed_everything"] = seed
    config.setdefault("model", {}).setdefault("init_args", {})["ensemble_size"] = settings.seeds
    trainer["logger"] = tensorboard_logger(folder, "tensorboard")
    trainer["enable_progress_bar"] = False
    trainer["enable_model_summary"] = False
    return config


def passed(metrics: dict, settings: Settings, split: str = "test") -> tuple[bool, int]:
    """(whether the trial passes, how many seeds reached the target error); a diverged trial fails.

    A run of several seeds stops at the first NaN or infinite loss of any of them, so a
    diverged trial counts no seed as passing. ``split``: the set the error is read on (``val``
    for a tuned constant's grid, ``test`` for n*).
    """
    if "diverged" in metrics:
        return False, 0
    if metrics.get(f"{split}_acc") is None:
        raise ValueError(
            "A tuned method's grid is judged on the validation set, and this trial has none: set "
            "data.init_args.val_size > 0 in the study's base (the NTK of samples/glasgow_cpu: 4096)."
        )
    errors = [1.0 - acc / 100.0 for acc in metrics[f"{split}_acc"]]
    good = sum(e <= settings.target_error + 1e-12 for e in errors)
    return good >= settings.pass_fraction * len(errors) - 1e-9, good


def seed_outcomes(trials: Sequence[dict], method: str, settings: Settings) -> dict[int, list[tuple[int, list[bool]]]]:
    """Per d, each test-set trial of ``method``: (n, whether each seed reached the target error).

    What the bootstrap over seeds re-brackets n* with (:func:`featlearn.studies.exponents.fit_exponent`);
    a diverged trial passes no seed.
    """
    outcomes: dict[int, dict[int, list[bool]]] = {}
    for t in trials:
        if t["method"] != method or t.get("split", "test") != "test":
            continue
        if t["seed_errors"] == "diverged":
            oks = [False] * settings.seeds
        else:
            oks = [float(e) <= settings.target_error + 1e-12 for e in t["seed_errors"].split()]
        outcomes.setdefault(int(t["d"]), {})[int(t["n"])] = oks
    return {d: sorted(tried.items()) for d, tried in outcomes.items()}


# ---------------------------------------------------------------------- outputs
def write_outputs(
    out: Path, rows: list[dict], trials: list[dict], settings: Settings, title: str, tuning: list[dict] | None = None
) -> dict:
    """Write samples.csv, trials.csv, samples.md (tuning.csv with a tuned method) and the plot; the fits by method.

    Each fit's interval resamples the d-values and the seeds within each d (:func:`seed_outcomes`).
    """
    share = settings.pass_fraction
    columns = ["method", "d", "batch_size", "budget", "n_star", "n_fail", "n_pass", "seeds_passing", "seeds", "status"]
    columns += ["tuned", "edge"]
    with open(out / "samples.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    trial_columns = ["method", "d", "n", "split", "steps", "passed", "seeds_passing", "test_error_mean"]
    trial_columns += ["train_acc_mean", "seed_errors"]
    with open(out / "trials.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*trial_columns, "seconds"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(trials)
    fits = {
        method: fit_exponent(
            found_points(rows, method), outcomes=seed_outcomes(trials, method, settings), pass_fraction=share
        )
        for method in dict.fromkeys(r["method"] for r in rows)
    }
    rule = (
        "online: n = T x m (T steps on fresh batches of m)"
        if settings.budget == "online"
        else f"finite: train_size = n, ceil({settings.epochs:g} n / m) steps of m distinct samples"
    )
    lines = [
        f"# Sample complexity on `{title}`",
        "",
        f"n* = the smallest n at which at least {settings.pass_fraction:g} of {settings.seeds} seeds reach test "
        f"error <= {settings.target_error:g}; doubling then log-scale bisection to n_pass / n_fail <= "
        f"{settings.resolution:g}. Budget {rule}.",
        "",
        "| method | d | m | n* | bracket (n_fail, n_pass] | seeds passing | status |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        star = "NA" if r["n_star"] == "" else str(r["n_star"])
        lines.append(
            f"| {r['method']} | {r['d']} | {r['batch_size']} | {star} | ({r['n_fail'] or '-'}, {r['n_pass'] or '-'}] "
            f"| {r['seeds_passing']}/{r['seeds']} | {r['status']} |"
        )
    lines += ["", "Fitted exponents, n* ~ d^alpha (least squares on log-log, bracketed points only):", ""]
    lines += ["| method | alpha | std. error | 95% bootstrap interval | points |", "|---|---:|---:|---|---:|"]
    for method, fit in fits.items():
        if fit is None:
            lines.append(f"| {method} | NA | NA | NA (fewer than two bracketed dimensions) | - |")
        else:
            stderr = "NA" if fit["stderr"] is None else f"{fit['stderr']:.2f}"
            lines.append(
                f"| {method} | {fit['alpha']:.2f} | {stderr} | [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}] "
                f"| {fit['points']} |"
            )
    if tuning:
        with open(out / "tuning.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(tuning[0]))
            writer.writeheader()
            writer.writerows(tuning)
        lines += ["", "Tuned per d on the validation set (each value's validation n*; the chosen in bold):", ""]
        lines += ["| method | d | value | validation n* | status |", "|---|---:|---|---:|---|"]
        for r in tuning:
            value = f"**{r['value']}**" if r["chosen"] else r["value"]
            lines.append(f"| {r['method']} | {r['d']} | {value} | {r['val_n_star'] or 'NA'} | {r['status']} |")
        edges = [f"{r['method']} at d = {r['d']}" for r in rows if r.get("edge")]
        if edges:
            lines += ["", f"Chosen at an end of its grid (the optimum may lie beyond): {', '.join(edges)}."]
    (out / "samples.md").write_text("\n".join(lines) + "\n")
    _plot(out, rows, fits, settings, step=len(trials))
    return fits


def _plot(out: Path, rows: list[dict], fits: dict, settings: Settings, step: int) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        print("[samples] matplotlib is not installed: no samples.png (pip install matplotlib)", flush=True)
        return
    figure, axes = plt.subplots(figsize=(6, 4.5))
    for index, (method, fit) in enumerate(fits.items()):
        color = f"C{index}"
        mine = [r for r in rows if r["method"] == method and r["n_pass"] != ""]
        if not mine:
            continue
        dims = [r["d"] for r in mine]
        n_pass = [r["n_pass"] for r in mine]
        lower = [r["n_pass"] - (r["n_fail"] or r["n_pass"]) for r in mine]
        label = method
        if fit is not None:
            label += f": alpha = {fit['alpha']:.2f} [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"
        axes.errorbar(dims, n_pass, yerr=[lower, [0] * len(mine)], fmt="o", color=color, capsize=3, label=label)
        if fit is not None:
            grid = [min(dims), max(dims)]
            axes.plot(grid, [math.exp(fit["intercept"]) * d ** fit["alpha"] for d in grid], "-", color=color, lw=1)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("dimension d")
    axes.set_ylabel("n* (samples to reach the target)")
    axes.set_title(f"n*(d): test error <= {settings.target_error:g} in {settings.pass_fraction:g} of seeds")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "samples.png", dpi=120)
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(out / "tensorboard" / "samples")) as writer:
        # One image per round, at the number of trials it rests on: TensorBoard's slider shows the search grow.
        writer.add_figure("samples/n_star", figure, global_step=step)
    plt.close(figure)


# ---------------------------------------------------------------------- command
@dataclass
class SampleComplexityResult:
    """What :func:`samples` measured: n*(d) per method, and the exponents fitted to it.

    Args:
        out: The folder of ``samples.csv``, ``samples.md``, ``samples.png`` and every trial.
        rows: One per (method, d): ``method``, ``d``, ``batch_size``, ``budget``, ``n_star``
            (the smallest passing n, "" if none), the bracket ``n_fail``/``n_pass``,
            ``seeds_passing``, ``seeds``, ``status``.
        fits: Method -> n* ~ d^alpha (:func:`fit_exponent`: ``alpha``, ``ci_low``, ``ci_high``...),
            None with fewer than two bracketed dimensions.
        seconds: Wall time of the study.
    """

    out: Path
    rows: list[dict]
    fits: dict[str, dict | None]
    seconds: float
    #: Method -> each d's tested budgets and per-seed outcomes (what the fits' bootstrap resamples).
    outcomes: dict[str, dict] = field(default_factory=dict)
    #: The share of seeds a budget needs (the study's pass_fraction).
    pass_fraction: float = 0.5

    def n_star(self, method: str, d: int) -> int | None:
        """n*(d) of ``method``: the smallest budget found to pass; None where none passed."""
        row = next((r for r in self.rows if r["method"] == method and r["d"] == d), None)
        return None if row is None or row["n_star"] == "" else int(row["n_star"])


def samples(
    configs: Sequence[str | Path | Mapping],
    out: str | Path,
    *,
    study: str | Path = DEFAULT_STUDY,
    dims: Sequence[int] | str | None = None,
    seeds: int | None = None,
    target_error: float | None = None,
    pass_fraction: float | None = None,
    resolution: float | None = None,
    budget: str | None = None,
    epochs: float | None = None,
    n_max: int | None = None,
    only: Sequence[str] | None = None,
    seed: int | None = None,
    overwrite: bool = False,
    launcher: Launcher | None = None,
    build: BuildRun | None = None,
    log: Callable[[str], None] | None = None,
    flag: Callable[[str], str] = str,
) -> SampleComplexityResult:
    """The sample complexity n*(d) of each method of a study, and the exponent alpha of n* ~ d^alpha.

    Args:
        configs: The experiment: shipped config names, paths or mappings, merged in order.
        out: Folder of the outputs and trials; finished trials there are reused.
        study: The study file (its methods, scaling and option defaults), a path or a shipped name.
        dims: The dimensions d (None: the study file's).
        seeds: Seeds per trial, at least 2 (None: the study's, else 8).
        target_error: The test error a seed must reach, in (0, 0.5) (None: the study's, else 0.05).
        pass_fraction: The fraction of seeds that must reach it (None: the study's, else 0.5).
        resolution: The search stops when n_pass / n_fail <= this (None: the study's, else 1.25).
        budget: ``online`` (n = steps x m) or ``finite`` (None: the study's, else online).
        epochs: Passes over a finite training set (None: the study's, else 20).
        n_max: The largest n tried (None: the study's, else 2^24).
        only: Run only these methods of the study.
        seed: The first seed (None: the experiment's ``seed_everything``).
        overwrite: Discard results in ``out`` whose config changed (else: refuse).
        launcher: Where trials run (default: one after another in this process).
        build: Builds and runs one ``featlearn fit`` (default: :func:`featlearn.runner.build_cli`).
        log: Where progress lines go (default: printed, prefixed ``[samples]``).
        flag: How an error names an option (the command line passes its ``--flags``).

    Raises:
        ValueError: An option out of range (named), a bad study file, or an unknown method.
    """
    build = build or default_build()
    log = log or (lambda line: print(f"[samples] {line}", flush=True))
    study_name = study
    study = load_study(resolve_config(study_name))
    given = {"dims": dims, "seeds": seeds, "target_error": target_error, "pass_fraction": pass_fraction,
             "resolution": resolution, "budget": budget, "epochs": epochs, "n_max": n_max, "seed": seed}  # fmt: skip
    if isinstance(given["dims"], Sequence) and not isinstance(given["dims"], str):
        given["dims"] = list(given["dims"])
    settings = settings_of(given, study, flag)
    methods = study.methods
    if only:
        names = [m.name for m in methods]
        missing = [n for n in only if n not in names]
        if missing:
            raise ValueError(
                f"{flag('only')} names {missing} are not in the study {str(study_name)!r}; its methods are {names}."
            )
        methods = [m for m in methods if m.name in only]
    experiment, names = merge_experiment(configs)
    order = {method.name: position for position, method in enumerate(methods)}
    out = Path(out)
    launcher = launcher or Launcher()
    if launcher.folder is None:
        launcher = replace(launcher, folder=out / "submitit")
    # Every (method, d) is checked before any trial runs: a bad expression or budget stops here.
    tracks: dict[tuple[str, int], Track] = {}  # (method, d) -> the search of its n* (test set)
    grids: dict[tuple[str, int], list[Track]] = {}  # (tuned method, d) -> one validation search per grid value
    for method in methods:
        for d in settings.dims:
            if method.tune:
                (values,) = method.tune.values()
                grids[(method.name, d)] = [
                    new_track(experiment, study, method.at(value), d, settings, split="val", value=value)
                    for value in values
                ]
            else:
                tracks[(method.name, d)] = new_track(experiment, study, method, d, settings)
    out.mkdir(parents=True, exist_ok=True)
    trial_rows: list[dict] = []
    start = time.perf_counter()
    title = " + ".join(names)
    rows: list[dict] = []
    fits: dict = {}
    while True:
        for key, grid in grids.items():  # a tuned method's n* is searched once its grid has chosen
            cap = min((t.search.k_pass for t in grid if t.search.k_pass is not None), default=None)
            for track in grid:  # no value needs more budget than the best found so far: it is not better
                track.cap = cap
            if key not in tracks and all(t.budget() is None for t in grid):
                chosen = choose_value(grid)
                method = next(m for m in methods if m.name == key[0])
                at = method.at(chosen.value) if chosen is not None else method.at(grid[0].value)
                tracks[key] = new_track(experiment, study, at, key[1], settings, label=key[0])
                tracks[key].value = None if chosen is None else chosen.value
                tracks[key].tuned = True
        live = [*tracks.values(), *(t for grid in grids.values() for t in grid)]
        round_trials: list[tuple[Track, int, Trial]] = []
        for track in live:
            k = track.budget()
            if k is None or (track.tuned and track.value is None):
                continue  # done, or a tuned method whose grid found no value that passes
            n = k * track.search.unit
            folder = out / "trials" / track.slug / f"d{track.d}" / f"n{n}"
            config = trial_config(track.scaled, settings, n, seed, folder)
            round_trials.append((track, k, Trial(f"{track.label} d={track.d} n={n}", folder, config)))
        if not round_trials:
            break
        results = run_trials(
            list({t.label: t for _, _, t in round_trials}.values()),  # a grid value and its test search may share one
            build,
            launcher,
            overwrite=overwrite,
            changed="the experiment, study file or an option such as --seeds, --budget or --seed changed",
            log=log,
            divergence_ok=True,  # a budget whose training diverged did not learn: it fails, the search goes on
        )
        for track, k, trial in round_trials:
            result = results[trial.label]
            ok, good = passed(result["metrics"], settings, track.split)
            track.search.record(k, ok)
            metrics = result["metrics"]
            diverged = "diverged" in metrics
            errors = [1.0 - a / 100.0 for a in metrics.get(f"{track.split}_acc") or []]
            train = metrics.get("train_acc")
            trial_rows.append(
                {
                    "method": track.label,
                    "d": track.d,
                    "n": k * track.search.unit,
                    "split": track.split,
                    "steps": trial.config["trainer"]["max_steps"] if diverged else metrics["steps"],
                    "passed": int(ok),
                    "seeds_passing": good,
                    "test_error_mean": "diverged" if diverged else f"{sum(errors) / len(errors):.4f}",
                    "train_acc_mean": "" if not train else f"{sum(train) / len(train):.2f}",
                    "seed_errors": "diverged" if diverged else " ".join(f"{e:.4f}" for e in errors),
                    "seconds": f"{result['seconds']:.1f}",
                }
            )
            if diverged:
                outcome = "diverged -> fail"
            else:
                target = f"{track.split} error <= {settings.target_error:g}"
                outcome = f"{good}/{settings.seeds} seeds at {target} -> {'pass' if ok else 'fail'}"
            log(f"{trial.label} ({track.split}): {outcome}")
        ordered = {key: tracks[key] for key in sorted(tracks, key=lambda k: (order[k[0]], k[1]))}
        rows = _rows(ordered, trial_rows, settings, grids)  # the outputs after every round: a long study shows progress
        fits = write_outputs(out, rows, trial_rows, settings, title, _tuning_rows(grids, tracks))
    outcomes = {
        method: seed_outcomes(trial_rows, method, settings) for method in dict.fromkeys(r["method"] for r in rows)
    }
    return SampleComplexityResult(out, rows, fits, time.perf_counter() - start, outcomes, settings.pass_fraction)


def samples_command(argv: list[str], build: BuildRun) -> SampleComplexityResult:
    """``featlearn samples`` with arguments ``argv`` (see :func:`parse_args`): :func:`samples`, then its table.

    Args:
        argv: The command's arguments.
        build: Builds and runs one ``featlearn fit`` (:func:`featlearn.runner.build_cli`).
    """
    args = parse_args(argv)
    study = samples(
        args.config,
        args.out,
        study=args.study,
        dims=args.dims,
        seeds=args.seeds,
        target_error=args.target_error,
        pass_fraction=args.pass_fraction,
        resolution=args.resolution,
        budget=args.budget,
        epochs=args.epochs,
        n_max=args.n_max,
        only=args.only,
        seed=args.seed,
        overwrite=args.overwrite,
        launcher=Launcher.from_args(args, Path(args.out) / "submitit"),
        build=build,
        flag=cli_flag,
    )
    print((study.out / "samples.md").read_text(), flush=True)
    print(f"[samples] study done in {study.seconds:.1f} s; {study.out / 'samples.png'}", flush=True)
    print(f"[samples] tensorboard --logdir {study.out}   (the plot and every trial's curves)", flush=True)
    return study


def _rows(tracks: dict, trial_rows: list[dict], settings: Settings, grids: dict) -> list[dict]:
    rows = []
    for (method, d), track in tracks.items():
        search, unit = track.search, track.search.unit
        n_pass = "" if search.k_pass is None else search.k_pass * unit
        n_fail = "" if search.k_fail is None else search.k_fail * unit
        seeds_passing = next(
            (t["seeds_passing"] for t in trial_rows if t["method"] == method and t["d"] == d and t["n"] == n_pass), 0
        )
        grid = [t.value for t in grids.get((method, d), [])]
        rows.append(
            {
                "method": method,
                "d": d,
                "batch_size": batch_of(track.scaled, method),
                "budget": settings.budget,
                "n_star": n_pass,
                "n_fail": n_fail,
                "n_pass": n_pass,
                "seeds_passing": seeds_passing,
                "seeds": settings.seeds,
                "status": search.status,
                "tuned": "" if not track.tuned or track.value is None else repr(track.value),
                "edge": int(bool(grid) and track.value is not None and track.value in (grid[0], grid[-1])),
            }
        )
    return rows


def _tuning_rows(grids: dict, tracks: dict) -> list[dict]:
    """One row per tuned method, d and grid value: its validation n* and whether it was chosen."""
    rows = []
    for (method, d), grid in grids.items():
        chosen = tracks[(method, d)].value if (method, d) in tracks else None
        for track in grid:
            search, unit = track.search, track.search.unit
            rows.append(
                {
                    "method": method,
                    "d": d,
                    "value": repr(track.value),
                    "val_n_star": "" if search.k_pass is None else search.k_pass * unit,
                    "n_fail": "" if search.k_fail is None else search.k_fail * unit,
                    "status": search.status
                    if search.k_pass is not None
                    else "not better (stopped at the best)"
                    if track.cap is not None
                    else search.status,
                    "chosen": int(chosen is not None and track.value == chosen),
                }
            )
    return rows
