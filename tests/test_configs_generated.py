"""The generated Shi et al. configs are what configs/generate_shi.py writes today."""

import importlib.util
import re

from .conftest import CONFIGS

# A float with a fraction or an exponent; the generator computes some values (sigma_a) from
# exact float64 moments whose last bits follow the torch build's summation order.
_FLOAT = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")


def _rounded(text: str) -> str:
    """``text`` with every float written to 10 significant digits."""
    return _FLOAT.sub(lambda match: f"{float(match.group()):.10g}", text)


def test_generated_configs_are_up_to_date():
    spec = importlib.util.spec_from_file_location("generate_shi", CONFIGS / "generate_shi.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    expected = {f"experiments/{name}": text for name, text in generator.all_configs().items()}
    expected.update(generator.group_configs())
    stale = [name for name, text in expected.items() if _rounded((CONFIGS / name).read_text()) != _rounded(text)]
    assert not stale, f"run `python configs/generate_shi.py`: stale {stale}"


def test_rounding_keeps_real_changes_visible():
    assert _rounded("sigma_a: 0.39484083680907  # x") == _rounded("sigma_a: 0.39484083680911  # x")
    assert _rounded("sigma_a: 0.39484083680907") != _rounded("sigma_a: 0.3948408369")
    assert _rounded("lr: 1000.0\nwidth: 600") != _rounded("lr: 100.0\nwidth: 600")
