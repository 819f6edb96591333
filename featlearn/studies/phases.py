r"""The lengths of Glasgow's (2023) two phases as d and eta vary, fitted to the paper's rates.

A ``phases`` item of the reproduction report is a ``featlearn compare`` whose methods are
Theorem 3.1's recipe at several input dimensions d and step sizes eta
(``compare/glasgow_phases``). Each run's ``XORPhaseDiagnostics`` gives, per member (seed),

* the *boundary step* T_1: the end of signal finding, which Lemma 4.1 puts at
  Theta(log d / eta) steps;
* the *margin step*: the weakest cluster's margin reaches 1; the signal-heavy phase lasts
  T_2 = margin step - T_1, which Section 4.1.1 puts at Theta(log log d / eta) steps ("Theorem
  3.1 is proved by iterating this lemma [4.4] Theta(log log(d)/eta) times");
* the margin step itself, t = T_1 + T_2, the iterations the network takes to learn, which
  Theorem 3.1 bounds by t <= C log d / eta.

A rate T = Theta(L(d) / eta) is checked by fitting, over every (d, eta) setting,

.. math::

    \log \bar T = c + \beta_L \log L(d) + \beta_\eta \log \eta ,

with :math:`\bar T` the geometric mean over seeds, L = log d for T_1 and log log d for
T_2 (and log d for t); the paper's rates are :math:`\beta_L = 1, \beta_\eta = -1` (for t a
bound: :math:`\beta_L \le 1, \beta_\eta \ge -1`). The 95% intervals
resample the seeds of every setting (a bootstrap, 2000 draws, fixed seed).

A Theta is not an exact exponent: T = Theta(L(d) / eta) allows a constant factor and an
offset in steps. :func:`fit_theta_form` fits that form itself,

.. math::

    \bar T = c \, \frac{L(d)}{\eta} + b ,

(:math:`\bar T` the mean over seeds) with bootstrap intervals for the slope c and the
offset b, and fits its rivals the same way, with L(d) replaced by 1 (no d-dependence),
log log d, log d and sqrt(d): a form the measured settings cannot tell from the paper's
fits them about as well (the relative root-mean-square error of each is reported).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import yaml

from featlearn.studies.trials import get_path

#: The two phases and the whole run to the margin: key -> (what the report calls it, the paper's rate, L(d)).
PHASES = {
    "signal_finding": ("Signal finding, T_1 (Lemma 4.1)", "log d / eta", lambda d: math.log(d)),
    "signal_heavy": ("Signal-heavy phase, T_2 (Section 4.1.1)", "log log d / eta", lambda d: math.log(math.log(d))),
    "learning_time": ("Iterations to learn, t = T_1 + T_2 (Theorem 3.1)", "at most log d / eta", lambda d: math.log(d)),
}


def phase_settings(folder: Path, results: dict[str, dict], slug) -> list[dict]:
    """Each method's setting and its members' phase lengths.

    Args:
        folder: The item's ``featlearn compare`` folder (each method's config in
            ``methods/<slug>/config.yaml``).
        results: compare's results: method -> metrics with ``boundary_step`` and ``margin_step``
            lists (one entry per seed; None where the run did not reach it).
        slug: A method name's folder name (compare's).

    Returns:
        One dict per method: ``method``, ``d``, ``eta``, ``signal_finding`` (T_1 per seed that
        reached it), ``signal_heavy`` (T_2 per seed that reached both), ``learning_time`` (the
        margin step per seed that reached it), ``seeds`` and ``theta`` (the recipe's, its
        initialisation scale: the fits keep eta <= theta, Theorem 3.1's range).
    """
    rows = []
    for method, metrics in results.items():
        config = yaml.safe_load((folder / "methods" / slug(method) / "config.yaml").read_text())
        init_args = config["model"]["init_args"]
        eta = get_path(init_args, "training.lr_w", get_path(init_args, "training.lr"))  # null: follows lr
        boundary = metrics.get("boundary_step") or []
        margin = metrics.get("margin_step") or []
        init = init_args.get("init") or {}
        d = int(config["data"]["init_args"]["dim"])
        rows.append(
            {
                "method": method,
                "d": d,
                "eta": float(eta),
                "theta": float(init.get("scale") or 1.0 / math.log(d)),  # the recipe's theta (its init scale)
                "steps": int(config["trainer"]["max_steps"]),
                "seeds": len(boundary),
                "signal_finding": [float(b) for b in boundary if b is not None],
                "signal_heavy": [
                    float(m - b) for b, m in zip(boundary, margin, strict=True) if b is not None and m is not None
                ],
                "learning_time": [float(m) for m in margin if m is not None],
                # Lemmas 4.1 and 4.4's quantities per seed that reached the step (XORPhaseDiagnostics)
                **{key: [float(v) for v in metrics.get(key) or [] if v is not None] for key in LEMMA_QUANTITIES},
                # Theorem 3.1's conclusion at the run's stopping time: the test loss and error per seed
                "final_test_loss": [float(v) for v in metrics.get("test_loss") or []],
                "final_test_error": [1.0 - float(v) / 100.0 for v in metrics.get("test_acc") or []],
            }
        )
    return rows


#: The row of Theorem 3.1's conclusion: the test loss at each setting's stopping time, fitted to (log d)^(-c).
STOPPING_LOSS = "Test loss at the stopping time (Theorem 3.1)"

#: XORPhaseDiagnostics' per-seed quantities of Lemmas 4.1 and 4.4: key -> the table's heading.
LEMMA_QUANTITIES = {
    "test_loss_at_boundary": "test loss at T_1 (2 log 2 = 1.386 at f = 0)",
    "off_signal_sq_at_boundary": "E ||w_perp + w_opp||^2 at T_1",
    "gamma_ratio_at_margin": "gamma_max / gamma_min at t",
    "balance_at_margin": "|a| / ||w|| at t",
}


def lemma_lines(rows: list[dict]) -> list[str]:
    """Markdown: Lemma 4.1's E ||w_perp + w_opp||^2 at T_1 against theta, Lemma 4.4's balances at the margin step."""
    if not any(r.get(key) for r in rows for key in LEMMA_QUANTITIES):
        return []
    lines = [
        "Signal finding leaves the loss near its value at f = 0, 2 log 2 (the test loss at each seed's T_1); "
        "Lemma 4.1's share, at least 10% of the neurons on each cluster with a large signal, holds at T_1 by "
        "construction: it is featlearn's boundary rule, with ||w_sig|| >= ||w_opp|| + ||w_perp|| as its reading of "
        "the lemma's signal-heavy neurons. The lemma ends signal finding with E ||w_perp + w_opp||^2 <= theta (the "
        "mean over neurons at each seed's "
        "T_1; the ratio to theta must stay at or below 1), and Section 4.1 keeps the clusters' margins balanced "
        "and each neuron near |a_w| = ||w|| (read at each seed's margin step t): mean ± std over the seeds that "
        "reached the step.",
        "",
        "| Setting | d | eta | " + " | ".join(LEMMA_QUANTITIES.values()) + " | its ratio to theta |",
        "|---|---:|---:|" + "---:|" * (len(LEMMA_QUANTITIES) + 1),
    ]
    for r in rows:
        cells = []
        for key in LEMMA_QUANTITIES:
            values = r.get(key) or []
            cells.append(
                "not reached"
                if not values
                else f"{np.mean(values):.3g}" + (f" ± {np.std(values, ddof=1):.2g}" if len(values) > 1 else "")
            )
        off = r.get("off_signal_sq_at_boundary") or []
        ratio = f"{np.mean(off) / r['theta']:.2f}" if off and r.get("theta") else ""
        lines.append(f"| {r['method']} | {r['d']} | {r['eta']:.4g} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def loss_decay(rows: list[dict], resamples: int = 2000, seed: int = 0) -> dict | None:
    """Theorem 3.1's loss at the stopping time, log L = -c log log d + b over the settings, c with a 95% interval.

    The theorem ends with a population loss of at most (log d)^(-Theta(1)) after t <= C log d / eta steps; each
    setting runs (3 log d + 8 log log d) / eta steps (its max_steps), and its mean test loss over seeds is the
    population loss's estimate. c > 0 is the theorem's form; the interval resamples the seeds of every setting.
    None with fewer than two d measured.
    """
    usable = [r for r in rows if r.get("final_test_loss") and min(r["final_test_loss"]) > 0]
    if len({r["d"] for r in usable}) < 2:
        return None
    x = np.array([math.log(math.log(r["d"])) for r in usable])
    losses = [np.array(r["final_test_loss"]) for r in usable]

    def slope(values: list[np.ndarray]) -> float:
        return float(-np.polyfit(x, np.log([v.mean() for v in values]), 1)[0])

    generator = np.random.default_rng(seed)
    draws = [slope([v[generator.integers(0, len(v), len(v))] for v in losses]) for _ in range(resamples)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"c": slope(losses), "c_low": float(low), "c_high": float(high), "points": len(usable)}


def loss_lines(rows: list[dict]) -> list[str]:
    """Markdown: each setting's test loss and error at its stopping time, and the fitted decay (log d)^(-c)."""
    usable = [r for r in rows if r.get("final_test_loss")]
    if not usable:
        return []
    lines = [
        "Theorem 3.1's conclusion at each setting's stopping time ((3 log d + 8 log log d) / eta steps): the test "
        "loss (mean ± std over seeds) and the share of seeds at test error <= 5%.",
        "",
        "| Setting | d | eta | steps | test loss | seeds at test error <= 5% |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in usable:
        loss, errors = r["final_test_loss"], r.get("final_test_error") or []
        spread = f" ± {np.std(loss, ddof=1):.2g}" if len(loss) > 1 else ""
        good = sum(e <= 0.05 + 1e-12 for e in errors)
        lines.append(
            f"| {r['method']} | {r['d']} | {r['eta']:.4g} | {r['steps']} | {np.mean(loss):.3g}{spread} "
            f"| {good} of {len(errors)} |"
        )
    fit = loss_decay(rows)
    if fit is not None:
        lines += [
            "",
            f"Fit log L = -c log log d + b over the {fit['points']} settings: c = {fit['c']:.2f}, 95% interval "
            f"[{fit['c_low']:.2f}, {fit['c_high']:.2f}] (the theorem's (log d)^(-Theta(1)) needs c > 0).",
        ]
    return lines


def inside_theorem(rows: list[dict]) -> list[dict]:
    """The settings inside Theorem 3.1's eta <= theta: a larger step size is measured, not fitted."""
    return [r for r in rows if r["eta"] <= r.get("theta", math.inf) * (1 + 1e-9)]


def fitted_settings(rows: list[dict], phase: str) -> list[dict]:
    """The settings a fit of ``phase`` reads: inside eta <= theta, with every seed's length measured and positive."""
    return [r for r in inside_theorem(rows) if r["seeds"] and len(r[phase]) == r["seeds"] and min(r[phase]) > 0]


def _least_squares(rows: list[dict], lengths: list[np.ndarray], rate) -> np.ndarray:
    """(c, beta_L, beta_eta) of log mean-log-T on [1, log L(d), log eta]."""
    design = np.array([[1.0, math.log(rate(r["d"])), math.log(r["eta"])] for r in rows])
    target = np.array([np.log(t).mean() for t in lengths])
    return np.linalg.lstsq(design, target, rcond=None)[0]


def fit_phase(rows: list[dict], phase: str, resamples: int = 2000, seed: int = 0) -> dict | None:
    """Fit one phase's rate over the settings where every seed measured it.

    Returns:
        ``{"log_exponent", "eta_exponent", "constant", "*_low", "*_high" (95% bootstrap),
        "points", "left_out"}``, or None with fewer than four usable settings (three
        coefficients need more points than that to say anything).
    """
    _, _, rate = PHASES[phase]
    # Theorem 3.1 (and Lemma C.1 under Lemma 4.1) asks eta <= theta: a larger step size is measured, not fitted.
    inside = inside_theorem(rows)
    usable = fitted_settings(rows, phase)
    if len(usable) < 4 or len({r["d"] for r in usable}) < 2 or len({r["eta"] for r in usable}) < 2:
        return None
    lengths = [np.array(r[phase]) for r in usable]
    constant, log_exponent, eta_exponent = _least_squares(usable, lengths, rate)
    generator = np.random.default_rng(seed)
    draws = np.array(
        [
            _least_squares(usable, [t[generator.integers(0, len(t), len(t))] for t in lengths], rate)
            for _ in range(resamples)
        ]
    )
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {
        "constant": float(np.exp(constant)),
        "log_exponent": float(log_exponent),
        "log_exponent_low": float(low[1]),
        "log_exponent_high": float(high[1]),
        "eta_exponent": float(eta_exponent),
        "eta_exponent_low": float(low[2]),
        "eta_exponent_high": float(high[2]),
        "points": len(usable),
        "left_out": [
            f"{r['method']} ({'eta > theta, outside Theorem 3.1' if r not in inside else 'a seed did not reach it'})"
            for r in rows
            if r not in usable
        ],
    }


#: The rival levels L(d) of a Theta-form fit, T = c L(d)/eta + b: name -> L(d).
THETA_LEVELS = {
    "1": lambda d: 1.0,
    "log log d": lambda d: math.log(math.log(d)),
    "log d": lambda d: math.log(d),
    "sqrt d": lambda d: math.sqrt(d),
}
#: Each phase's claimed level among THETA_LEVELS.
THETA_CLAIMED = {"signal_finding": "log d", "signal_heavy": "log log d", "learning_time": "log d"}


def _line_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(slope, offset, relative RMS error) of least squares y = slope x + offset."""
    slope, offset = np.polyfit(x, y, 1)
    relative = (y - (slope * x + offset)) / y
    return float(slope), float(offset), float(np.sqrt(np.mean(relative**2)))


def fit_theta_form(rows: list[dict], phase: str, resamples: int = 2000, seed: int = 0) -> dict | None:
    """The Theta form T = c L(d)/eta + b of one phase, with its rivals, over the settings where every seed measured it.

    Returns:
        ``{"level", "slope", "slope_low", "slope_high", "offset", "offset_low", "offset_high", "rms",
        "rivals": {level: rms}, "points", "eta_ratio"}`` (95% bootstrap intervals over the seeds of
        every setting; ``eta_ratio``: the largest eta over the smallest, how far eta varied), or None
        with fewer than four usable settings or a single eta.
    """
    usable = fitted_settings(rows, phase)
    if len(usable) < 4 or len({r["eta"] for r in usable}) < 2:
        return None
    lengths = [np.array(r[phase]) for r in usable]
    mean = np.array([t.mean() for t in lengths])

    def design(level: str) -> np.ndarray:
        return np.array([THETA_LEVELS[level](r["d"]) / r["eta"] for r in usable])

    claimed = THETA_CLAIMED[phase]
    slope, offset, rms = _line_fit(design(claimed), mean)
    generator = np.random.default_rng(seed)
    draws = np.array(
        [
            _line_fit(design(claimed), np.array([t[generator.integers(0, len(t), len(t))].mean() for t in lengths]))[:2]
            for _ in range(resamples)
        ]
    )
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    etas = [r["eta"] for r in usable]
    return {
        "level": claimed,
        "slope": slope,
        "slope_low": float(low[0]),
        "slope_high": float(high[0]),
        "offset": offset,
        "offset_low": float(low[1]),
        "offset_high": float(high[1]),
        "rms": rms,
        "rivals": {level: _line_fit(design(level), mean)[2] for level in THETA_LEVELS},
        "points": len(usable),
        "eta_ratio": max(etas) / min(etas),
    }


def predict_theta_forms(rows: list[dict], phase: str, resamples: int = 2000, seed: int = 0) -> dict | None:
    r"""Each level's Theta form fitted on the smaller d, its prediction of the phase at the largest d.

    A form that can fail: T = c L(d)/eta + b is fitted on every usable setting below the
    largest d (all its eta), and predicts the mean length at each eta of the largest d. The
    error is the mean over those eta of (predicted - measured) / measured, with a 95%
    bootstrap interval over the seeds of every setting (refitted per draw).

    Returns:
        ``{"target": d, "fitted_on": [d, ...], "forms": {level: {"error", "low", "high"}}}``
        (levels of :data:`THETA_LEVELS`), or None without two smaller d, two eta each side or
        every seed measured.
    """
    usable = fitted_settings(rows, phase)
    dims = sorted({r["d"] for r in usable})
    if len(dims) < 3:
        return None
    fitted = [r for r in usable if r["d"] < dims[-1]]
    target = [r for r in usable if r["d"] == dims[-1]]
    if len({r["eta"] for r in fitted}) < 2 or not target:
        return None
    lengths = [np.array(r[phase]) for r in fitted + target]

    def errors(means: np.ndarray) -> dict[str, float]:
        known, wanted = means[: len(fitted)], means[len(fitted) :]
        out = {}
        for level, rate in THETA_LEVELS.items():
            x = np.array([rate(r["d"]) / r["eta"] for r in fitted])
            slope, offset = np.polyfit(x, known, 1)
            predicted = slope * np.array([rate(r["d"]) / r["eta"] for r in target]) + offset
            out[level] = float(np.mean((predicted - wanted) / wanted))
        return out

    point = errors(np.array([t.mean() for t in lengths]))
    generator = np.random.default_rng(seed)
    draws = [
        errors(np.array([t[generator.integers(0, len(t), len(t))].mean() for t in lengths])) for _ in range(resamples)
    ]
    forms = {}
    for level in THETA_LEVELS:
        low, high = np.percentile([draw[level] for draw in draws], [2.5, 97.5])
        forms[f"L = {level}"] = {"error": point[level], "low": float(low), "high": float(high)}
    return {"target": dims[-1], "fitted_on": dims[:-1], "forms": forms}


def theta_lines(rows: list[dict]) -> list[str]:
    """Markdown: each phase's Theta-form fit T = c L(d)/eta + b, and how well each rival level fits."""
    lines = [
        "Theta forms, T = c L(d)/eta + b with an offset b in steps (means over seeds; 95% bootstrap intervals over "
        "seeds), over the settings inside eta <= theta; each rival level L(d) fitted the same way, by its relative "
        "RMS error (a rival within about the claimed form's error is not told apart from it by these settings):",
        "",
        "| Phase | claimed L(d) | c | 95% interval | b (steps) | 95% interval | eta varies | "
        + " | ".join(f"RMS, L = {level}" for level in THETA_LEVELS)
        + " |",
        "|---|---|---:|---|---:|---|---:|" + "---:|" * len(THETA_LEVELS),
    ]
    for phase in PHASES:
        fit = fit_theta_form(rows, phase)
        name = PHASES[phase][0]
        if fit is None:
            lines.append(f"| {name} | {THETA_CLAIMED[phase]} | NA | fewer than four settings or one eta |" + " |" * 7)
            continue
        rivals = " | ".join(
            (f"**{fit['rivals'][level]:.3f}**" if level == fit["level"] else f"{fit['rivals'][level]:.3f}")
            for level in THETA_LEVELS
        )
        lines.append(
            f"| {name} | {fit['level']} | {fit['slope']:.3f} | [{fit['slope_low']:.3f}, {fit['slope_high']:.3f}] "
            f"| {fit['offset']:.1f} | [{fit['offset_low']:.1f}, {fit['offset_high']:.1f}] | {fit['eta_ratio']:.1f}x "
            f"| {rivals} |"
        )
    predictions = {phase: predict_theta_forms(rows, phase) for phase in PHASES}
    if any(predictions.values()):
        lines += [
            "",
            "The same forms as predictions: each fitted on the smaller d (every eta) predicts the mean length at "
            "the largest d (error: (predicted - measured) / measured, the mean over its eta; 95% bootstrap interval "
            "over seeds). A form predicts where its interval holds 0; the claimed level is in bold.",
            "",
            "| Phase | fitted on d | predicts d | " + " | ".join(f"L = {level}" for level in THETA_LEVELS) + " |",
            "|---|---|---:|" + "---|" * len(THETA_LEVELS),
        ]
        for phase, prediction in predictions.items():
            if prediction is None:
                continue
            cells = []
            for level in THETA_LEVELS:
                form = prediction["forms"][f"L = {level}"]
                text = f"{form['error']:+.3f} [{form['low']:+.3f}, {form['high']:+.3f}]"
                cells.append(f"**{text}**" if level == THETA_CLAIMED[phase] else text)
            fitted_on = ", ".join(str(d) for d in prediction["fitted_on"])
            lines.append(f"| {PHASES[phase][0]} | {fitted_on} | {prediction['target']} | " + " | ".join(cells) + " |")
    return lines


def phase_results(rows: list[dict]) -> tuple[dict[str, dict], dict[str, dict | None]]:
    """The report's cells (phase name -> {metric: [value]}) and the fits by phase key."""
    fits = {phase: fit_phase(rows, phase) for phase in PHASES}
    results = {}
    for phase, fit in fits.items():
        name = PHASES[phase][0]
        results[name] = {
            "log_exponent": None if fit is None else [fit["log_exponent"]],
            "eta_exponent": None if fit is None else [fit["eta_exponent"]],
        }
        if fit is not None:  # a fitted rate is judged by its 95% interval (featlearn.studies.judgement)
            results[name]["log_exponent_interval"] = [fit["log_exponent_low"], fit["log_exponent_high"]]
            results[name]["eta_exponent_interval"] = [fit["eta_exponent_low"], fit["eta_exponent_high"]]
        theta = fit_theta_form(rows, phase)
        if theta is not None:  # the Theta form's slope c, judged by its interval
            results[name]["theta_slope"] = [theta["slope"]]
            results[name]["theta_slope_interval"] = [theta["slope_low"], theta["slope_high"]]
        prediction = predict_theta_forms(rows, phase)
        if prediction is not None:  # every level's prediction of the largest d: the judgement file names the claimed
            results[name]["form_error_forms"] = prediction["forms"]
    decay = loss_decay(rows)
    if decay is not None:  # Theorem 3.1's conclusion: the loss at the stopping time falls as (log d)^(-c)
        results[STOPPING_LOSS] = {"loss_decay": [decay["c"]], "loss_decay_interval": [decay["c_low"], decay["c_high"]]}
    return results, fits


def phase_lines(rows: list[dict], fits: dict[str, dict | None]) -> list[str]:
    """Markdown: every setting's phase lengths against the rates, then the fits with their intervals."""

    def cell(values: list[float], seeds: int) -> str:
        if not values:
            return "not reached"
        mean = sum(values) / len(values)
        text = f"{mean:.1f}" + (f" ± {np.std(values, ddof=1):.1f}" if len(values) > 1 else "")
        return text + ("" if len(values) == seeds else f" ({len(values)} of {seeds} seeds)")

    lines = [
        "Each setting: mean ± std over seeds of the phase lengths, and each divided by its rate (a ratio that "
        "stays flat across d and eta is that rate).",
        "",
        "| Setting | d | eta | steps run | T_1 | T_1 eta / log d | T_2 | T_2 eta / log log d | t | t eta / log d |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        t1, t2, t = r["signal_finding"], r["signal_heavy"], r.get("learning_time") or []
        ratio1 = f"{np.mean(t1) * r['eta'] / math.log(r['d']):.2f}" if t1 else ""
        ratio2 = f"{np.mean(t2) * r['eta'] / math.log(math.log(r['d'])):.2f}" if t2 else ""
        ratio = f"{np.mean(t) * r['eta'] / math.log(r['d']):.2f}" if t else ""
        lines.append(
            f"| {r['method']} | {r['d']} | {r['eta']:.4g} | {r['steps']} | {cell(t1, r['seeds'])} | {ratio1} "
            f"| {cell(t2, r['seeds'])} | {ratio2} | {cell(t, r['seeds'])} | {ratio} |"
        )
    lines += [
        "",
        "Fits of log T = c + beta_L log L(d) + beta_eta log eta over the settings inside Theorem 3.1's eta <= theta "
        "(geometric means over seeds; "
        "95% bootstrap intervals over seeds). The paper's rates: beta_L = 1, beta_eta = -1; for t, Theorem 3.1's "
        "bound t <= C log d / eta: beta_L <= 1, beta_eta >= -1.",
        "",
        "| Phase | rate | beta_L | 95% interval | beta_eta | 95% interval | settings |",
        "|---|---|---:|---|---:|---|---:|",
    ]
    for phase, fit in fits.items():
        name, rate, _ = PHASES[phase]
        if fit is None:
            lines.append(f"| {name} | {rate} | NA | fewer than four settings with every seed measured | NA |  | - |")
            continue
        lines.append(
            f"| {name} | {rate} | {fit['log_exponent']:.2f} | [{fit['log_exponent_low']:.2f}, "
            f"{fit['log_exponent_high']:.2f}] | {fit['eta_exponent']:.2f} | [{fit['eta_exponent_low']:.2f}, "
            f"{fit['eta_exponent_high']:.2f}] | {fit['points']} |"
        )
        if fit["left_out"]:
            lines.append(f"|  | left out of the fit: {', '.join(fit['left_out'])} |  |  |  |  |  |")
    return lines


def _step_size_rule(row: dict) -> str:
    """A setting's step-size name ("theta/2", "0.02", ...) from its method name, else its eta."""
    method = row["method"]
    return method.split("eta=")[-1].split(",")[0] if "eta=" in method else f"{row['eta']:.3g}"


def phase_plot(rows: list[dict], target: Path, title: str, fits: dict[str, dict | None] | None = None) -> Path | None:
    """A panel per phase: its length x eta against L(d), one point per setting, and the fitted rate.

    With ``fits`` (:func:`fit_phase` per phase), each step size's fitted curve
    T eta = e^c L(d)^beta_L eta^(beta_eta + 1) is drawn over the measured L(d), dashed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(r["signal_finding"] for r in rows):
        return None
    figure, axes = plt.subplots(1, len(PHASES), figsize=(4.8 * len(PHASES), 4.0))
    markers: dict[str, str] = {}  # the step size's name in the setting ("theta/2", ...) -> its marker
    largest = dict.fromkeys(PHASES, 0.0)  # per phase, the largest x drawn
    for r in rows:
        factor = _step_size_rule(r)
        label = None if factor in markers else f"eta = {factor}"
        marker = markers.setdefault(factor, "osd^v<>"[len(markers) % 7])
        for axis, phase in zip(axes, PHASES, strict=True):
            if r[phase]:
                scaled = np.array(r[phase]) * r["eta"]  # a phase length in units of 1/eta
                x = PHASES[phase][2](r["d"])
                axis.errorbar(x, scaled.mean(), yerr=scaled.std(), fmt=marker, color="C0", label=label)
                largest[phase] = max(largest[phase], x)
    groups: dict[str, list[dict]] = {}  # the settings of one step-size rule (eta = theta/2, ...): eta moves with d
    for r in rows:
        groups.setdefault(_step_size_rule(r), []).append(r)
    for axis, phase in zip(axes, PHASES, strict=True):
        fit = (fits or {}).get(phase)
        if fit is None:
            continue
        level = PHASES[phase][2]
        for k, group in enumerate(groups.values()):  # the fitted T eta at each setting of the rule, joined over d
            group = sorted(group, key=lambda r: r["d"])
            xs = [level(r["d"]) for r in group]
            ys = [fit["constant"] * level(r["d"]) ** fit["log_exponent"] * r["eta"] ** (fit["eta_exponent"] + 1.0)
                  for r in group]  # fmt: skip
            label = "fit: L(d)^{:.2f} eta^{:.2f}".format(fit["log_exponent"], fit["eta_exponent"]) if k == 0 else None
            axis.plot(xs, ys, "--", color="C1", linewidth=1, label=label)
    for axis, phase in zip(axes, PHASES, strict=True):
        name, rate, _ = PHASES[phase]
        axis.set_xlabel("log log d" if phase == "signal_heavy" else "log d")
        axis.set_ylabel(f"{name.split(',')[0]} length x eta")
        axis.set_title(textwrap.fill(f"{name}: {rate}", 48), fontsize=9)
        axis.set_ylim(bottom=0)
        axis.set_xlim(0, 1.05 * largest[phase] or None)  # from 0, with room for the last markers
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(textwrap.fill(title, 110), fontsize=10)  # a long title ran past the figure's edge
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=90, bbox_inches="tight")
    plt.close(figure)
    return target
