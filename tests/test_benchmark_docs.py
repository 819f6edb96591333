"""The measured tables of ``benchmarks/README.md`` are the files the benchmarks wrote, not hand copies."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (which imports its siblings by bare name)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_gpu_profile_table_is_the_recorded_run():
    profile = load_benchmark("profile_gpu_step")
    record = json.loads((BENCHMARKS / "results" / "profile_gpu_step_h200.json").read_text())
    readme = (BENCHMARKS / "README.md").read_text()
    assert "\n".join(profile.table_lines(record)) in readme
    for row in record["rows"]:  # the ratio the file states is its own two times'
        assert abs(row["ratio"] - row["wall_s"] / row["kernel_s"]) < 1e-9


def test_tune_seeds_tables_are_the_recorded_run():
    bench = load_benchmark("bench_tune_seeds")
    record = json.loads((BENCHMARKS / "results" / "tune_seeds.json").read_text())
    readme = (BENCHMARKS / "README.md").read_text()
    assert "\n".join(bench.table_lines(record)) in readme


def test_halving_table_is_the_recorded_run():
    bench = load_benchmark("bench_halving")
    record = json.loads((BENCHMARKS / "results" / "halving.json").read_text())
    readme = (BENCHMARKS / "README.md").read_text()
    assert "\n".join(bench.table_lines(record)) in readme
    for methods in record["experiments"].values():  # the ratio the table states is its own two counts'
        assert all(0 < row["steps_halving"] <= row["steps_full"] for row in methods.values())
