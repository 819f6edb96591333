"""The generated Shi et al. configs are what configs/generate_shi.py writes today."""

import importlib.util
import re

from .conftest import CONFIGS

# A float written with a fraction (and maybe an exponent), standing alone: not part of
# a word, a version (3.10.2) or a longer number. The generator computes some values
# (sigma_a) from exact float64 moments whose last bits follow the torch build's
# summation order.
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?(?![\w.])")


def _rounded(text: str) -> str:
    """``text`` with every float rewritten to 10 significant digits, still written as a float."""
    return _FLOAT.sub(lambda match: f"{float(match.group()):.9e}", text)


def test_generated_configs_are_up_to_date():
    spec = importlib.util.spec_from_file_location("generate_shi", CONFIGS / "generate_shi.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    expected = {f"experiments/{name}": text for name, text in generator.all_configs().items()}
    expected.update(generator.group_configs())
    stale = [name for name, text in expected.items() if _rounded((CONFIGS / name).read_text()) != _rounded(text)]
    assert not stale, f"run `python configs/generate_shi.py`: stale {stale}"


def test_rounding_forgives_last_bits_only():
    assert _rounded("sigma_a: 0.39484083680907  # x") == _rounded("sigma_a: 0.39484083680911  # x")
    for before, after in [
        ("sigma_a: 0.39484083680907", "sigma_a: 0.3948408369"),  # a real change of the value
        ("lr: 1000.0\nwidth: 600", "lr: 100.0\nwidth: 600"),
        ("lr: 1000.0", "lr: 1000"),  # float -> int
        ("noise: 1e-4", "noise: 0.0001"),  # YAML reads the first as a string
        ("version: 1.2.3", "version: 1.2.4"),
    ]:
        assert _rounded(before) != _rounded(after), (before, after)
