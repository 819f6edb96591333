"""Successive halving of the tuning grids against the full grids: the same choices, side by side in one run.

Issue 33's lever for the Shi ``cpu`` report: every grid point of ``compare/shi`` trains
T / 9 steps, the best third on validation go on to T / 3 from their checkpoints, and the
best third of those to T (``--halving 3``; :mod:`featlearn.studies.halving`). This changes
what is computed, so what must not change is what tuning decides. For each experiment
(default E.1.1 ``shi_parity`` and E.1.2 ``shi_interval``, every tuned method, all 5 seeds)
this script runs compare's tuning both ways in one process
(:func:`featlearn.studies.tuning.tune_methods`, without and with ``--halving``) and
records, per method:

* the values each side chooses, and the digest of the method's own run each choice leads
  to (a method's run is a function of its chosen values alone, so equal digests mean the
  same run, hence the same table and the same verdicts);
* whether every point that reached T by halving has its full-grid fit's validation
  accuracies, seed for seed (a survivor resumes from its checkpoint bit for bit);
* the update steps each side trains (points x steps, the work a grid costs on any
  machine), and each side's recorded tuning seconds.

Trials are reused by digest like any compare trial: ``--out`` may be a folder that already
holds the full grids (a report's item folder copied, for one). Usage: ``python
benchmarks/bench_halving.py --out DIR [--experiments E ...] [--seeds 5] [--eta 3]
[--overlay YAML] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import csv
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


def side(experiment_name: str, out: Path, seeds: int, eta: int | None, methods_file: str, overlay: str | None) -> dict:
    """Tune every method of ``methods_file`` on the full grid (``eta`` None) or by halving; choices and costs."""
    argv = ["--config", experiment_name, "--methods", methods_file, "--seeds", str(seeds), "--out", str(out)]
    argv += ["--overwrite"] + (["--halving", str(eta)] if eta else [])  # a trial of another config reruns
    args = parse_args(argv)
    experiment = merge_configs({}, load_yaml(resolve_config(experiment_name), "--config"))
    if overlay is not None:  # smaller sizes, to check the script in seconds
        experiment = merge_configs(experiment, load_yaml(Path(overlay), "--overlay"))
    methods = [m for m in load_methods(resolve_config(methods_file)) if m.tune]
    log = lambda line: print(f"[{experiment_name}, {'halving ' + str(eta) if eta else 'full grid'}] {line}", flush=True)  # noqa: E731
    tuned = tune_methods(
        methods,
        experiment,
        options_of(args),
        out,
        build_cli,
        Launcher.from_args(args, out / "submitit"),
        log,
        "benchmark",
    )
    folder = out / (f"tuning_halving_{eta}" if eta else "tuning")
    rows = list(csv.DictReader(open(folder.with_suffix(".csv"))))
    chosen = {}
    for method in methods:
        values = tuned[method.name]["values"]
        config = method_config(experiment, method.with_values(values), seeds, args.seed, out)
        run = Trial(method.name, out / "methods" / method.slug, config)
        points = {
            r["values"]: (r["val_acc_mean"], int(r["steps"] or 0), r["note"])
            for r in rows
            if r["method"] == method.name
        }
        chosen[method.name] = {
            "values": values,
            "val_acc": tuned[method.name]["val_acc"],
            "run": run.digest,
            "points": points,
        }
    seconds = sum(json.loads(p.read_text())["seconds"] for p in folder.rglob("result.json"))
    return {"chosen": chosen, "seconds": seconds}


def point_steps(points: dict, total: int) -> int:
    """The update steps a side trained over a method's grid: each point to where it stopped (a diverged one: T)."""
    return sum(steps or total for _, steps, _ in points.values())


def compare_sides(full: dict, halved: dict) -> dict:
    """Per method: the same choice and run, the finalists' full-grid accuracies, the steps each side trained."""
    methods = {}
    for method, mine in halved["chosen"].items():
        theirs = full["chosen"][method]
        total = max(steps for _, steps, _ in theirs["points"].values())
        finalists = [key for key, (_, steps, note) in mine["points"].items() if steps == total and note != "diverged"]
        methods[method] = {
            "full": theirs["values"],
            "halving": mine["values"],
            "same_value": mine["values"] == theirs["values"],
            "same_run": mine["run"] == theirs["run"],
            "finalists_equal_full_grid": all(mine["points"][k][0] == theirs["points"][k][0] for k in finalists),
            "steps_full": point_steps(theirs["points"], total),
            "steps_halving": point_steps(mine["points"], total),
        }
    return methods


def short(values: dict) -> str:
    """A chosen point as its last value (the step-3-on rate of a schedule)."""
    value = next(iter(values.values()))
    return str(value[-1]["value"] if isinstance(value, list) else value)


def table_lines(record: dict) -> list[str]:
    """The Markdown table of a run (what ``benchmarks/README.md`` shows, from ``--json``'s file).

    The steps are the work measure: the recorded seconds stay in the file only, as their
    trials may have run at different times on a machine whose load varied.
    """
    eta = record["eta"]
    lines = [
        f"| experiment | method | full grid chose | halving (eta = {eta}) chose | same run | finalists = full grid "
        "| steps trained, halving / full |"
    ]
    lines.append("| --- | --- | --- | --- | --- | --- | ---: |")
    for name, methods in record["experiments"].items():
        for method, row in methods.items():
            ratio = f"{row['steps_halving']} / {row['steps_full']} = {row['steps_halving'] / row['steps_full']:.2f}"
            cells = [name, method, short(row["full"]), short(row["halving"]), str(row["same_run"])]
            lines.append("| " + " | ".join([*cells, str(row["finalists_equal_full_grid"]), ratio]) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder of the trials (reused by digest)")
    parser.add_argument("--experiments", nargs="+", default=["shi_parity", "shi_interval"])
    parser.add_argument("--methods", default="compare/shi")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--eta", type=int, default=3)
    parser.add_argument("--overlay", help="a YAML file merged onto every experiment (to check the script quickly)")
    parser.add_argument("--json", help="also write the comparison to this file")
    args = parser.parse_args()
    record, seconds = {}, {}
    for name in args.experiments:
        out = Path(args.out) / name
        full = side(name, out, args.seeds, None, args.methods, args.overlay)
        halved = side(name, out, args.seeds, args.eta, args.methods, args.overlay)
        record[name] = compare_sides(full, halved)
        seconds[name] = {"full": full["seconds"], "halving": halved["seconds"]}
    record = {"seeds": args.seeds, "eta": args.eta, "experiments": record, "recorded_seconds": seconds}
    print("\n" + "\n".join(table_lines(record)))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
