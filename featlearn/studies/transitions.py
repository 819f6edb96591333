r"""When SGD learns a sparse parity, and what it did before (Barak et al. 2022), from a compare's runs.

A ``transitions`` item of the reproduction report is a ``featlearn compare`` whose methods are
one learner on :class:`~featlearn.datamodules.SparseParity` at several settings (the number
of bits n, the order k, the width r, the update rule, the label noise). Each run's
:class:`~featlearn.callbacks.ParityProgress` gives, per member (seed),

* the *transition step* t_c: the first cadence step from which the test error stays at or
  below its threshold (Barak et al.'s convergence time);
* the *plateau's end* t_p: the last cadence step at which the test error was still at
  chance;
* the *support share gain*: the share of the first layer's squared mass on the hidden
  coordinates S at t_p, over its value at step 0 (hidden progress, while the error shows
  none).

From those, per setting, the *plateau share* t_p / t_c (how much of the time to learn shows
nothing: near 1 for an abrupt transition, near 0 for a gradual one) and the spread of
log t_c over seeds; across settings that differ in n only, the exponent a of

.. math::  \log \bar t_c = a \log n + c ,

(:math:`\bar t_c` the geometric mean over seeds), and across settings that differ in the
width r only, the exponent b of :math:`\bar t_c \propto r^b` (b = -1 is an r-fold parallel
speed-up). Each exponent has a 95% interval that resamples the seeds of every setting (a
bootstrap, 2000 draws, fixed seed). A setting where some seed never learned within its
steps is shown and left out of the fits (its t_c is only a lower bound).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import yaml

from featlearn.studies.trials import get_path, summarize

#: ParityProgress's Fourier gaps per member, where a run measures them: at step 0 and at the plateau's end.
GAPS = ("gradient_gap_start", "gradient_gap_at_plateau")
#: How the report names an update rule.
RULE_NAMES = {"sgd": "SGD", "sign": "sign SGD"}


def transition_settings(folder: Path, results: dict[str, dict], slug) -> list[dict]:
    """Each method's setting and its members' transition measurements.

    Args:
        folder: The item's ``featlearn compare`` folder (each method's config in
            ``methods/<slug>/config.yaml``).
        results: compare's results: method -> metrics with ParityProgress's ``transition_step``,
            ``plateau_end_step`` and ``support_share_gain`` lists (one entry per seed).
        slug: A method name's folder name (compare's).

    Returns:
        One dict per method: ``method``, ``n``, ``k``, ``width``, ``batch``, ``rule``, ``noise``,
        ``lr``, ``steps`` (the run's last step), ``seeds``, ``transition`` (t_c per seed, None
        where not reached), ``plateau_end``, ``share_gain``, ``test_error`` (at the end, per seed)
        and, where the run measured them, ``gradient_gap_start`` and ``gradient_gap_at_plateau``.
    """
    rows = []
    for method, metrics in results.items():
        config = yaml.safe_load((folder / "methods" / slug(method) / "config.yaml").read_text())
        model, data = config["model"]["init_args"], config["data"]["init_args"]
        transition = list(metrics.get("transition_step") or [])
        rows.append(
            {
                "method": method,
                "n": int(data["dim"]),
                "k": int(data.get("k", 3)),
                "width": int(get_path(model, "network.width")),
                "batch": int(data.get("batch_size", 32)),
                "rule": str(model.get("update_rule") or "sgd"),
                "noise": float(data.get("label_noise") or 0.0),
                "lr": float(get_path(model, "training.lr", 0.0)),
                "steps": int(metrics.get("steps") or config["trainer"]["max_steps"]),
                "seeds": len(transition),
                "transition": [None if t is None else float(t) for t in transition],
                "plateau_end": [None if t is None else float(t) for t in metrics.get("plateau_end_step") or []],
                "share_gain": [None if g is None else float(g) for g in metrics.get("support_share_gain") or []],
                # The Fourier gap per seed, where the run measured it (ParityProgress's gradient_samples)
                **{key: [None if g is None else float(g) for g in metrics[key]] for key in GAPS if metrics.get(key)},
                "test_error": [1.0 - float(a) / 100.0 for a in metrics.get("test_acc") or []],
            }
        )
    return rows


def learned(row: dict) -> bool:
    """Whether every seed of the setting learned (has a transition step)."""
    return bool(row["transition"]) and all(t is not None for t in row["transition"])


def plateau_shares(row: dict) -> list[float]:
    """t_p / t_c per seed that learned (0 where the error was never at chance after step 0)."""
    shares = []
    for t_c, t_p in zip(row["transition"], row["plateau_end"] or [None] * len(row["transition"]), strict=True):
        if t_c is not None and t_c > 0:
            shares.append(0.0 if t_p is None else min(t_p, t_c) / t_c)
    return shares


def log_spread(row: dict, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float] | None:
    """The standard deviation of log t_c over the seeds (all must have learned) and its 95% bootstrap interval.

    Returns:
        ``(spread, low, high)``, or None with fewer than three seeds or a seed that never learned.
    """
    if not learned(row) or len(row["transition"]) < 3:
        return None
    logs = np.log(row["transition"])
    generator = np.random.default_rng(seed)
    draws = [np.std(logs[generator.integers(0, len(logs), len(logs))], ddof=1) for _ in range(resamples)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(np.std(logs, ddof=1)), float(low), float(high)


def fit_power(rows: list[dict], axis: str, resamples: int = 2000, seed: int = 0) -> dict | None:
    """The exponent of t_c against ``axis`` (``n`` or ``width``) over settings where every seed learned.

    Returns:
        ``{"exponent", "low", "high", "constant", "points", "range"}`` (95% bootstrap interval over
        the seeds of every setting; ``range``: the axis's largest value over its smallest), or None
        with fewer than three usable settings.
    """
    usable = sorted((r for r in rows if learned(r)), key=lambda r: r[axis])
    if len({r[axis] for r in usable}) < 3:
        return None
    x = np.log([r[axis] for r in usable])
    logs = [np.log(np.array(r["transition"])) for r in usable]
    slope, offset = np.polyfit(x, [v.mean() for v in logs], 1)
    generator = np.random.default_rng(seed)
    draws = [
        np.polyfit(x, [v[generator.integers(0, len(v), len(v))].mean() for v in logs], 1)[0] for _ in range(resamples)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return {
        "exponent": float(slope),
        "low": float(low),
        "high": float(high),
        "constant": float(math.exp(offset)),
        "points": len(usable),
        "range": usable[-1][axis] / usable[0][axis],
    }


def _group_key(row: dict, varying: str) -> tuple:
    fixed = {key: row[key] for key in ("n", "k", "width", "batch", "rule", "lr")}
    fixed.pop(varying)
    return (row["noise"], *sorted(fixed.items()))


def learner_name(row: dict) -> str:
    """The update rule and its rate: ``SGD, eta = 0.1``."""
    return f"{RULE_NAMES.get(row['rule'], row['rule'])}, eta = {row['lr']:g}"


def scaling_name(row: dict) -> str:
    """The report's row of t_c against n for ``row``'s learner and k: ``SGD, eta = 0.1, k = 3``."""
    return f"{learner_name(row)}, k = {row['k']}"


def width_name(row: dict) -> str:
    """The report's row of t_c against the width for ``row``'s learner, k and n."""
    return f"{learner_name(row)}, k = {row['k']}, n = {row['n']}: width"


def transition_results(rows: list[dict]) -> tuple[dict[str, dict], dict[str, dict]]:
    """The report's cells (row name -> {metric: values}) and the fits by row name.

    Every setting is a row with its seeds' ``transition_step``, ``plateau_share`` and
    ``support_share_gain``, the share of its seeds that learned (``learned_share``, percent)
    and its ``log_spread`` (with a bootstrap interval); each group of
    settings that differ in n only
    (label noise 0) is a row with the fitted ``n_exponent``, and each group that differs in
    the width only a row with the fitted ``width_exponent``.
    """
    cells: dict[str, dict] = {}
    fits: dict[str, dict] = {}
    for row in rows:
        spread = log_spread(row)
        cells[row["method"]] = {
            "transition_step": row["transition"],
            "learned_share": [100.0 * sum(t is not None for t in row["transition"]) / max(row["seeds"], 1)],
            "plateau_share": plateau_shares(row) or None,
            "support_share_gain": row["share_gain"] or None,
            "log_spread": None if spread is None else [spread[0]],
            **{key: row[key] for key in GAPS if row.get(key)},
        }
        if spread is not None:  # compared between settings by its 95% interval (featlearn.studies.judgement)
            cells[row["method"]]["log_spread_interval"] = [spread[1], spread[2]]
    for axis, name, metric in (("n", scaling_name, "n_exponent"), ("width", width_name, "width_exponent")):
        groups: dict[tuple, list[dict]] = {}
        for row in rows:
            if row["noise"] == 0:
                groups.setdefault(_group_key(row, axis), []).append(row)
        for group in groups.values():
            if len({r[axis] for r in group}) < 3:
                continue
            label = name(group[0])
            fit = fit_power(group, axis)
            fits[label] = {"axis": axis, "settings": sorted(group, key=lambda r: r[axis]), "fit": fit}
            cells[label] = {metric: None if fit is None else [fit["exponent"]]}
            if fit is not None:  # a fitted rate is judged by its 95% interval (featlearn.studies.judgement)
                cells[label][f"{metric}_interval"] = [fit["low"], fit["high"]]
    return cells, fits


def transition_lines(rows: list[dict], fits: dict[str, dict]) -> list[str]:
    """The Markdown the report prints under a transitions item's table: each setting, then each fit."""
    lines = [
        "| Setting | n | k | width | rule | lr | seeds learned | t_c per seed (steps) | plateau share t_p/t_c | "
        "support share gain at t_p |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        steps = ", ".join("-" if t is None else f"{t:.0f}" for t in r["transition"])
        shares = plateau_shares(r)
        gains = [g for g in r["share_gain"] if g is not None]
        lines.append(
            f"| {r['method']} | {r['n']} | {r['k']} | {r['width']} | {RULE_NAMES.get(r['rule'], r['rule'])}"
            f"{' (labels: noise)' if r['noise'] >= 0.5 else ''} | {r['lr']:g} | "
            f"{sum(t is not None for t in r['transition'])} of {r['seeds']} | {steps} | "
            f"{_mean_std(shares, 2)} | {_mean_std(gains, 2)} |"
        )
    lines.append("")
    lines.append(
        "t_c: the first logged step from which the test error stays at or below the threshold; t_p: the last "
        "logged step at which it was still at chance. '-': not learned within the run's steps (that setting is "
        "left out of the fits)."
    )
    for label, entry in fits.items():
        fit = entry["fit"]
        axis = "n" if entry["axis"] == "n" else "the width r"
        if fit is None:
            lines += ["", f"- **{label}**: fewer than three settings where every seed learned; no fit."]
            continue
        lines += [
            "",
            f"- **{label}**: t_c ~ {fit['constant']:.3g} x {entry['axis']}^{fit['exponent']:.2f}, 95% interval "
            f"[{fit['low']:.2f}, {fit['high']:.2f}] over {fit['points']} settings ({axis} varied {fit['range']:.3g}x).",
        ]
    return lines


def _mean_std(values: list[float], decimals: int) -> str:
    """``mean ± std`` over seeds (``summarize``); the value alone for one seed, ``-`` for none."""
    mean, std, _ = summarize(values)
    if mean is None:
        return "-"
    return f"{mean:.{decimals}f}" if std is None else f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def transition_plot(fits: dict[str, dict], target: Path, title: str) -> Path | None:
    """t_c against n (and against the width), log-log, one panel per axis: each seed, the means and the fits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_used = [axis for axis in ("n", "width") if any(e["axis"] == axis for e in fits.values())]
    if not axes_used:
        return None
    figure, axes = plt.subplots(1, len(axes_used), figsize=(5.2 * len(axes_used), 4.0), squeeze=False)
    for panel, axis_name in zip(axes[0], axes_used, strict=True):
        for colour, (label, entry) in enumerate(e for e in fits.items() if e[1]["axis"] == axis_name):
            xs, means = [], []
            for r in entry["settings"]:
                reached = [t for t in r["transition"] if t is not None]
                panel.scatter([r[axis_name]] * len(reached), reached, s=8, alpha=0.4, color=f"C{colour}")
                if learned(r):
                    xs.append(r[axis_name])
                    means.append(math.exp(np.mean(np.log(r["transition"]))))
            panel.plot(xs, means, "o", color=f"C{colour}", label=label)
            fit = entry["fit"]
            if fit is not None:
                grid = np.geomspace(min(xs), max(xs), 20)
                label = f"fit: exponent {fit['exponent']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}]"
                panel.plot(grid, fit["constant"] * grid ** fit["exponent"], "--", color=f"C{colour}", label=label)
        panel.set_xscale("log")
        panel.set_yscale("log")
        panel.set_xlabel("n (bits)" if axis_name == "n" else "width r")
        panel.set_ylabel("transition step t_c")
        panel.grid(alpha=0.3, which="both")
        panel.legend(fontsize=7)
    figure.suptitle(textwrap.fill(title, 110), fontsize=10)
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=90, bbox_inches="tight")
    plt.close(figure)
    return target
