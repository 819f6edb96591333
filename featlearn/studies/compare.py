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
import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from featlearn.config_files import resolve_config
from featlearn.schedules import canonical_segments, map_arguments
from featlearn.studies.methods import DEFAULT_METHODS, Method, MethodNotApplicable, load_methods, method_config
from featlearn.studies.trials import (
    BuildRun,
    Launcher,
    Trial,
    cli_flag,
    csv_number,
    default_build,
    merge_experiment,
    run_trials,
    summarize,
)
from featlearn.studies.tuning import CompareOptions, tune_methods

#: Table rows: (csv metric name, row label, decimals).
METRICS = (("train_acc", "Train Acc (%)", 2), ("test_acc", "Test Acc (%)", 2), ("cos_similarity", "Cos Similarity", 3))


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
    ``{"values", "val_acc", "edge"}``) gives the constants chosen on the validation set, as
    ``tuned:<key>`` rows of the CSV and a line under the table; those chosen at an end of their
    grid (``edge``) also as ``grid end:<key>`` rows, which the reproduction report reads.
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
                writer.writerow([name, metric, csv_number(mean), csv_number(std), n])
            flags = results[name].get("degenerate")
            if flags is not None:  # how many seeds degenerated (mean: that count)
                writer.writerow([name, "degenerate", repr(float(sum(flags))), "", len(flags)])
            for key, value in tuned.get(name, {}).get("values", {}).items():  # chosen on the validation set
                writer.writerow([name, f"tuned:{key}", repr(value), "", seeds])
            for key in tuned.get(name, {}).get("edge") or []:  # chosen at an end of its grid
                writer.writerow([name, f"grid end:{key}", repr(tuned[name]["values"][key]), "", seeds])
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


def same_run_digest(config: dict) -> str:
    """A digest of what a trial computes: its config without ``trainer.logger`` (where its curves go).

    Two trials with the same digest train the same networks on the same data, so one's
    result stands for the other's. Schedules under ``model.init_args`` and ``data.init_args``,
    in their groups too (``training``), enter in their canonical form
    (:func:`~featlearn.schedules.canonical_segments`).
    """
    computed = copy.deepcopy(config)
    (computed.get("trainer") or {}).pop("logger", None)
    for section in ("model", "data"):  # one schedule written two ways (hold_from's cuts) is one run
        map_arguments((computed.get(section) or {}).get("init_args") or {}, f"{section}.init_args", canonical_segments)
    return hashlib.sha256(yaml.safe_dump(computed, sort_keys=True).encode()).hexdigest()


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


def compare(
    configs: Sequence[str | Path | Mapping],
    out: str | Path,
    *,
    build: BuildRun | None = None,
    methods: str | Path | Sequence[Method] = DEFAULT_METHODS,
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
        methods: The methods file, a path or a shipped name; or its methods already loaded
            (:func:`~featlearn.studies.methods.load_methods`, ``only`` applied), read once by a caller
            that needs their names first.
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
    only = list(only) if only else None
    if isinstance(methods, (str, Path)):
        where, listed = repr(str(methods)), load_methods(resolve_config(methods), only)
    else:  # loaded by the caller
        where, listed = "the methods given", list(methods)
    unknown = sorted(set(options.halving_only or ()) - {method.name for method in listed})
    if unknown:  # a misspelt name would silently train its grid in full
        raise ValueError(
            f"halving_only names {unknown}, which are not methods of {where}: {[method.name for method in listed]}."
        )
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
        raise ValueError(f"No method of {where} applies to this experiment: {skipped}.")
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
