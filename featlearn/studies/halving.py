r"""Successive halving of a tuning grid: every point starts, only the best on validation finish.

A full grid trains each of its n points for the experiment's T update steps. Successive
halving (Jamieson and Talwalkar, 2016; Li et al., 2018, "Hyperband") with reduction factor
eta trains all n points for T / eta^(R-1) steps, keeps the best ceil(n / eta) on the
validation set, trains those on to T / eta^(R-2) steps, and so on until the survivors reach T.
With R = 1 + floor(log_eta n) rungs at steps s_0 < ... < s_{R-1} = T and n_r points in
rung r (n_0 = n, n_{r+1} = ceil(n_r / eta)), the grid trains

.. math::  \sum_{r=0}^{R-1} n_r \, (s_r - s_{r-1}), \qquad s_{-1} = 0,

e.g. 9 points at eta = 3: 9 x T/9 + 3 x (T/3 - T/9) + 1 x (T - T/3) = 2.33 T against 9 T.

A survivor goes on from its own checkpoint (``fit --ckpt_path``), so its steps are the
same as one uninterrupted fit's, and its last rung's result is the full grid's result for
that point. What halving can change is *which* points reach T: a point that is behind
early but best at T is dropped. So the choice equals the full grid's only where the full
grid's best point survives every rung, which ``benchmarks/bench_halving.py`` checks side by side.

This module holds the arithmetic (pure functions); :func:`featlearn.studies.tuning.tune_methods`
runs the rungs.
"""

from __future__ import annotations

import math


def rung_steps(total: int, points: int, eta: int) -> list[int]:
    r"""The update steps at which each rung's points are compared: ``[s_0, ..., s_{R-1} = total]``.

    .. math::  R = 1 + \lfloor \log_\eta n \rfloor, \qquad s_r = \lceil T / \eta^{R-1-r} \rceil

    Rungs closer than one step collapse (a rung must train at least one more step).

    Args:
        total: T, the experiment's ``trainer.max_steps``.
        points: n, the grid's size.
        eta: The reduction factor (>= 2): a rung keeps the best 1/eta of its points.

    Returns:
        Strictly increasing steps ending at ``total``; ``[total]`` for a grid of one point.

    Raises:
        ValueError: ``eta < 2``, ``total < 1`` or ``points < 1``.
    """
    if eta < 2 or total < 1 or points < 1:
        raise ValueError(f"successive halving needs eta >= 2, T >= 1 and n >= 1, got eta={eta}, T={total}, n={points}")
    rungs = 1
    while eta**rungs <= points:  # 1 + floor(log_eta n), in integers
        rungs += 1
    steps = []
    for r in range(rungs):
        step = math.ceil(total / eta ** (rungs - 1 - r))
        if not steps or step > steps[-1]:
            steps.append(step)
    return steps


def survivors(scores: list[float | None], eta: int, last: bool, errors: list[float] | None = None) -> list[int]:
    r"""The points that go on to the next rung: the best 1/eta, and every point within noise of them.

    The best ``ceil(m / eta)`` of the ``m`` points that did not diverge go on. A rung ranks
    points by a mean over seeds, and two points a standard error apart are not told apart by
    it: on E.1.1 the NTK's rates 1e-3 and 1e-4 score 82.70% and 82.37% at T/3 (5 seeds,
    standard errors about 0.4), then 80.63% and 83.74% at T. So a point also goes on when its
    mean is within one standard error of the difference from the last point kept by rank, c:

    .. math::  \bar v_i \ge \bar v_c - \sqrt{s_i^2 / S + s_c^2 / S}

    with s the sample standard deviations over the S seeds.

    Args:
        scores: One mean validation accuracy per point of the rung, in the grid's order;
            None for a point that diverged (never a survivor).
        eta: The reduction factor.
        last: Whether this rung is the last (then nobody goes on).
        errors: The standard error of each mean (None where unknown or diverged); None: rank alone.

    Returns:
        Indices into ``scores``, in the grid's order. A tie at the cut keeps the earlier
        point in the grid (the full grid's rule: the first in the file's order wins a tie).
    """
    if last:
        return []
    alive = [i for i, score in enumerate(scores) if score is not None]
    if not alive:
        return []
    keep = math.ceil(len(alive) / eta)
    ranked = sorted(alive, key=lambda i: (-scores[i], i))  # stable: a tie keeps the file's order
    kept = set(ranked[:keep])
    if errors is not None:
        cut = ranked[keep - 1]
        for i in ranked[keep:]:
            spread = math.hypot(errors[i] or 0.0, errors[cut] or 0.0)
            if scores[i] >= scores[cut] - spread:
                kept.add(i)
    return sorted(kept)
