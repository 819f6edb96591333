import importlib
import subprocess
import sys

import pytest

from ..conftest import REPO  # noqa: TID252


@pytest.mark.parametrize("folder", ["datamodules", "models", "callbacks"])
def test_bare_top_level_import_is_refused(folder):
    """Run from the repository root, `import models` would find the folder: it must refuse."""
    out = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode != 0
    assert f"import it as `featlearn.{folder}`" in out.stderr


@pytest.mark.parametrize("folder", ["datamodules", "models", "callbacks"])
def test_installed_only_under_featlearn(folder, tmp_path):
    out = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named" in out.stderr
    assert importlib.import_module(f"featlearn.{folder}").__name__ == f"featlearn.{folder}"


def test_public_api_names():
    from featlearn.callbacks import XORPhaseDiagnostics  # noqa: F401
    from featlearn.datamodules import BooleanXOR, SyntheticDataModule  # noqa: F401
    from featlearn.models import TwoLayerNet, TwoLayerNetwork  # noqa: F401
