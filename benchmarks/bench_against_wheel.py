"""Shi et al.'s E.1.1 run (5 seeds) with this checkout against an earlier commit's wheel, side by side.

Builds the wheel of ``--baseline`` (a git revision; default: ``911a390``, main before the
speed work) into a temporary folder, installs it there with ``pip install --no-deps
--target``, and times the same experiment in fresh processes, alternating: the baseline
(its own ``shi_parity.yaml`` and ``base.yaml``, taken from the revision) and this
checkout (``--config shi_parity``), each as a 5-seed ensemble with no logger, no
diagnostics and no checkpoints, then the test set. Each process reports the seconds of
``featlearn fit`` (data drawing included), its test error and a checksum of the final
second-layer weights, so the table shows that both trained the same networks.

``--compare`` times the whole comparison instead: ``featlearn compare`` of E.1.1 with
every method of Table 1 (``compare/shi.yaml``) and 5 seeds, once on each side (it takes
minutes), and prints both tables.

Usage: ``python benchmarks/bench_against_wheel.py [--baseline REV] [--repeats R] [--steps N] [--compare]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    """Install ``rev``'s wheel under ``folder``; return its site folder and its config arguments."""
    source = folder / "source"
    source.mkdir()
    archive = subprocess.run(["git", "-C", REPO, "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", folder / "wheel", source], check=True)
    site = folder / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, *(folder / "wheel").glob("*.whl")], check=True)
    configs = [source / "configs" / "base.yaml", source / "configs" / "experiments" / "shi_parity.yaml"]
    return site, [a for c in configs for a in ("--config", str(c))]


def time_compare(site: Path | None, config: list[str], out: Path, cwd: Path) -> float:
    """Seconds of ``python -m featlearn compare`` (5 seeds, every method) in a fresh process."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "featlearn", "compare", *config, "--seeds", "5", "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return seconds


def compare_both(rev: str) -> None:
    """The whole E.1.1 comparison on each side, once, with both tables."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        site, _ = build_baseline(rev, folder)
        source = folder / "source"
        # The baseline's compare reads its own config and methods file from its source tree, by
        # absolute path: run from the source folder, `python -m featlearn` would import its core
        # beside this checkout's editable data models and learners.
        configs = source / "configs"
        theirs_config = [
            *("--config", str(configs / "experiments" / "shi_parity.yaml")),
            *("--methods", str(configs / "compare" / "shi.yaml")),
        ]
        ours = time_compare(None, ["--config", "shi_parity"], folder / "ours", folder)
        print(f"this checkout: {ours:.0f} s", flush=True)
        theirs = time_compare(site, theirs_config, folder / "theirs", folder)
        print(f"featlearn compare, E.1.1, 5 seeds, every method: this checkout {ours:.0f} s, {rev} {theirs:.0f} s")
        for name, out in (("this checkout", folder / "ours"), (rev, folder / "theirs")):
            print(f"\n{name}:\n" + (out / "table.md").read_text())


def run(args: list[str], site: Path | None, cwd: Path) -> dict:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = str(site)
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
    parser.add_argument("--compare", action="store_true", help="time the whole `featlearn compare` of E.1.1")
    args = parser.parse_args()
    if args.compare:
        compare_both(args.baseline)
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
