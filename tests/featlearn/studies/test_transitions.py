"""The sparse-parity transitions study: plateaus, spreads and fitted exponents from members' steps."""

import math

import numpy as np
import pytest
import yaml

from featlearn.studies.transitions import (
    fit_power,
    log_spread,
    plateau_shares,
    transition_lines,
    transition_results,
    transition_settings,
)


def row(method, n, transition, k=3, width=100, rule="sgd", noise=0.0, plateau_end=None, share_gain=None):
    return {
        "method": method, "n": n, "k": k, "width": width, "batch": 32, "rule": rule, "noise": noise, "lr": 0.1,
        "steps": 10000, "seeds": len(transition), "transition": transition,
        "plateau_end": plateau_end or [None] * len(transition), "share_gain": share_gain or [None] * len(transition),
        "test_error": [0.0] * len(transition),
    }  # fmt: skip


def test_the_exponent_of_an_exact_power_law_is_found_with_an_interval_around_it():
    rows = [row(f"n={n}", n, [3.0 * n**1.5 * f for f in (0.8, 1.0, 1.25)]) for n in (16, 32, 64)]
    fit = fit_power(rows, "n")
    assert fit["exponent"] == pytest.approx(1.5) and fit["low"] <= 1.5 <= fit["high"]
    assert fit["points"] == 3 and fit["range"] == 4
    # The seeds' spread is the same factor at every n, so every resample keeps the slope near 1.5.
    assert fit["high"] - fit["low"] < 0.5


def test_a_setting_where_a_seed_never_learned_is_left_out_of_the_fit_and_too_few_settings_give_none():
    rows = [row(f"n={n}", n, [float(n**2)] * 3) for n in (16, 32, 64)] + [row("n=128", 128, [1e4, None, 2e4])]
    fit = fit_power(rows, "n")
    assert fit["exponent"] == pytest.approx(2.0) and fit["points"] == 3
    assert fit_power(rows[:2], "n") is None


def test_the_plateau_share_is_the_last_step_at_chance_over_the_transition():
    r = row("a", 16, [100.0, 200.0, None, 50.0], plateau_end=[80.0, None, 40.0, 60.0])
    # Seed 1 was never at chance after step 0 (0: no plateau), seed 2 never learned (no share), seed 3's
    # last step at chance comes after its transition's start at a coarser cadence: capped at 1.
    assert plateau_shares(r) == [0.8, 0.0, 1.0]


def test_the_spread_of_log_steps_and_its_interval():
    r = row("a", 16, [100.0, 200.0, 400.0, 800.0])
    spread, low, high = log_spread(r)
    assert spread == pytest.approx(np.std(np.log([100, 200, 400, 800]), ddof=1))
    assert low <= spread <= high
    assert log_spread(row("b", 16, [100.0, None, 300.0])) is None  # a seed that never learned: no spread


def test_the_cells_group_settings_by_what_varies():
    rows = [row(f"k=3, n={n}", n, [float(n) ** 1.2] * 3) for n in (16, 24, 32)]
    rows += [row(f"k=2, n={n}", n, [float(n) ** 0.5] * 3, k=2) for n in (16, 32, 64)]
    rows += [row(f"k=3, n=32, width={w}", 32, [100.0 * w**-0.3] * 3, width=w) for w in (10, 1000)]
    rows += [row("noise", 32, [None] * 3, noise=0.5, share_gain=[1.0, 0.9, 1.1])]
    fast = [row(f"fast, n={n}", n, [float(n)] * 3) for n in (16, 24, 32)]
    for r in fast:
        r["lr"] = 3.0  # another rate: a group of its own, never merged into eta = 0.1's
    rows += fast
    cells, fits = transition_results(rows)
    assert cells["SGD, eta = 0.1, k = 3"]["n_exponent"][0] == pytest.approx(1.2)
    assert cells["SGD, eta = 0.1, k = 2"]["n_exponent"][0] == pytest.approx(0.5)
    assert len(cells["SGD, eta = 0.1, k = 3"]["n_exponent_interval"]) == 2
    # k=3, n=32 (width 100) with the two widths: three widths, one group.
    width = cells["SGD, eta = 0.1, k = 3, n = 32: width"]["width_exponent"][0]
    expected = {"SGD, eta = 0.1, k = 3", "SGD, eta = 0.1, k = 2", "SGD, eta = 0.1, k = 3, n = 32: width"}
    expected.add("SGD, eta = 3, k = 3")
    assert math.isfinite(width) and set(fits) == expected
    assert cells["noise"]["support_share_gain"] == [1.0, 0.9, 1.1]  # noise is never in a fit
    assert cells["SGD, eta = 3, k = 3"]["n_exponent"][0] == pytest.approx(1.0)
    lines = "\n".join(transition_lines(rows, fits))
    assert "| noise | 32 | 3 | 100 | SGD (labels: noise) |" in lines and "0 of 3" in lines
    assert "**SGD, eta = 0.1, k = 3**: t_c ~" in lines


def test_settings_are_read_from_each_methods_config(tmp_path):
    config = {
        "trainer": {"max_steps": 500},
        "data": {"init_args": {"dim": 24, "k": 3, "batch_size": 16, "label_noise": 0.5}},
        "model": {"init_args": {"update_rule": "sign", "network": {"width": 10}, "training": {"lr": 0.01}}},
    }
    folder = tmp_path / "methods" / "m"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    metrics = {"transition_step": [120, None], "plateau_end_step": [100, None], "support_share_gain": [1.2, None],
               "test_acc": [99.0, 50.0], "steps": 300}  # fmt: skip
    (setting,) = transition_settings(tmp_path, {"M": metrics}, lambda name: "m")
    assert (setting["n"], setting["k"], setting["width"], setting["batch"]) == (24, 3, 10, 16)
    assert (setting["rule"], setting["noise"], setting["lr"], setting["steps"]) == ("sign", 0.5, 0.01, 300)
    assert setting["transition"] == [120.0, None] and setting["test_error"] == pytest.approx([0.01, 0.5])
