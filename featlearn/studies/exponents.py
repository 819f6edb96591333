r"""Exponents of a sample-complexity curve n*(d), fitted with bootstrap intervals.

The search (:mod:`featlearn.studies.samples`) brackets n* in (n_fail, n_pass] per d.
:func:`fit_exponent` fits the power law log n* = alpha log d + c (the NTK's d^2 against
the network's d polylog d, Glasgow 2023, Theorem 3.1); :func:`fit_log_power` the form
n* = C d log^k d; both draw each n* log-uniformly within its bracket in a bootstrap over
the points and, given each trial's per-seed outcomes, over the seeds within each d as well
(n* rests on a share of seeds passing: resampling them moves each bracket).
:func:`effective_slope` says which power-law exponent a d polylog d curve shows over a
finite range of d.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

#: Per d, every budget tried and which seeds reached the target there: {d: [(n, [passed per seed])]}.
SeedOutcomes = Mapping[int, Sequence[tuple[int, Sequence[bool]]]]


def found_points(rows: list[dict], method: str) -> list[tuple[int, int, int | None]]:
    """(d, n_pass, n_fail) of each dimension whose search bracketed n* for ``method``: what the fits read."""
    return [(r["d"], r["n_pass"], r["n_fail"]) for r in rows if r["method"] == method and r["status"] == "found"]


def fit_exponent(
    points: list[tuple[int, int, int | None]],
    draws: int = 2000,
    seed: int = 0,
    outcomes: SeedOutcomes | None = None,
    pass_fraction: float = 0.5,
) -> dict | None:
    r"""Least squares log n* = alpha log d + c, with a bootstrap interval for alpha.

    Args:
        points: (d, n_pass, n_fail) per dimension; n_fail None where the smallest budget passed.
        draws: Bootstrap resamples: the points are drawn with replacement and each n* is
            drawn log-uniformly in its bracket (n_fail, n_pass] (at n_pass when unbracketed).
        seed: The bootstrap's seed.
        outcomes: Each d's tried budgets and per-seed results (None: the seeds are not resampled).
            Given, every draw also resamples the seeds within each drawn d and re-brackets n* among
            the budgets tried: the smallest that at least ``pass_fraction`` of the drawn seeds pass,
            and the largest below it that fails (a d none of whose budgets passes drops out of that draw).
        pass_fraction: The share of seeds a budget needs (the study's).

    Returns:
        ``{"alpha", "intercept", "stderr", "ci_low", "ci_high", "points"}`` (stderr None
        with two points), or None with fewer than two distinct d.
    """
    import numpy as np

    if len({d for d, _, _ in points}) < 2:
        return None
    x = np.log([d for d, _, _ in points])
    fit = _bootstrap_line(x, points, draws, seed, per_d=lambda d: 0.0, outcomes=outcomes, share=pass_fraction)
    return {"alpha": fit["slope"], **{k: v for k, v in fit.items() if k != "slope"}}


def fit_log_power(
    points: list[tuple[int, int, int | None]],
    draws: int = 2000,
    seed: int = 0,
    outcomes: SeedOutcomes | None = None,
    pass_fraction: float = 0.5,
) -> dict | None:
    r"""Least squares of the form n* = C d log^k d: log(n*/d) = k log log d + c, with a bootstrap interval for k.

    Theorem 3.1's recipe (eta = theta = 1/log d, minibatch m = d/theta, t <= C log d / eta
    steps) spends n = t m <= C d log^3 d samples, so n* = d polylog d with k <= 3 over d
    where the recipe holds. The bootstrap is :func:`fit_exponent`'s.

    Returns:
        ``{"k", "intercept", "stderr", "ci_low", "ci_high", "points"}``, or None with fewer
        than two distinct d above e (log log d must be positive).
    """
    import numpy as np

    usable = [p for p in points if p[0] > math.e]
    if len({d for d, _, _ in usable}) < 2:
        return None
    log_log_d = np.log(np.log([d for d, _, _ in usable]))
    fit = _bootstrap_line(log_log_d, usable, draws, seed, per_d=math.log, outcomes=outcomes, share=pass_fraction)
    return {"k": fit["slope"], **{k: v for k, v in fit.items() if k != "slope"}}


def effective_slope(dims: list[int], log_form) -> float:
    """The least-squares slope of log f(d) against log d over ``dims``: the exponent a power-law fit sees.

    ``log_form(d)`` is log f(d), e.g. ``2 log d + log log d`` for d^2 log d (a local slope
    2 + 1/log d, above 2 at every finite d).
    """
    import numpy as np

    x = np.log(dims)
    return float(np.polyfit(x, [log_form(d) for d in dims], 1)[0])


def reseeded_bracket(tried: Sequence[tuple[int, Sequence[bool]]], seeds, share: float) -> tuple[int, int] | None:
    """(n_fail, n_pass) among the tried budgets for the seeds drawn (indices ``seeds``); None if none passes.

    n_pass is the smallest budget that at least ``share`` of the drawn seeds pass, n_fail the
    largest tried below it that fails (n_pass itself where none below was tried).
    """
    need = share * len(seeds) - 1e-9
    passing = sorted(n for n, ok in tried if sum(bool(ok[j]) for j in seeds) >= need)
    if not passing:
        return None
    below = [n for n, ok in tried if n < passing[0]]
    return (max(below) if below else passing[0]), passing[0]


def _bootstrap_line(x, points, draws: int, seed: int, per_d, outcomes=None, share: float = 0.5) -> dict:
    """Least squares y = slope x + c with y = log n* - per_d(d), and a bootstrap 95% interval for the slope.

    With ``outcomes``, each draw resamples the seeds within every drawn d too (:func:`reseeded_bracket`).
    """
    import numpy as np

    shift = np.array([per_d(d) for d, _, _ in points])
    log_n = np.log([n for _, n, _ in points]) - shift
    slope, intercept = np.polyfit(x, log_n, 1)
    stderr = None
    if len(points) > 2:
        residual = log_n - (slope * x + intercept)
        spread = ((x - x.mean()) ** 2).sum()
        stderr = float(math.sqrt((residual**2).sum() / (len(points) - 2) / spread))
    rng = np.random.default_rng(seed)
    lows = np.log([nf if nf is not None else n for _, n, nf in points]) - shift
    slopes = []
    dims = [d for d, _, _ in points]
    for _ in range(draws):
        idx = rng.integers(0, len(points), len(points))
        low, high = lows[idx], log_n[idx]
        if outcomes is not None:  # the seeds within each drawn d, resampled: the bracket moves with them
            kept = []
            for position, i in enumerate(idx):
                tried = outcomes[dims[i]]
                bracket = reseeded_bracket(tried, rng.integers(0, len(tried[0][1]), len(tried[0][1])), share)
                if bracket is not None:
                    low[position], high[position] = np.log(bracket) - shift[i]
                    kept.append(position)
            idx, low, high = idx[kept], low[kept], high[kept]
        if len(set(x[idx])) < 2:
            continue
        jittered = rng.uniform(low, high)
        slopes.append(np.polyfit(x[idx], jittered, 1)[0])
    low, high = np.percentile(slopes, [2.5, 97.5]) if slopes else (float("nan"), float("nan"))
    return {
        "slope": float(slope),
        "intercept": float(intercept),
        "stderr": stderr,
        "ci_low": float(low),
        "ci_high": float(high),
        "points": len(points),
    }


#: Candidate forms of n*(d) for a prediction test: name -> (shift(d), regressors(d)), the form
#: log n* - shift(d) = c + sum_i b_i regressor_i(d), its constants fitted by least squares.
SAMPLE_FORMS = {
    "d log^k d (k fitted)": (math.log, lambda d: [math.log(math.log(d))]),
    "d^alpha (alpha fitted)": (lambda d: 0.0, lambda d: [math.log(d)]),
    "d^2 (constant fitted)": (lambda d: 2.0 * math.log(d), lambda d: []),
    "d^2 log d (constant fitted)": (lambda d: 2.0 * math.log(d) + math.log(math.log(d)), lambda d: []),
}


def _predict_log(form: str, dims, log_n, target: int) -> float:
    """The form's log n* at ``target``, its constants fitted on (dims, log_n) by least squares."""
    import numpy as np

    shift, regressors = SAMPLE_FORMS[form]
    design = np.array([[1.0, *regressors(d)] for d in dims])
    coefficients = np.linalg.lstsq(design, np.asarray(log_n) - np.array([shift(d) for d in dims]), rcond=None)[0]
    return float(shift(target) + np.dot([1.0, *regressors(target)], coefficients))


