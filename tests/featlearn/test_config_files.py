"""Finding shipped configs by name, in a checkout and an installed wheel alike."""

import pytest

from featlearn.config_files import base_config, config_root, resolve_config, resolve_config_args, shipped_experiments


def test_shipped_names_resolve_to_the_package_files(tmp_path):
    root = config_root()
    assert base_config() == root / "base.yaml" and base_config().is_file()
    assert resolve_config("glasgow_xor") == root / "experiments" / "glasgow_xor.yaml"
    assert resolve_config("shi/d100.yaml") == root / "experiments" / "shi" / "d100.yaml"
    assert resolve_config("debug/smoke") == root / "debug" / "smoke.yaml"
    mine = tmp_path / "glasgow_xor"
    mine.write_text("seed_everything: 1\n")
    assert resolve_config(str(mine)) == mine  # an existing path always wins
    assert {"glasgow_xor", "shi_parity", "shi/nostructure"} <= set(shipped_experiments())


def test_unknown_names_fail_listing_the_shipped_ones_and_inline_yaml_passes():
    with pytest.raises(FileNotFoundError, match="--config 'shi_parityy'.*shi_parity"):
        resolve_config("shi_parityy")
    args = ["fit", "--config", "{trainer: {max_steps: 5}}", "--config=shi_parity", "--trainer.max_steps", "3"]
    resolved = resolve_config_args(args)
    assert resolved[2] == "{trainer: {max_steps: 5}}"
    assert resolved[3] == f"--config={config_root() / 'experiments' / 'shi_parity.yaml'}"
    assert resolved[4:] == ["--trainer.max_steps", "3"]


def test_the_short_flag_resolves_too():
    assert resolve_config_args(["-c", "glasgow_xor"])[1] == str(config_root() / "experiments" / "glasgow_xor.yaml")
    assert resolve_config_args(["-c=debug/smoke"])[0] == f"-c={config_root() / 'debug' / 'smoke.yaml'}"


def test_the_console_script_reports_an_unknown_config_without_a_traceback():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "featlearn", "fit", "--config", "nope"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("featlearn: error: --config 'nope'")
    assert "Traceback" not in out.stderr


def test_config_class_resolves_full_paths_and_the_short_names_featlearn_registers():
    from featlearn.datamodules import BooleanXOR
    from featlearn.models import TwoLayerNet
    from featlearn.runner.registry import config_class

    assert config_class("featlearn.models.TwoLayerNet") is TwoLayerNet
    assert config_class("TwoLayerNet") is TwoLayerNet and config_class("BooleanXOR") is BooleanXOR
    assert config_class("NoSuchThing") is None and config_class("no.such.module.Thing") is None
    assert config_class(None) is None
