"""Glasgow's phase lengths: read from compare's folders, fitted to log T = c + beta_L log L(d) + beta_eta log eta.

The synthetic lengths below lie exactly on a known law, so the fit must return its
exponents and constant; the tables are checked cell by cell against hand-computed values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from featlearn.studies.phases import (
    PHASES,
    STOPPING_LOSS,
    fit_phase,
    lemma_lines,
    phase_lines,
    phase_plot,
    phase_results,
    phase_settings,
)


def slug(name: str) -> str:
    return name.replace(" ", "_").replace("=", "").replace(",", "")


def write_method(folder, name, dim, steps, init_args):
    path = folder / "methods" / slug(name) / "config.yaml"
    path.parent.mkdir(parents=True)
    config = {"trainer": {"max_steps": steps}, "data": {"init_args": {"dim": dim}}, "model": {"init_args": init_args}}
    path.write_text(yaml.safe_dump(config))


# ---------------------------------------------------------------------- phase_settings
def test_phase_settings_reads_d_eta_theta_and_each_seeds_lengths_from_the_method_folders(tmp_path):
    write_method(tmp_path, "d=16, eta=theta", 16, 60, {"training": {"lr": 0.36}, "init": {"scale": 0.36}})
    write_method(
        tmp_path, "d=32, w", 32, 90, {"training": {"lr": 0.5, "lr_w": 0.25}}
    )  # no init scale: theta = 1 / log d
    results = {
        "d=16, eta=theta": {
            "boundary_step": [10, None, 12],
            "margin_step": [30, 40, None],
            "off_signal_sq_at_boundary": [0.1, None, 0.3],
            "gamma_ratio_at_margin": [1.5, 2.5, None],
            "balance_at_margin": [1.0, 1.2, None],
        },
        "d=32, w": {"boundary_step": [7, 8], "margin_step": [20, 21]},
    }
    rows = phase_settings(tmp_path, results, slug)
    quantities = ("test_loss_at_boundary", "off_signal_sq_at_boundary", "gamma_ratio_at_margin", "balance_at_margin")
    assert [rows[0].pop(k) for k in ("final_test_loss", "final_test_error")] == [[], []]  # not in these results
    assert [rows[1].pop(k) for k in ("final_test_loss", "final_test_error")] == [[], []]
    assert [rows[0].pop(k) for k in quantities] == [[], [0.1, 0.3], [1.5, 2.5], [1.0, 1.2]]  # seeds that reached it
    assert [rows[1].pop(k) for k in quantities] == [[], [], [], []]  # a run without them: none
    lines = lemma_lines([{**rows[0], "off_signal_sq_at_boundary": [0.1, 0.3], "gamma_ratio_at_margin": [2.0],
                          "balance_at_margin": []}])  # fmt: skip
    # the ratio to theta: 0.2 / 0.36
    assert lines[-1] == "| d=16, eta=theta | 16 | 0.36 | not reached | 0.2 ± 0.14 | 2 | not reached | 0.56 |"
    assert lemma_lines([rows[1]]) == []
    assert rows == [
        {
            "method": "d=16, eta=theta",
            "d": 16,
            "eta": 0.36,
            "theta": 0.36,
            "steps": 60,
            "seeds": 3,
            "signal_finding": [10.0, 12.0],  # the seed that never ended signal finding is left out
            "signal_heavy": [20.0],  # T_2 = margin - boundary only where a seed has both
            "learning_time": [30.0, 40.0],
        },
        {
            "method": "d=32, w",
            "d": 32,
            "eta": 0.25,  # the first layer's rate lr_w, not lr
            "theta": pytest.approx(1 / math.log(32)),
            "steps": 90,
            "seeds": 2,
            "signal_finding": [7.0, 8.0],
            "signal_heavy": [13.0, 13.0],
            "learning_time": [20.0, 21.0],
        },
    ]


def test_an_explicit_null_first_layer_rate_means_lr(tmp_path):
    write_method(tmp_path, "m", 16, 60, {"training": {"lr": 0.3, "lr_w": None}})
    rows = phase_settings(tmp_path, {"m": {"boundary_step": [1], "margin_step": [2]}}, slug)
    assert rows[0]["eta"] == 0.3


# ---------------------------------------------------------------------- fit_phase
def lawful_rows(beta_l: float, beta_eta: float, constant: float, spread=(1.0, 1.0)) -> list[dict]:
    """Settings whose lengths' geometric mean is exactly constant L(d)^beta_l eta^beta_eta, for every phase."""
    rows = []
    for d in (16, 64, 256):
        for eta in (0.05, 0.1, 0.2):
            row = {"method": f"d={d}, eta={eta}", "d": d, "eta": eta, "steps": 500, "seeds": len(spread)}
            for phase, (_, _, level) in PHASES.items():
                mean = constant * level(d) ** beta_l * eta**beta_eta
                row[phase] = [mean * s for s in spread]
            rows.append(row)
    return rows


