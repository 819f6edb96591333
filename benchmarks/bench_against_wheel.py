"""Shi et al.'s E.1.1 run (5 seeds) with this checkout against an earlier commit's wheel, side by side.

Builds the wheel of ``--baseline`` (a git revision; default: ``911a390``, main before the
speed work) into a temporary folder, installs it there with ``pip install --no-deps
--target``, and times the same experiment in fresh processes, alternating: the baseline
(its own ``shi_parity.yaml`` and ``base.yaml``, taken from the revision) and this
checkout (``--config shi_parity``), each as a 5-seed ensemble with no logger, no
diagnostics and no checkpoints, then the test set. Each process reports the seconds of
``featlearn fit`` (data drawing included), its test error and a checksum of the final
second-layer weights, so the table shows that both trained the same networks.

``--compare`` times whole tuned comparisons instead: ``featlearn compare`` of each of
``--experiments`` (default E.1.1 ``shi_parity`` and E.1.2 ``shi_interval``) with every
method of Table 1 (``compare/shi.yaml``, its NTK and RF grids tuned) and 5 seeds, once on
each side, back to back in fresh processes (it takes minutes). It prints both tables, the
largest per-seed test accuracy difference of each method, and a table of the wall times,
their ratio and each side's peak memory (resident set; on a GPU also torch's peak
allocation). Both sides use the same device (``trainer.accelerator: auto``).

Usage: ``python benchmarks/bench_against_wheel.py [--baseline REV] [--repeats R] [--steps N]
[--compare [--experiments E ...] [--grid-members N]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
#: Runs one fit in a fresh process and prints {"seconds", "test_error", "a_sum"} as JSON.
CHILD = """
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from featlearn.cli import build_cli
start = time.perf_counter()
cli = build_cli(["fit", *sys.argv[1:]])
seconds = time.perf_counter() - start
metrics = cli.trainer.callback_metrics
a = cli.model.net.a if hasattr(cli.model.net, "a") else cli.model.net.base.a
print("RESULT" + json.dumps({"seconds": seconds, "test_error": float(metrics["test/error"]),
                             "a_sum": float(a.double().sum())}))
