"""Tuning on the first 2 seeds against tuning on all 5: the same chosen values, side by side in one run.

The Shi ``cpu`` report chooses every grid point on the first K = 2 of its 5 seeds
(``tune_seeds`` in ``configs/reproduce/shi2022.yaml``) and runs only the chosen point on
all 5. This lever changes what is computed, so what must not change is what tuning
decides: for each experiment (default E.1.1 ``shi_parity`` and E.1.2 ``shi_interval``,
every tuned method of ``compare/shi``), this script runs compare's tuning both ways in one
process (:func:`featlearn.studies.tuning.tune_methods`: ``--tune-seeds 5`` and
``--tune-seeds 2``) and prints, per method, the chosen values of each, whether they are
equal, and the digest of the method's own run that each choice leads to. A method's run
is a function of its chosen values alone (:func:`~featlearn.studies.methods.method_config`),
so equal digests mean the same run, hence the same table and the same verdicts. The JSON
file also keeps each side's tuning seconds (the sum of its trials' recorded times).

Trials are reused by digest like any compare trial: ``--out`` may be a folder that already
holds them (a report's item folder copied, for one), and a rerun only trains what is
missing. Usage: ``python benchmarks/bench_tune_seeds.py --out DIR [--experiments E ...]
[--seeds 5] [--tune-seeds 2] [--overlay YAML] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from featlearn.config_files import resolve_config
from featlearn.runner.lightning import build_cli
from featlearn.studies.compare import options_of, parse_args
from featlearn.studies.methods import load_methods, method_config
from featlearn.studies.trials import Launcher, Trial, load_yaml, merge_configs
from featlearn.studies.tuning import tune_methods

warnings.filterwarnings("ignore")


def tuning_seconds(folder: Path) -> float:
    """The recorded training seconds of every trial under a tuning folder."""
    return sum(json.loads(path.read_text())["seconds"] for path in folder.glob("*/*/result.json"))


def side(
    experiment_name: str, out: Path, seeds: int, tune_seeds: int, methods_file: str, overlay: str | None
) -> dict:
    """Tune every method of ``methods_file`` on ``tune_seeds`` of ``seeds``; their choices and run digests."""
    argv = ["--config", experiment_name, "--methods", methods_file, "--seeds", str(seeds)]
    argv += ["--tune-seeds", str(tune_seeds), "--out", str(out), "--overwrite"]  # a trial of another config reruns
    args = parse_args(argv)
    experiment = merge_configs({}, load_yaml(resolve_config(experiment_name), "--config"))
    if overlay is not None:  # smaller sizes, to check the script in seconds
        experiment = merge_configs(experiment, load_yaml(Path(overlay), "--overlay"))
    methods = [m for m in load_methods(resolve_config(methods_file)) if m.tune]
    log = lambda line: print(f"[{experiment_name}, {tune_seeds} seeds] {line}", flush=True)  # noqa: E731
    launcher = Launcher.from_args(args, out / "submitit")
    tuned = tune_methods(methods, experiment, options_of(args), out, build_cli, launcher, log, "benchmark")
    chosen = {}
    for method in methods:
        values = tuned[method.name]["values"]
        config = method_config(experiment, method.with_values(values), seeds, args.seed, out)
        run = Trial(method.name, out / "methods" / method.slug, config)
        chosen[method.name] = {"values": values, "val_acc": tuned[method.name]["val_acc"], "run": run.digest}
    folder = out / ("tuning" if tune_seeds == seeds else f"tuning_{tune_seeds}_seeds")
    return {"chosen": chosen, "seconds": tuning_seconds(folder)}


def short(values: dict) -> str:
    """A chosen point as its last value (the step-3-on rate of a schedule)."""
    value = next(iter(values.values()))
    return str(value[-1]["value"] if isinstance(value, list) else value)


def table_lines(record: dict) -> list[str]:
    """The choices' Markdown table of a run (what ``benchmarks/README.md`` shows, from ``--json``'s file).

    The recorded seconds stay in the file only: they sum trials that ran at different times
    on a machine whose load varied, so their ratio is not a measurement side by side.
    """
    k, n = record["tune_seeds"], record["seeds"]
    lines = [f"| experiment | method | chosen on {n} seeds | chosen on {k} | same value | same run |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for name, sides in record["experiments"].items():
        for method, full in sides["all"]["chosen"].items():
            few = sides["first"]["chosen"][method]
            same_value, same_run = few["values"] == full["values"], few["run"] == full["run"]
            cells = [name, method, short(full["values"]), short(few["values"]), str(same_value), str(same_run)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder of the trials (reused by digest)")
    parser.add_argument("--experiments", nargs="+", default=["shi_parity", "shi_interval"])
    parser.add_argument("--methods", default="compare/shi")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tune-seeds", type=int, default=2)
    parser.add_argument("--overlay", help="a YAML file merged onto every experiment (to check the script quickly)")
    parser.add_argument("--json", help="also write the comparison to this file")
    args = parser.parse_args()
    record = {}
    for name in args.experiments:
        out = Path(args.out) / name
        record[name] = {
            "all": side(name, out, args.seeds, args.seeds, args.methods, args.overlay),
            "first": side(name, out, args.seeds, args.tune_seeds, args.methods, args.overlay),
        }
    record = {"seeds": args.seeds, "tune_seeds": args.tune_seeds, "experiments": record}
    print("\n" + "\n".join(table_lines(record)))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