@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize(("beta_l", "beta_eta", "constant"), [(1.0, -1.0, 1.7), (0.6, -1.4, 3.0), (2.0, -0.5, 0.2)])
def test_lengths_exactly_on_a_law_fit_its_exponents_and_constant_with_a_point_interval(
    phase, beta_l, beta_eta, constant
):
    fit = fit_phase(lawful_rows(beta_l, beta_eta, constant), phase, resamples=50)
    assert fit["log_exponent"] == pytest.approx(beta_l, abs=1e-9)
    assert fit["eta_exponent"] == pytest.approx(beta_eta, abs=1e-9)
    assert fit["constant"] == pytest.approx(constant, rel=1e-9)
    # identical seeds: every bootstrap draw is the same data, so the interval is the point
    assert fit["log_exponent_low"] == pytest.approx(beta_l, abs=1e-9)
    assert fit["eta_exponent_high"] == pytest.approx(beta_eta, abs=1e-9)
    assert fit["points"] == 9 and fit["left_out"] == []


def test_the_fit_uses_the_geometric_mean_over_seeds_and_its_bootstrap_is_seeded():
    rows = lawful_rows(1.0, -1.0, 2.0, spread=(0.5, 2.0))  # geometric mean 1: arithmetic means are 1.25x
    fit = fit_phase(rows, "signal_finding", resamples=300, seed=3)
    assert fit["log_exponent"] == pytest.approx(1.0, abs=1e-9) and fit["constant"] == pytest.approx(2.0, rel=1e-9)
    assert fit["log_exponent_low"] < 1.0 < fit["log_exponent_high"]  # the seeds now disagree: a real interval
    assert fit == fit_phase(rows, "signal_finding", resamples=300, seed=3)
    assert fit != fit_phase(rows, "signal_finding", resamples=300, seed=4)


def test_settings_outside_eta_le_theta_or_with_a_missing_seed_are_left_out_and_named():
    rows = lawful_rows(1.0, -1.0, 1.0)
    rows[8]["theta"] = 0.1  # eta 0.2 > theta
    rows[0]["theta"] = 0.05  # eta = theta exactly: inside
    rows[4]["signal_finding"] = rows[4]["signal_finding"][:1]  # one of two seeds measured the phase
    rows[5]["signal_finding"][0] = 0.0  # a zero length has no logarithm
    fit = fit_phase(rows, "signal_finding", resamples=10)
    assert fit["points"] == 6
    assert [entry.split(" (")[0] for entry in fit["left_out"]] == ["d=64, eta=0.1", "d=64, eta=0.2", "d=256, eta=0.2"]
    assert fit["left_out"][0] == "d=64, eta=0.1 (a seed did not reach it)"
    assert fit["left_out"][2] == "d=256, eta=0.2 (eta > theta, outside Theorem 3.1)"
    assert fit["log_exponent"] == pytest.approx(1.0, abs=1e-9)  # the others still lie on the law


def test_no_fit_without_four_settings_two_dimensions_and_two_step_sizes():
    rows = lawful_rows(1.0, -1.0, 1.0)
    one_eta = [r for r in rows if r["eta"] == 0.1]
    assert fit_phase(one_eta + [{**one_eta[0], "method": "again"}], "signal_finding") is None
    assert fit_phase(rows[:3] + rows[3:4], "signal_finding") is not None  # four points, two d, three eta
    assert fit_phase(rows[:3], "signal_finding") is None


# ---------------------------------------------------------------------- tables
def test_phase_results_give_each_phase_its_exponents_and_intervals_or_none():
    rows = lawful_rows(1.0, -1.0, 1.5, spread=(0.8, 1.25))
    for row in rows:
        row["signal_heavy"] = row["signal_heavy"][:1]  # never every seed: no fit for T_2
    results, fits = phase_results(rows)
    assert fits["signal_heavy"] is None
    t2 = results[PHASES["signal_heavy"][0]]
    assert t2 == {"log_exponent": None, "eta_exponent": None}
    t1, fit = results[PHASES["signal_finding"][0]], fits["signal_finding"]
    assert t1["log_exponent"] == [pytest.approx(1.0, abs=1e-9)] and t1["eta_exponent"] == [pytest.approx(-1.0)]
    assert t1["log_exponent_interval"] == [fit["log_exponent_low"], fit["log_exponent_high"]]
    assert t1["eta_exponent_interval"] == [fit["eta_exponent_low"], fit["eta_exponent_high"]]
    assert set(results) == {name for name, _, _ in PHASES.values()}


