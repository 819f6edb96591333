"""The sample-complexity search at one d: featlearn's ensembles against one seed at a time.

Side by side, in one process:

1. **featlearn**: ``featlearn samples`` at one dimension with S seeds, both methods of the
   study (the network and its NTK), each trial one ensemble of S members.
2. **one seed at a time**: the very same trials (the budgets the search of 1 tried, read
   from its ``trials.csv``), each run as S separate ``featlearn fit`` runs with
   ``ensemble_size: 1``, seed ``seed + s`` and data stream ``data.seed + s``: what a
   hand-written loop over seeds does. Member s of an ensemble is exactly that run, so
   the per-seed test accuracies must agree (checked, to float round-off).

Both sides pay the same per-run costs (Lightning's setup, evaluation, the trial's files);
the ratio is the wall time of 2 over 1, repeated ``--repeats`` times (median of the
per-pair ratios). Usage::

    python benchmarks/bench_samples.py [--dim 16] [--seeds 8] [--repeats 1] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import yaml

from featlearn.cli import build_cli
from featlearn.studies.samples import samples
from featlearn.studies.trials import measure_run

warnings.filterwarnings("ignore")


def featlearn_side(out: Path, dim: int, seeds: int, accelerator: str) -> float:
    start = time.perf_counter()
    samples(
        [
            "--config",
            "glasgow_xor",
            "--study",
            "samples/glasgow_cpu",
            "--out",
            str(out),
            "--dims",
            str(dim),
            "--seeds",
            str(seeds),
        ],
        lambda args, **kw: build_cli([*args, "--trainer.accelerator", accelerator], **kw),
    )
    return time.perf_counter() - start


def one_seed_side(out: Path, folder: Path, seeds: int, accelerator: str) -> tuple[float, float]:
    """Every trial of ``out`` again, one seed per run; returns (seconds, largest accuracy difference)."""
    with open(out / "trials.csv") as handle:
        trials = list(csv.DictReader(handle))
    slugs = {"Network": "network", "NTK": "ntk"}
    worst = 0.0
    start = time.perf_counter()
    for trial in trials:
        trial_folder = out / "trials" / slugs[trial["method"]] / f"d{trial['d']}" / f"n{trial['n']}"
        config = yaml.safe_load((trial_folder / "config.yaml").read_text())
        ensemble = json.loads((trial_folder / "result.json").read_text())["metrics"]["test_acc"]
        base_seed = config.get("seed_everything", 0)
        data_seed = config["data"]["init_args"].get("seed", 0)
        for s in range(seeds):
            single = yaml.safe_load(yaml.safe_dump(config))
            single["seed_everything"] = base_seed + s
            single["data"]["init_args"]["seed"] = data_seed + s
            single["model"]["init_args"]["ensemble_size"] = 1
            single["trainer"]["logger"]["init_args"]["save_dir"] = str(folder / f"{trial_folder.name}_{s}")
            single["trainer"]["accelerator"] = accelerator
            path = folder / f"{trial['method']}_{trial['n']}_{s}.yaml"
            path.write_text(yaml.safe_dump(single, sort_keys=False))
            accuracy = measure_run(path, build_cli)["test_acc"][0]
            worst = max(worst, abs(accuracy - ensemble[s]))
    return time.perf_counter() - start, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    ratios, rows = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            ensemble = featlearn_side(root / "study", args.dim, args.seeds, args.device)
            (root / "single").mkdir()
            single, worst = one_seed_side(root / "study", root / "single", args.seeds, args.device)
            with open(root / "study" / "trials.csv") as handle:
                trials = sum(1 for _ in handle) - 1
        ratios.append(single / ensemble)
        rows.append((ensemble, single, worst, trials))
    print(f"\nsample-complexity search at d = {args.dim}, {args.seeds} seeds, both methods, {args.device}:")
    print("| featlearn (ensembles) s | one seed at a time s | ratio | trials | max |acc diff| (%) |")
    print("|---:|---:|---:|---:|---:|")
    for (ensemble, single, worst, trials), ratio in zip(rows, ratios, strict=True):
        print(f"| {ensemble:.1f} | {single:.1f} | {ratio:.2f} | {trials} | {worst:.2g} |")
    print(f"median ratio {statistics.median(ratios):.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