"""
COMMON = [
    *("--trainer.logger", "false", "--trainer.callbacks", "[]", "--trainer.enable_checkpointing", "false"),
    *("--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"),
    *("--model.init_args.ensemble_size", "5"),
]


def build_baseline(rev: str, folder: Path) -> tuple[Path, list[str]]:
    """Install ``rev``'s wheel under ``folder``; return its site folder and its config arguments.

    A ``folder`` that holds ``source/`` and ``site/`` already (``--baseline-folder``, built
    where git is, e.g. for a GPU machine without the repository's history) is used as it is.
    """
    source = folder / "source"
    site = folder / "site"
    configs = [source / "configs" / "base.yaml", source / "configs" / "experiments" / "shi_parity.yaml"]
    if source.is_dir() and site.is_dir():
        return site, [a for c in configs for a in ("--config", str(c))]
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", folder / "wheel", source], check=True)
    subprocess.run([*pip, "install", "--no-deps", "--target", site, *(folder / "wheel").glob("*.whl")], check=True)
    return site, [a for c in configs for a in ("--config", str(c))]


#: Runs ``featlearn compare`` in this fresh process and prints its peak memory: the process's
#: resident set (ru_maxrss) and, on a GPU, torch's peak allocation.
COMPARE_CHILD = """
import json, resource, runpy, sys, time
sys.argv = ["featlearn", *sys.argv[1:]]
start = time.perf_counter()
try:
    runpy.run_module("featlearn", run_name="__main__")
except SystemExit as err:
    if err.code not in (None, 0):
        raise
seconds = time.perf_counter() - start
import torch
gpu = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None
print("RESULT" + json.dumps({"seconds": seconds, "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                             "gpu_gib": gpu}))
"""


def time_compare(site: Path | None, arguments: list[str], out: Path, cwd: Path) -> dict:
    """``{"seconds", "rss_gib", "gpu_gib"}`` of ``featlearn compare ARGUMENTS --seeds 5 --out OUT``, a fresh process."""
    env = dict(os.environ)
    if site is not None:  # before whatever PYTHONPATH holds (the dependencies on a bare machine)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", COMPARE_CHILD, "compare", *arguments, "--seeds", "5", "--out", str(out)]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])


def per_seed_test_accuracy(out: Path) -> dict[str, list[float]]:
    """Each method's per-seed test accuracies (%) from a compare folder's ``result.json`` files."""
    found = {}
    for result in sorted((out / "methods").glob("*/result.json")):
        saved = json.loads(result.read_text())
        found[saved["label"]] = saved["metrics"]["test_acc"]
    return found


def compare_both(rev: str, experiments: list[str], grid_members: int | None, baseline: Path | None) -> None:
    """Each experiment's whole tuned comparison on each side, once, with both tables and their differences."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        baseline = folder if baseline is None else baseline.resolve()  # children run elsewhere: absolute paths
        site, _ = build_baseline(rev, baseline)
        source = baseline / "source"
        rows = []
        for experiment in experiments:
            # The baseline reads its own config and methods file from its source tree, by absolute path.
            configs = source / "configs"
            theirs_arguments = [
                *("--config", str(configs / "experiments" / f"{experiment}.yaml")),
                *("--methods", str(configs / "compare" / "shi.yaml")),
            ]
            # The same methods on both sides: ours runs only those the baseline's methods file has.
            their_methods = list(yaml.safe_load((configs / "compare" / "shi.yaml").read_text())["methods"])
            ours_arguments = ["--config", experiment, "--only", *their_methods]
            if grid_members is not None:
                ours_arguments += ["--grid-members", str(grid_members)]
            ours = time_compare(None, ours_arguments, folder / experiment / "ours", folder)
            print(f"{experiment}: this checkout {ours['seconds']:.0f} s", flush=True)
            theirs = time_compare(site, theirs_arguments, folder / experiment / "theirs", folder)
            print(f"{experiment}: {rev} {theirs['seconds']:.0f} s", flush=True)
            rows.append((experiment, ours, theirs))
            for name, side in (("this checkout", "ours"), (rev, "theirs")):
                print(f"\n{experiment}, {name}:\n" + (folder / experiment / side / "table.md").read_text())
            mine, base = (per_seed_test_accuracy(folder / experiment / side) for side in ("ours", "theirs"))
            for method in mine:
                if method in base:
                    gap = max(abs(a - b) for a, b in zip(mine[method], base[method], strict=True))
                    print(f"  {method}: largest per-seed test accuracy difference {gap:.4f} points")
        print("\n| experiment | this checkout (s) | " + rev + " (s) | speed-up | peak RSS (GiB) ours / theirs | "
              "peak GPU (GiB) ours / theirs |")
        print("|---|---:|---:|---:|---:|---:|")
        for experiment, ours, theirs in rows:
            gpu = (
                "" if ours["gpu_gib"] is None else f"{ours['gpu_gib']:.2f} / {theirs['gpu_gib'] or 0:.2f}"
            )
            print(
                f"| {experiment} | {ours['seconds']:.0f} | {theirs['seconds']:.0f} | "
                f"{theirs['seconds'] / ours['seconds']:.2f}x | "
                f"{ours['rss_gib']:.2f} / {theirs['rss_gib']:.2f} | {gpu} |"
            )


def run(args: list[str], site: Path | None, cwd: Path) -> dict:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="911a390", help="git revision to compare against")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=600, help="trainer.max_steps (E.1.1: 600)")
    parser.add_argument("--compare", action="store_true", help="time whole tuned `featlearn compare` runs")
    parser.add_argument(
        "--experiments", nargs="+", default=["shi_parity", "shi_interval"], help="with --compare: experiments"
    )
    parser.add_argument("--grid-members", type=int, default=None, help="with --compare: this checkout's --grid-members")
    parser.add_argument(
        "--baseline-folder", type=Path, default=None, help="with --compare: the baseline's source/, site/"
    )
    args = parser.parse_args()
    if args.compare:
        compare_both(args.baseline, args.experiments, args.grid_members, args.baseline_folder)
        return
    steps = ["--trainer.max_steps", str(args.steps)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        site, baseline_configs = build_baseline(args.baseline, folder)
        ours_args = ["--config", "shi_parity", *COMMON, *steps]
        theirs_args = [*baseline_configs, *COMMON, *steps]
        pairs = [(run(ours_args, None, folder), run(theirs_args, site, folder)) for _ in range(args.repeats)]
    ours = statistics.median(o["seconds"] for o, _ in pairs)
    theirs = statistics.median(t["seconds"] for _, t in pairs)
    speedup = statistics.median(t["seconds"] / o["seconds"] for o, t in pairs)
    print(f"E.1.1, 5 seeds, {args.steps} steps: this checkout {ours:.1f} s, {args.baseline} {theirs:.1f} s, ")
    print(f"speed-up {speedup:.2f}x (median of {args.repeats} pairs; target >= 2)")
    for o, t in pairs:
        print(
            f"  pair: {o['seconds']:.1f} s vs {t['seconds']:.1f} s; test error {o['test_error']:.4f} vs "
            f"{t['test_error']:.4f}; sum of a {o['a_sum']:.6f} vs {t['a_sum']:.6f}"
        )


if __name__ == "__main__":
    main()
