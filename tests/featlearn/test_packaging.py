import importlib
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ..conftest import REPO  # noqa: TID252


@pytest.mark.parametrize("folder", ["datamodules", "models", "callbacks", "configs"])
def test_bare_top_level_import_is_refused(folder):
    """Run from the repository root, `import models` would find the folder: it must refuse."""
    out = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode != 0
    assert f"import it as `featlearn.{folder}`" in out.stderr


@pytest.mark.parametrize("folder", ["datamodules", "models", "callbacks", "configs"])
def test_installed_only_under_featlearn(folder, tmp_path):
    out = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named" in out.stderr
    assert importlib.import_module(f"featlearn.{folder}").__name__ == f"featlearn.{folder}"


def test_public_api_names():
    from featlearn.callbacks import XORPhaseDiagnostics  # noqa: F401
    from featlearn.datamodules import BooleanXOR, SyntheticDataModule  # noqa: F401
    from featlearn.models import TwoLayerNet, TwoLayerNetwork  # noqa: F401


def test_configs_command_lists_and_copies_shipped_experiments(tmp_path):
    listed = subprocess.run([sys.executable, "-m", "featlearn", "configs"], capture_output=True, text=True, check=True)
    assert "glasgow_xor" in listed.stdout and "shi/d100" in listed.stdout
    # Everything shipped is listed, one line each with its summary.
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        relative = path.relative_to(REPO / "configs").with_suffix("")
        name = str(relative.relative_to("experiments")) if relative.parts[0] == "experiments" else str(relative)
        summary = path.read_text().split("\n", 1)[0].removeprefix("#:").strip()
        assert any(
            line.split() and line.split()[0] == name and line.endswith(summary) for line in listed.stdout.splitlines()
        ), name
    copy = [sys.executable, "-m", "featlearn", "configs", "copy", "shi_parity", str(tmp_path)]
    subprocess.run(copy, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert (tmp_path / "shi_parity.yaml").read_text() == (REPO / "configs/experiments/shi_parity.yaml").read_text()
    again = subprocess.run(copy, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode != 0 and "never overwrites" in again.stderr


def test_every_shipped_config_states_a_one_line_summary_first():
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        first = path.read_text().split("\n", 1)[0]
        assert first.startswith("#: ") and 10 <= len(first) <= 103, f"{path}: first line {first!r}"


def test_wheel_install_runs_a_shipped_experiment_from_another_folder(tmp_path):
    """A real non-editable install of the built wheel: configs are package data, base.yaml applies."""
    wheels, site, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # Build from a copy: setuptools leaves build/ in the source folder, and a stale build/ would leak into later wheels.
    source = tmp_path / "source"
    skip = (
        ".git",
        ".venv",
        "build",
        "dist",
        "runs",
        "*.egg-info",
        "__pycache__",
        ".*_cache",
        ".hypothesis",
        "bench_out",
    )
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*skip))
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source], check=True)
    wheel = next(wheels.glob("featlearn-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import featlearn.configs as c; print(c.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(site))  # the wheel's copy, not the checkout
    fit = [sys.executable, "-m", "featlearn", "fit", "--config", "glasgow_xor", "--config", "debug/smoke"]
    fit += ["--data.init_args.dim", "8", "--data.init_args.batch_size", "16", "--model.init_args.network.width", "4"]
    out = subprocess.run(fit, cwd=elsewhere, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    saved = yaml.safe_load((elsewhere / "runs" / "glasgow_xor" / "version_0" / "config.yaml").read_text())
    assert saved["trainer"]["limit_val_batches"] == 0  # base.yaml was applied (Lightning's default is 1.0)
    assert saved["model"]["init_args"]["network"]["init_args"]["width"] == 4  # the network handed to the learner