def test_phase_lines_show_each_settings_means_stds_and_ratios_to_the_rates():
    d, eta = 64, 0.1
    row = {"method": "d=64, eta=0.1", "d": d, "eta": eta, "steps": 300, "seeds": 3,
           "signal_finding": [40.0, 50.0, 60.0], "signal_heavy": [20.0, 30.0], "learning_time": []}  # fmt: skip
    lines = phase_lines([row], {phase: None for phase in PHASES})
    ratio1 = 50.0 * eta / math.log(d)
    ratio2 = 25.0 * eta / math.log(math.log(d))
    std2 = math.sqrt(((20 - 25) ** 2 + (30 - 25) ** 2) / 1)
    expected = (
        f"| d=64, eta=0.1 | 64 | 0.1 | 300 | 50.0 ± 10.0 | {ratio1:.2f} | 25.0 ± {std2:.1f} (2 of 3 seeds) "
        f"| {ratio2:.2f} | not reached |  |"
    )
    assert expected in lines
    assert sum("fewer than four settings" in line for line in lines) == len(PHASES)


def test_phase_lines_list_each_fit_with_its_interval_and_what_it_left_out():
    rows = lawful_rows(1.0, -1.0, 1.0)
    rows[0]["signal_finding"] = []
    fits = {phase: fit_phase(rows, phase, resamples=10) for phase in PHASES}
    lines = phase_lines(rows, fits)
    name, rate, _ = PHASES["signal_finding"]
    assert f"| {name} | {rate} | 1.00 | [1.00, 1.00] | -1.00 | [-1.00, -1.00] | 8 |" in lines
    assert "|  | left out of the fit: d=16, eta=0.05 (a seed did not reach it) |  |  |  |  |  |" in lines


def test_phase_plot_writes_a_png_and_nothing_without_measured_phases(tmp_path):
    rows = lawful_rows(1.0, -1.0, 1.0)
    fits = {phase: fit_phase(rows, phase, resamples=10) for phase in PHASES}
    target = phase_plot(rows, tmp_path / "plots" / "phases.png", "phases", fits)
    assert target == tmp_path / "plots" / "phases.png"
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = [{**r, "signal_finding": []} for r in rows]
    assert phase_plot(empty, tmp_path / "none.png", "none") is None and not (tmp_path / "none.png").exists()


def test_the_rates_levels_are_log_d_and_log_log_d():
    d = 100
    assert PHASES["signal_finding"][2](d) == pytest.approx(math.log(d))
    assert PHASES["signal_heavy"][2](d) == pytest.approx(math.log(math.log(d)))
    assert PHASES["learning_time"][2](d) == pytest.approx(np.log(d))


# ---------------------------------------------------------------------- Theta forms
def theta_rows(offset: float = 4.0, noise: float = 0.0) -> list[dict]:
    """Settings on T_1 = 1.36 log d / eta + offset, eta free of d (8x), three seeds each."""
    rng = np.random.default_rng(0)
    rows = []
    for d in (32, 64, 128, 256):
        for eta in (0.02, 0.04, 0.08, 0.16):
            t1 = 1.36 * math.log(d) / eta + offset
            seeds = [t1 * (1 + noise * rng.standard_normal()) for _ in range(3)]
            t2 = 3.16 * math.log(math.log(d)) / eta + 1.72 / eta
            rows.append(
                {"method": f"d={d}, eta={eta}, m=2d/theta", "d": d, "eta": eta, "theta": 1 / math.log(d), "steps": 9999,
                 "seeds": 3, "signal_finding": seeds, "signal_heavy": [t2] * 3, "learning_time": [t1 + t2] * 3}
            )  # fmt: skip
    return rows