def predict_largest(
    points: list[tuple[int, int, int | None]],
    draws: int = 2000,
    seed: int = 0,
    outcomes: SeedOutcomes | None = None,
    pass_fraction: float = 0.5,
) -> dict | None:
    r"""Each candidate form fitted on the smaller d, its prediction of n* at the largest d against the measured n*.

    A rate claim that can fail: with the forms of :data:`SAMPLE_FORMS` fitted on every
    bracketed d but the largest, the error of each at the largest d is
    :math:`\log \hat n^*(d_{max}) - \log n^*(d_{max})` (0: predicted exactly; 0.1: 10% high).
    Its 95% interval draws each n* log-uniformly in its bracket and, given ``outcomes``,
    re-brackets every d on resampled seeds first (:func:`reseeded_bracket`).

    Returns:
        ``{"target": d_max, "fitted_on": [d, ...], "measured": n_pass at d_max,
        "forms": {name: {"error", "low", "high", "predicted"}}}``, or None with fewer than
        three bracketed d (a two-constant form needs two points to fit and one to predict).
    """
    import numpy as np

    points = sorted(p for p in points if p[0] > math.e)
    dims = [d for d, _, _ in points]
    if len(set(dims)) < 3 or dims.count(dims[-1]) > 1:
        return None
    target = dims[-1]
    log_n = np.log([n for _, n, _ in points])
    lows = np.log([nf if nf is not None else n for _, n, nf in points])
    rng = np.random.default_rng(seed)
    errors: dict[str, list[float]] = {form: [] for form in SAMPLE_FORMS}
    for _ in range(draws):
        low, high = lows.copy(), log_n.copy()
        if outcomes is not None:  # the seeds within each d resampled: its bracket moves with them
            missing = False
            for i, d in enumerate(dims):
                if d not in outcomes:
                    continue
                seeds = len(outcomes[d][0][1])
                bracket = reseeded_bracket(outcomes[d], rng.integers(0, seeds, seeds), pass_fraction)
                if bracket is None:
                    missing = True  # no budget passes on these seeds: no n* to fit or predict
                    break
                low[i], high[i] = np.log(bracket)
            if missing:
                continue
        jittered = rng.uniform(low, high)
        for form in SAMPLE_FORMS:
            errors[form].append(_predict_log(form, dims[:-1], jittered[:-1], target) - jittered[-1])
    forms = {}
    for form in SAMPLE_FORMS:
        predicted = _predict_log(form, dims[:-1], log_n[:-1], target)
        low, high = np.percentile(errors[form], [2.5, 97.5]) if errors[form] else (math.nan, math.nan)
        forms[form] = {
            "error": predicted - float(log_n[-1]),
            "low": float(low),
            "high": float(high),
            "predicted": math.exp(predicted),
        }
    return {"target": target, "fitted_on": dims[:-1], "measured": int(points[-1][1]), "forms": forms}
