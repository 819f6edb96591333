"""The generated Shi et al. configs are what configs/generate_shi.py writes today."""

import importlib.util

from .conftest import CONFIGS


def test_generated_configs_are_up_to_date():
    spec = importlib.util.spec_from_file_location("generate_shi", CONFIGS / "generate_shi.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    expected = {f"experiments/{name}": text for name, text in generator.all_configs().items()}
    expected.update(generator.group_configs())
    stale = [name for name, text in expected.items() if (CONFIGS / name).read_text() != text]
    assert not stale, f"run `python configs/generate_shi.py`: stale {stale}"