def test_a_theta_form_with_an_offset_is_fitted_with_its_slope_offset_and_rivals():
    from featlearn.studies.phases import fit_theta_form, theta_lines

    fit = fit_theta_form(theta_rows(), "signal_finding")
    assert fit["level"] == "log d" and fit["slope"] == pytest.approx(1.36) and fit["offset"] == pytest.approx(4.0)
    assert fit["rms"] == pytest.approx(0.0, abs=1e-9) and fit["eta_ratio"] == pytest.approx(8.0)
    # With eta free of d, the rivals miss: no d-dependence (L = 1) and a power of d fit worse than log d.
    assert min(fit["rivals"]["1"], fit["rivals"]["sqrt d"], fit["rivals"]["log log d"]) > 0.02
    # T_2's offset scales as 1/eta: its form c log log d / eta + b leaves it in the residual, not in b alone.
    heavy = fit_theta_form(theta_rows(), "signal_heavy")
    assert heavy["level"] == "log log d" and heavy["slope"] > 0 and heavy["rms"] > 0
    noisy = fit_theta_form(theta_rows(noise=0.05), "signal_finding")
    assert noisy["slope_low"] < 1.36 < noisy["slope_high"] and noisy["offset_low"] < noisy["offset_high"]
    lines = theta_lines(theta_rows())
    assert any(line.startswith("| Signal finding, T_1 (Lemma 4.1) | log d | 1.360 |") for line in lines)
    # With eta tied to theta = 1/log d, L = 1 fits as well as log d: the table shows it (8x is not reached).
    tied = [r for r in theta_rows() if r["eta"] == 0.02]
    for r in tied:
        r["eta"] = 0.5 / math.log(r["d"])
    assert fit_theta_form(tied, "signal_finding") is None or fit_theta_form(tied, "signal_finding")["eta_ratio"] < 2


def test_each_theta_form_fitted_on_the_smaller_d_predicts_the_largest():
    from featlearn.studies.phases import predict_theta_forms, theta_lines

    prediction = predict_theta_forms(theta_rows(noise=0.01), "signal_finding")
    assert prediction["target"] == 256 and prediction["fitted_on"] == [32, 64, 128]
    claimed = prediction["forms"]["L = log d"]
    assert abs(claimed["error"]) < 0.01 and claimed["high"] - claimed["low"] < 0.03  # 1% noise, 3 seeds
    exact = predict_theta_forms(theta_rows(), "signal_finding")["forms"]["L = log d"]
    assert exact["error"] == pytest.approx(0.0, abs=1e-9) and exact["low"] == pytest.approx(0.0, abs=1e-9)
    # A length that does not grow with d, or grows as sqrt(d), misses d = 256 by more than the seeds' noise.
    for rival in ("L = 1", "L = sqrt d"):
        form = prediction["forms"][rival]
        assert not form["low"] <= 0 <= form["high"] and abs(form["error"]) > 0.05
    assert predict_theta_forms([r for r in theta_rows() if r["d"] < 128], "signal_finding") is None  # two d
    lines = theta_lines(theta_rows())
    assert any(line.startswith("| Signal finding, T_1 (Lemma 4.1) | 32, 64, 128 | 256 |") for line in lines)
    rows = [{**r, "final_test_loss": [math.log(r["d"]) ** -2.0] * 3} for r in theta_rows()]
    cells, _ = phase_results(rows)
    # Theorem 3.1's conclusion as a row: the loss at the stopping time falls as (log d)^(-c), here c = 2.
    assert cells[STOPPING_LOSS]["loss_decay"] == [pytest.approx(2.0)]
    assert STOPPING_LOSS not in phase_results(theta_rows())[0]  # no loss measured, no row
    finding = cells["Signal finding, T_1 (Lemma 4.1)"]
    assert finding["theta_slope"] == [pytest.approx(1.36)] and set(finding["form_error_forms"]) == {
        "L = 1", "L = log log d", "L = log d", "L = sqrt d"}  # fmt: skip


def test_the_loss_at_the_stopping_time_is_fitted_to_a_power_of_log_d():
    from featlearn.studies.phases import loss_decay, loss_lines

    rows = [
        {"method": f"d={d}", "d": d, "eta": 0.1, "steps": 100, "final_test_loss": [math.log(d) ** -2.0] * 3,
         "final_test_error": [0.01, 0.02, 0.2]}
        for d in (32, 64, 128, 256)
    ]  # fmt: skip
    fit = loss_decay(rows)
    assert fit["c"] == pytest.approx(2.0) and fit["c_low"] == pytest.approx(2.0) and fit["points"] == 4
    lines = loss_lines(rows)
    assert "| d=32 | 32 | 0.1 | 100 | 0.0833 ± 0 | 2 of 3 |" in lines  # (log 32)^-2, two seeds at <= 5%
    assert lines[-1].startswith("Fit log L = -c log log d + b over the 4 settings: c = 2.00")
    assert loss_decay(rows[:1]) is None and loss_lines([{**rows[0], "final_test_loss": []}]) == []
