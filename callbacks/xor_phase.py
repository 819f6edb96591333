r"""Phase diagnostics for the XOR problem (Glasgow 2023, Table 1 and Section 4)."""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback, log_spaced_steps
from featlearn.callbacks.pictures import publish_text
from featlearn.contracts import EvaluationData
from featlearn.validation import check_int, check_number, is_number

#: The four cluster directions, in the order used for margins and coverage.
CLUSTERS = ("+mu_1", "-mu_1", "+mu_2", "-mu_2")


#: Section 4.1.1's tau = sqrt(2)/4: -w_sig . grad ~ |a_w l'(mu)| tau for a signal-heavy neuron.
TAU = math.sqrt(2) / 4


def neuron_components(w: Tensor, a: Tensor, mu_1: Tensor, mu_2: Tensor) -> dict[str, Tensor]:
    r"""Split every neuron into its signal, opposite and orthogonal parts (Table 1).

    .. math::

        w_{sig} = \begin{cases} \tfrac12 \mu_1 \mu_1^\top w & a_w \ge 0 \\
                                \tfrac12 \mu_2 \mu_2^\top w & a_w < 0 \end{cases}, \quad
        w_{opp} = \begin{cases} \tfrac12 \mu_2 \mu_2^\top w & a_w \ge 0 \\
                                \tfrac12 \mu_1 \mu_1^\top w & a_w < 0 \end{cases}, \quad
        w_\perp = w - w_{sig} - w_{opp} .

    (With :math:`\lVert\mu_k\rVert^2 = 2`, :math:`\tfrac12 \mu\mu^\top` is the projection
    on :math:`\mu`.) A neuron with :math:`a_w \ge 0` serves the label +1 clusters
    :math:`\pm\mu_1`; its ``cluster`` is the one :math:`w_{sig}` points to.

    Args:
        w: First-layer weights (S, p, d).
        a: Second-layer weights (S, p).
        mu_1: (d,), label +1 direction.
        mu_2: (d,), label -1 direction, orthogonal to mu_1.

    Returns:
        ``sig``, ``opp``, ``perp``, ``norm``: the norms ||w_sig||, ||w_opp||,
        ||w_perp||, ||w|| (S, p); ``cluster``: index into :data:`CLUSTERS` (S, p).
    """
    u_1 = (mu_1 / mu_1.norm()).to(w.dtype)
    u_2 = (mu_2 / mu_2.norm()).to(w.dtype)
    c_1 = w @ u_1  # (S, p): signed length along mu_1
    c_2 = w @ u_2  # (S, p)
    perp = (w - c_1.unsqueeze(-1) * u_1 - c_2.unsqueeze(-1) * u_2).norm(dim=-1)  # (S, p)
    positive = a >= 0
    sig = torch.where(positive, c_1.abs(), c_2.abs())
    opp = torch.where(positive, c_2.abs(), c_1.abs())
    cluster = torch.where(positive, (c_1 < 0).long(), 2 + (c_2 < 0).long())
    return {"sig": sig, "opp": opp, "perp": perp, "norm": w.norm(dim=-1), "cluster": cluster}


def growth_evidence(steps: list[int], values: list[float]) -> float | None:
    r"""log(RSS_lin / RSS_exp): which of linear and exponential growth fits ``values`` against ``steps`` better.

    Both are two-parameter least-squares fits, y = c + b t and y = A e^{k t} (the latter
    fitted on log y), and both residuals are measured on y itself, so the two sums of
    squares compare directly: > 0 favours exponential growth, < 0 linear. None with fewer
    than three points or a value that is not positive.
    """
    import numpy as np

    t, y = np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if len(t) < 3 or len(set(steps)) < 3 or not np.all(np.isfinite(y)) or np.any(y <= 0):
        return None
    slope, intercept = np.polyfit(t, y, 1)
    linear = float(((y - (intercept + slope * t)) ** 2).sum())
    rate, log_scale = np.polyfit(t, np.log(y), 1)
    exponential = float(((y - np.exp(log_scale + rate * t)) ** 2).sum())
    tiny = 1e-300  # an exact fit of either form
    return float(np.log(max(linear, tiny) / max(exponential, tiny)))


def cluster_points(mu_1: Tensor, mu_2: Tensor) -> tuple[Tensor, Tensor]:
    """The four cluster centres (4, d) in :data:`CLUSTERS` order and their labels (4,)."""
    points = torch.stack([mu_1, -mu_1, mu_2, -mu_2])
    labels = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=points.dtype, device=points.device)
    return points, labels


def signal_heavy(components: dict[str, Tensor], ratio: float) -> Tensor:
    r"""Neurons with :math:`\lVert w_{sig}\rVert \ge r (\lVert w_{opp}\rVert + \lVert w_\perp\rVert)`, (S, p)."""
    return components["sig"] >= ratio * (components["opp"] + components["perp"])


def cluster_coverage(heavy: Tensor, cluster: Tensor) -> Tensor:
    """Fraction of all neurons that are signal-heavy and serve each cluster: (S, 4)."""
    onehot = torch.nn.functional.one_hot(cluster, num_classes=4).to(torch.float64)  # (S, p, 4)
    return (onehot * heavy.unsqueeze(-1)).mean(dim=1)


class XORPhaseDiagnostics(DiagnosticCallback):
    r"""Logs Glasgow's (2023) phase diagnostics under ``phase/``.

    At each cadence step (log-spaced by default), from the network's w (S, p, d) and
    a (S, p) and the data model's mu_1, mu_2 (``ground_truth()``, a :class:`~featlearn.contracts.GroundTruth`):

    * ``phase/w_sig_*``, ``phase/w_opp_*``, ``phase/w_perp_*``: mean and quantiles over
      neurons of ||w_sig||, ||w_opp||, ||w_perp|| (:func:`neuron_components`).
    * ``phase/signal_heavy_frac``: fraction of neurons with
      ||w_sig|| >= r (||w_opp|| + ||w_perp||), r = ``signal_heavy_ratio``.
    * ``phase/coverage_min``: min over the four clusters mu of the fraction of neurons
      that are signal-heavy with w_sig . mu > 0.
    * ``phase/gamma_min``, ``phase/gamma_max`` and per cluster ``phase/gamma_{+mu_1}``...:
      margins gamma_mu = y(mu) f(mu) for mu in {+-mu_1, +-mu_2} (y = +1 on +-mu_1).
    * ``phase/g_min``, ``phase/g_max``: min / max over mu of |l'(mu)|, the loss
      derivative in f at gamma_mu (for the logistic loss 2/(1 + e^{gamma_mu}); the
      paper's Table 1 drops the factor 2 of its own l').
    * ``phase/balance_*``: mean and quantiles of |a_w| / ||w|| (1 at initialisation,
      and kept near 1 by gradient flow, Section 4.1).
    * ``phase/test_loss``, ``phase/test_error``: on the data model's held-out test set
      (a population estimate).

    **Phase boundary.** The signal-finding phase ends, for a member, at the first
    cadence step at which every cluster is served by signal-heavy neurons: the
    fraction of neurons that are signal-heavy (ratio r) *and* have w_sig . mu > 0 is
    at least q = ``boundary_fraction`` for each mu in {+-mu_1, +-mu_2} (the 0.1 of
    Lemma 4.1's conclusion is the default q). Before it, the loss sits near
    2 log 2 and ||w_sig|| grows from about theta/sqrt(d). The step is logged once as
    ``phase/boundary_step`` (``phase_members/boundary_step_s`` for each member of an
    ensemble) and printed in the run summary at the end of ``fit``.

    **Remark 4.3's growth laws.** At a member's boundary step its signal-heavy neurons
    become its heavy set S (Definition 4.2's set, held fixed from then on). At every later
    cadence step ``phase/heavy_w_sig_mean`` logs the mean ||w_sig|| over S and
    ``phase/outside_mass_frac`` the share of Definition 4.2's mass E 1(w not in S) ||w||^2
    in the total E ||w||^2. Remark 4.3: with both layers trained, ||w_sig|| grows
    exponentially on S and the share stays; with the second layer frozen, linearly, and the
    share may rise. :meth:`member_results` hands each member's evidence over the
    signal-heavy phase (boundary step to margin step, or to the run's end):
    ``heavy_growth`` = log(RSS_linear / RSS_exponential) of the two least-squares fits of
    ||w_sig|| on S against the step (> 0: exponential fits better; both fits have two
    parameters, residuals in ||w_sig|| itself), and ``outside_mass_change``, the share at
    the phase's end minus at its start.

    **End of the signal-heavy phase.** Lemma 4.4 grows the weakest margin geometrically,
    gamma_min^(t+1) >= (1 + 2 eta tau g_max) gamma_min^(t), from the small margins that
    signal finding leaves to a constant, which takes Theta(log log d / eta) steps
    (Section 4.1.1). A member's *margin step* is the first cadence step at which its
    gamma_min = min_mu y(mu) f(mu) is at least ``margin_target`` (``phase/margin_step``);
    the signal-heavy phase lasts from the boundary step to it. :meth:`member_results`
    hands both steps, per member, to a study.

    The neurons are the learner's ``first_layer_features()`` and ``output_weights()``;
    for a learner without learned neurons (the NTK baseline) only the margins and the
    test metrics are logged. Metrics are averaged over ensemble members.

    Args:
        cadence: ``"log"`` or every N steps (see :class:`DiagnosticCallback`).
        points_per_decade: Density of the log-spaced cadence.
        signal_heavy_ratio: r in the signal-heavy test above (> 0).
        boundary_fraction: q in the phase-boundary rule, in (0, 0.25].
        margin_target: The gamma_min (> 0) that ends the signal-heavy phase (the margin step).
        quantiles: Quantiles of the per-neuron distributions to log, in [0, 1].
        evaluate_test: Also compute test loss and error at each cadence step.
        pictures_per_decade: How often to draw the neurons (:meth:`draw_neurons`): at
            cadence steps spaced this many per factor of 10, plus step 0 and the last
            (0: never). Each picture is the TensorBoard image ``phase/neurons`` and
            ``phase_neurons_step<t>.png`` in the run folder.
    """

    data_requirement = EvaluationData
    state_attributes = (
        "history",
        "boundary_steps",
        "margin_steps",
        "last_gamma_min",
        "pictured_steps",
        "_first_reach",
        "heavy_sets",
        "heavy_tracks",
        "boundary_stats",
        "margin_stats",
        "rate_tracks",
        "margin_tracks",
    )
    result_tags = ("phase/signal_heavy_frac", "phase/coverage_min", "phase/gamma_min")

    def __init__(
        self,
        cadence: str | int = "log",
        points_per_decade: int = 20,
        signal_heavy_ratio: float = 1.0,
        boundary_fraction: float = 0.1,
        margin_target: float = 1.0,
        quantiles: tuple[float, ...] = (0.1, 0.5, 0.9),
        evaluate_test: bool = True,
        pictures_per_decade: int = 2,
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        self.pictures_per_decade = check_int("XORPhaseDiagnostics.pictures_per_decade", pictures_per_decade, 0)
        self._picture_steps: set[int] = set()
        #: Steps at which the neurons were drawn.
        self.pictured_steps: list[int] = []
        self._first_reach: float | None = None  # the first picture's axis reach, for the ratio in each title
        check_number("XORPhaseDiagnostics.signal_heavy_ratio", signal_heavy_ratio, 0.0, strict=True)
        check_number(
            "XORPhaseDiagnostics.boundary_fraction",
            boundary_fraction,
            0.0,
            0.25,
            strict=True,
            hint=" (four clusters share the neurons)",
        )
        if not all(is_number(q) and 0 <= q <= 1 for q in quantiles):
            raise ValueError(f"XORPhaseDiagnostics.quantiles must be numbers in [0, 1], got {list(quantiles)}.")
        self.signal_heavy_ratio = signal_heavy_ratio
        self.boundary_fraction = boundary_fraction
        self.quantiles = tuple(quantiles)
        self.evaluate_test = evaluate_test
        check_number("XORPhaseDiagnostics.margin_target", margin_target, 0.0, strict=True)
        self.margin_target = margin_target
        self.boundary_steps: list[int | None] = []
        self.margin_steps: list[int | None] = []
        #: Each member's gamma_min at the last cadence step.
        self.last_gamma_min: list[float] = []
        #: Each member's heavy set S (one bool per neuron), fixed at its boundary step; None before.
        self.heavy_sets: list[list[bool] | None] = []
        #: Each member's (step, mean ||w_sig|| on S, mass share outside S) from its boundary step on.
        self.heavy_tracks: list[list[tuple[int, float, float]]] = []
        #: Each member's Lemma 4.1 quantity at its boundary step: {"off_signal_sq": E ||w_perp + w_opp||^2}.
        self.boundary_stats: list[dict | None] = []
        #: Each member's Lemma 4.4 quantities at its margin step: {"gamma_ratio", "balance"}.
        self.margin_stats: list[dict | None] = []
        #: Each member's (step, eta tau |l'|) from its boundary step on: Section 4.1.1's predicted log-rate of S.
        self.rate_tracks: list[list[tuple[int, float]]] = []
        #: Each member's (step, gamma_min, log(1 + 2 eta tau g_max)) from its boundary step on: Lemma 4.4's rate.
        self.margin_tracks: list[list[tuple[int, float, float]]] = []

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        data = self.data_model
        data.ground_truth().require(("mu_1", "mu_2"), "XORPhaseDiagnostics", type(data).__name__)
        if len(self.boundary_steps) != pl_module.ensemble_size:
            self.boundary_steps = [None] * pl_module.ensemble_size
        if len(self.margin_steps) != pl_module.ensemble_size:
            self.margin_steps = [None] * pl_module.ensemble_size
        if len(self.heavy_sets) != pl_module.ensemble_size:
            self.heavy_sets = [None] * pl_module.ensemble_size
            self.heavy_tracks = [[] for _ in range(pl_module.ensemble_size)]
        if len(self.boundary_stats) != pl_module.ensemble_size:
            self.boundary_stats = [None] * pl_module.ensemble_size
            self.margin_stats = [None] * pl_module.ensemble_size
            self.rate_tracks = [[] for _ in range(pl_module.ensemble_size)]
        if len(self.margin_tracks) != pl_module.ensemble_size:
            self.margin_tracks = [[] for _ in range(pl_module.ensemble_size)]
        max_steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else 10**9
        wanted = log_spaced_steps(max_steps, self.pictures_per_decade) if self.pictures_per_decade else []
        # Each picture lands on the nearest step the diagnostics run at anyway.
        due = sorted(self._steps) if self.cadence == "log" else sorted(set(range(0, max_steps + 1, self.cadence)))
        self._picture_steps = {min(due, key=lambda t, w=w: abs(t - w)) for w in wanted} if due else set()

    def _summary_stats(self, name: str, values: Tensor) -> dict[str, Tensor]:
        """Mean and quantiles over neurons of (S, p) values, averaged over members."""
        values = values.to(torch.float64)
        out = {f"phase/{name}_mean": values.mean(dim=1).mean()}
        qs = torch.quantile(
            values, torch.tensor(self.quantiles, dtype=values.dtype, device=values.device), dim=1
        )  # (Q, S)
        for q, row in zip(self.quantiles, qs, strict=True):
            out[f"phase/{name}_q{round(100 * q):02d}"] = row.mean()
        return out

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        truth = self.data_model.ground_truth()
        w, a = pl_module.first_layer_features(), pl_module.output_weights()  # (S, p, d), (S, p) or None
        metrics: dict[str, Tensor] = {}
        coverage = balance = comp = None
        if w is not None and a is not None:
            mu_1, mu_2 = truth.mu_1.to(w.device, w.dtype), truth.mu_2.to(w.device, w.dtype)
            comp = neuron_components(w, a, mu_1, mu_2)
            for name in ("sig", "opp", "perp"):
                metrics.update(self._summary_stats(f"w_{name}", comp[name]))
            balance = a.abs() / comp["norm"].clamp_min(1e-30)  # (S, p): |a_w| / ||w||
            metrics.update(self._summary_stats("balance", balance))
            heavy = signal_heavy(comp, self.signal_heavy_ratio)  # (S, p)
            metrics["phase/signal_heavy_frac"] = heavy.to(torch.float64).mean()
            coverage = cluster_coverage(heavy, comp["cluster"])  # (S, 4)
            metrics["phase/coverage_min"] = coverage.min(dim=1).values.mean()

        device = pl_module.device
        mu_1, mu_2 = truth.mu_1.to(device), truth.mu_2.to(device)
        points, labels = cluster_points(mu_1, mu_2)
        gamma = labels * pl_module.scores(points)  # (S, 4)
        g = pl_module.margin_loss_derivative_abs(gamma)  # (S, 4)
        metrics["phase/gamma_min"] = gamma.min(dim=1).values.mean()
        metrics["phase/gamma_max"] = gamma.max(dim=1).values.mean()
        metrics["phase/g_min"] = g.min(dim=1).values.mean()
        metrics["phase/g_max"] = g.max(dim=1).values.mean()
        for k, name in enumerate(CLUSTERS):
            metrics[f"phase/gamma_{name}"] = gamma[:, k].mean()
        gamma_min = gamma.min(dim=1).values  # (S,)
        self.last_gamma_min = gamma_min.tolist()
        for s, hit in enumerate((gamma_min >= self.margin_target).tolist()):
            if hit and self.margin_steps[s] is None:
                self.margin_steps[s] = step
                # Lemma 4.4 keeps the clusters' margins balanced (gamma_max / gamma_min bounded) and the
                # neurons near |a_w| = ||w|| (Section 4.1): both read where the phase ends.
                self.margin_stats[s] = {
                    "gamma_ratio": float(gamma[s].max() / gamma[s].min().clamp_min(1e-30)),
                    "balance": None if balance is None else float(balance[s].to(torch.float64).mean()),
                }
                tag = "phase/margin_step" if gamma.shape[0] == 1 else f"phase_members/margin_step_{s}"
                metrics[tag] = torch.tensor(float(step))

        data = self.data_model
        test_loss = None  # (S,): each member's test loss, for the plateau read at its boundary step
        if self.evaluate_test and data.set_size("test"):
            test_loss, error = pl_module.evaluate_dataset(*data.eval_set("test"), chunk=data.eval_batch_size)
            metrics["phase/test_loss"] = test_loss.mean()
            metrics["phase/test_error"] = error.mean()

        if coverage is None:  # no learned neurons (the NTK): no phase boundary to detect
            return metrics
        if trainer.is_global_zero:
            self._histograms(trainer, comp, a, step)
            if step in self._picture_steps:
                self.draw_neurons(trainer, w[0], a[0], mu_1, mu_2, step)
        reached = coverage.min(dim=1).values >= self.boundary_fraction  # (S,)
        arriving = [hit and self.boundary_steps[s] is None for s, hit in enumerate(reached.tolist())]
        if any(arriving) and test_loss is None and data.set_size("test"):  # the plateau, read once per arrival
            test_loss, _ = pl_module.evaluate_dataset(*data.eval_set("test"), chunk=data.eval_batch_size)
        for s, hit in enumerate(reached.tolist()):
            if hit and self.boundary_steps[s] is None:
                self.boundary_steps[s] = step
                # Lemma 4.1's conclusion: E ||w_perp + w_opp||^2 <= theta at the end of signal finding
                # (w_perp and w_opp are orthogonal, so the squared norm is their squares' sum).
                off = comp["perp"][s].to(torch.float64) ** 2 + comp["opp"][s].to(torch.float64) ** 2
                self.boundary_stats[s] = {
                    "off_signal_sq": float(off.mean()),
                    # Section 4.1: the loss sits near its value at f = 0 (2 log 2) through signal finding.
                    "test_loss": None if test_loss is None else float(test_loss[s]),
                }
                tag = "phase/boundary_step" if len(reached) == 1 else f"phase_members/boundary_step_{s}"
                metrics[tag] = torch.tensor(float(step))
                self.heavy_sets[s] = heavy[s].tolist()
        metrics.update(self._track_heavy_sets(comp, step))
        # The first layer's rate of the update that follows this cadence step (updates count from 1).
        eta = pl_module.scheduled_values(step + 1).get("lr_w")
        if eta is not None:  # None: no first-layer group, no rate to predict with
            self._track_rates(comp, g, float(eta), step)
            self._track_margins(gamma, g, float(eta), step)
        return metrics

    def _track_margins(self, gamma: Tensor, g: Tensor, eta: float, step: int) -> None:
        """Record Lemma 4.4's margin growth from each member's boundary step: gamma_min and its predicted log-factor.

        Lemma 4.4 (item 2): gamma_min^(t+1) >= (1 + 2 eta tau (1 - o(1)) g_max) gamma_min^(t), with g_max the
        largest |l'| over the four clusters (the weakest cluster's); recorded as (step, gamma_min,
        log(1 + 2 eta tau g_max)), eta the first layer's rate of the next update. gamma, g: (S, 4).
        """
        gamma_min, g_max = gamma.min(dim=1).values.tolist(), g.max(dim=1).values.tolist()
        for s, members_set in enumerate(self.heavy_sets):
            if members_set is not None:
                factor = math.log1p(2.0 * eta * TAU * float(g_max[s]))
                self.margin_tracks[s].append((step, float(gamma_min[s]), factor))

    def _track_rates(self, comp: dict[str, Tensor], g: Tensor, eta: float, step: int) -> None:
        """Record Section 4.1.1's predicted log-rate of ||w_sig|| on each member's S: eta tau |l'(mu)|.

        Item 1 of Section 4.1.1: -w_sig . grad ~ |a_w l'(mu)| tau with tau = sqrt(2)/4, and |a_w| ~ ||w|| on S,
        so a neuron of S grows by the factor 1 + eta tau |l'(mu)| a step, mu its cluster; the rate recorded is
        the mean over S of eta tau |l'| at each neuron's cluster (g: (S, 4), in CLUSTERS' order), eta the
        first layer's rate of the next update.
        """
        for s, members_set in enumerate(self.heavy_sets):
            if members_set is None:
                continue
            in_s = torch.tensor(members_set, device=g.device)  # (p,)
            if not bool(in_s.any()):
                continue
            served = g[s][comp["cluster"][s][in_s]]  # (|S|,): |l'| at each neuron's cluster
            self.rate_tracks[s].append((step, eta * TAU * float(served.to(torch.float64).mean())))

    def _track_heavy_sets(self, comp: dict[str, Tensor], step: int) -> dict[str, Tensor]:
        """Record, for every member with a heavy set S, mean ||w_sig|| on S and the mass share outside S."""
        sig, mass = [], []
        for s, members_set in enumerate(self.heavy_sets):
            if members_set is None:
                continue
            in_s = torch.tensor(members_set, device=comp["sig"].device)  # (p,)
            squared = comp["norm"][s].to(torch.float64) ** 2  # (p,): Definition 4.2's mass ||w||^2
            heavy_sig = float(comp["sig"][s][in_s].to(torch.float64).mean()) if bool(in_s.any()) else float("nan")
            outside = float(squared[~in_s].sum() / squared.sum().clamp_min(1e-300))
            self.heavy_tracks[s].append((step, heavy_sig, outside))
            sig.append(heavy_sig)
            mass.append(outside)
        if not sig:
            return {}
        return {
            "phase/heavy_w_sig_mean": torch.tensor(sum(sig) / len(sig), dtype=torch.float64),
            "phase/outside_mass_frac": torch.tensor(sum(mass) / len(mass), dtype=torch.float64),
        }

    def _histograms(self, trainer: pl.Trainer, comp: dict[str, Tensor], a: Tensor, step: int) -> None:
        """TensorBoard histograms over all neurons of a_j and of ||w_sig|| / ||w||."""
        for logger in trainer.loggers:
            experiment = getattr(logger, "experiment", None)
            if hasattr(experiment, "add_histogram"):
                experiment.add_histogram("phase/a", a.detach().flatten().cpu(), global_step=step)
                ratio = comp["sig"] / comp["norm"].clamp_min(1e-30)
                experiment.add_histogram("phase/sig_over_norm", ratio.detach().flatten().cpu(), global_step=step)

    def draw_neurons(self, trainer: pl.Trainer, w: Tensor, a: Tensor, mu_1: Tensor, mu_2: Tensor, step: int) -> None:
        r"""Picture one member's neurons in the signal plane (Glasgow's two phases, Section 4).

        Left: each neuron's projection (w . mu_1 / ||mu_1||, w . mu_2 / ||mu_2||) on
        span(mu_1, mu_2), red where a_j > 0 (the neurons that serve the label +1 clusters
        +-mu_1), blue where a_j < 0. Right: ||w_sig|| against ||w_opp|| + ||w_perp||
        (:func:`neuron_components`), with the signal-heavy line. During signal finding the
        cloud sits near the origin on the left and below the line on the right; in the
        signal-heavy phase the red neurons stretch along the mu_1 axis, the blue along
        mu_2, and they cross the line.

        **Scale.** The neurons grow by orders of magnitude over a run (Glasgow's norms from
        theta = 1/log d upwards), so one shared scale would shrink the early pictures to a
        dot. Each picture is scaled to its own neurons instead, and says so: its title
        gives the axes' reach and its ratio to the first picture's.

        Args:
            trainer: Its loggers receive the image ``phase/neurons``; its folder the PNG.
            w: One member's first-layer weights (p, d).
            a: Its output weights (p,).
            mu_1: (d,), the label +1 cluster direction.
            mu_2: (d,), the label -1 cluster direction.
            step: The update step drawn.
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ModuleNotFoundError:  # a dependency of featlearn; pictures are skipped if it was removed
            return
        from featlearn.callbacks.pictures import publish_figure

        comp = neuron_components(w.unsqueeze(0), a.unsqueeze(0), mu_1, mu_2)
        c_1 = (w @ (mu_1 / mu_1.norm())).cpu().numpy()
        c_2 = (w @ (mu_2 / mu_2.norm())).cpu().numpy()
        colours = ["tab:red" if v >= 0 else "tab:blue" for v in a.tolist()]
        figure, (left, right) = plt.subplots(1, 2, figsize=(9, 4.2))
        reach = max(float(abs(c_1).max()), float(abs(c_2).max()), 1e-12) * 1.1
        left.plot([-reach, reach], [0, 0], color="0.8", lw=1, zorder=0)
        left.plot([0, 0], [-reach, reach], color="0.8", lw=1, zorder=0)
        left.scatter(c_1, c_2, s=8, c=colours)
        handles = [
            plt.Line2D([], [], marker="o", color=c, linestyle="", markersize=5) for c in ("tab:red", "tab:blue")
        ]
        left.legend(handles, ["a > 0: serves y = +1 (+-mu_1)", "a < 0: serves y = -1 (+-mu_2)"], fontsize=7,
                    loc="upper left")
        self._first_reach = self._first_reach or reach
        left.set_xlim(-reach, reach)
        left.set_ylim(-reach, reach)
        left.set_aspect("equal")
        left.set_xlabel("w . mu_1 / |mu_1|   (red: a > 0)")
        left.set_ylabel("w . mu_2 / |mu_2|   (blue: a < 0)")
        left.set_title(
            f"neurons in the signal plane, step {step}\naxes to +-{reach:.3g} "
            f"({reach / self._first_reach:.3g}x the first picture's)",
            fontsize=9,
        )
        sig = comp["sig"][0].cpu().numpy()
        rest = (comp["opp"][0] + comp["perp"][0]).cpu().numpy()
        right.scatter(rest, sig, s=8, c=colours)
        top = max(float(rest.max()), float(sig.max()), 1e-12) * 1.1
        right.plot([0, top], [0, self.signal_heavy_ratio * top], "k--", lw=1, label="signal-heavy line")
        right.set_xlim(0, top)
        right.set_ylim(0, top)
        right.set_xlabel("|w_opp| + |w_perp|")
        right.set_ylabel("|w_sig|")
        right.set_title("signal against the rest")
        right.legend(loc="upper left")
        figure.tight_layout()
        publish_figure(trainer, "phase/neurons", figure, step=step, filename=f"phase_neurons_step{step:06d}.png")
        self.pictured_steps.append(step)

    def member_results(self) -> dict[str, list]:
        """Per member: the phase steps, ``final_gamma_min`` and Remark 4.3's growth evidence.

        ``boundary_step`` and ``margin_step`` are None where not reached; ``final_gamma_min``
        is gamma_min at the last cadence step (the run's last step). ``heavy_growth`` and
        ``outside_mass_change`` (see the class) are None where the signal-heavy phase has
        fewer than three cadence steps. ``off_signal_sq_at_boundary`` is Lemma 4.1's
        E ||w_perp + w_opp||^2 over the neurons at the boundary step (the lemma: <= theta);
        ``gamma_ratio_at_margin`` (gamma_max / gamma_min) and ``balance_at_margin`` (mean
        |a_w| / ||w||) are read at the margin step; each None where the step was not reached.
        """
        growth, change = [], []
        for s, track in enumerate(self.heavy_tracks):
            end = self.margin_steps[s] if s < len(self.margin_steps) else None
            window = [point for point in track if end is None or point[0] <= end]
            growth.append(growth_evidence([t for t, _, _ in window], [g for _, g, _ in window]))
            change.append(window[-1][2] - window[0][2] if len(window) >= 3 else None)
        def stat(records: list[dict | None], key: str) -> list[float | None]:
            return [None if r is None else r.get(key) for r in records]

        return {
            "boundary_step": list(self.boundary_steps),
            "margin_step": list(self.margin_steps),
            "final_gamma_min": list(self.last_gamma_min),
            "heavy_growth": growth,
            "outside_mass_change": change,
            "off_signal_sq_at_boundary": stat(self.boundary_stats, "off_signal_sq"),
            "test_loss_at_boundary": stat(self.boundary_stats, "test_loss"),
            "gamma_ratio_at_margin": stat(self.margin_stats, "gamma_ratio"),
            "balance_at_margin": stat(self.margin_stats, "balance"),
            "growth_rate_ratio": [self._rate_ratio(s) for s in range(len(self.heavy_tracks))],
            "margin_rate_ratio": [self._margin_ratio(s) for s in range(len(self.margin_tracks))],
            "linear_rate_ratio": [self._rate_ratio(s, linear=True) for s in range(len(self.heavy_tracks))],
        }

    def _margin_ratio(self, s: int) -> float | None:
        """Member s's log-growth of gamma_min over Lemma 4.4's predicted sum of log(1 + 2 eta tau g_max).

        The window runs from the first step after the boundary with gamma_min > 0 (a log needs a positive
        margin) to the margin step (or the run's end); the prediction sums the recorded log-factors over the
        steps between (a trapezoid over the cadence). Lemma 4.4's bound is a ratio of at least 1 - o(1).
        None with fewer than three cadence steps in the window.
        """
        end = self.margin_steps[s] if s < len(self.margin_steps) else None
        recorded = self.margin_tracks[s] if s < len(self.margin_tracks) else []
        track = [p for p in recorded if end is None or p[0] <= end]
        start = next((i for i, p in enumerate(track) if p[1] > 0), None)
        track = [] if start is None else track[start:]
        if len(track) < 3:
            return None
        predicted = sum((t2 - t1) * (r1 + r2) / 2 for (t1, _, r1), (t2, _, r2) in zip(track, track[1:], strict=False))
        return math.log(track[-1][1] / track[0][1]) / predicted if predicted > 0 else None

    def _rate_ratio(self, s: int, linear: bool = False) -> float | None:
        """Member s's measured log-growth of ||w_sig|| on S over its window, over the predicted sum of eta tau |l'|.

        The window runs from the boundary step to the margin step (or the run's end); the prediction is the
        trapezoid sum of the recorded rates over the same steps. 1: Section 4.1.1's exponential rate; a linear
        growth (Remark 4.3's frozen second layer) falls below it as ||w_sig|| grows. With ``linear``, the
        growth itself, ||w_sig|| at the end minus at the start, over the same sum: 1 for Remark 4.3's linear
        rate tau |l'(mu)| a step with |a_w| = 1. None with fewer than three cadence steps in the window.
        """
        end = self.margin_steps[s] if s < len(self.margin_steps) else None
        track = [p for p in self.heavy_tracks[s] if end is None or p[0] <= end]
        rates = [p for p in (self.rate_tracks[s] if s < len(self.rate_tracks) else []) if end is None or p[0] <= end]
        if len(track) < 3 or len(rates) < 3 or not (track[0][1] > 0 and track[-1][1] > 0):
            return None
        predicted = sum((t2 - t1) * (r1 + r2) / 2 for (t1, r1), (t2, r2) in zip(rates, rates[1:], strict=False))
        measured = track[-1][1] - track[0][1] if linear else math.log(track[-1][1] / track[0][1])
        return measured / predicted if predicted > 0 else None

    def summary(self) -> str:
        """A short text summary of the run's phases (also printed at the end of fit)."""
        last = self.history[-1] if self.history else {}
        steps = ", ".join("not reached" if b is None else str(b) for b in self.boundary_steps)
        lines = [
            f"signal-finding -> signal-heavy boundary step (per member): {steps}",
            f"  rule: every cluster served by >= {self.boundary_fraction:g} of the neurons with "
            f"||w_sig|| >= {self.signal_heavy_ratio:g} (||w_opp|| + ||w_perp||)",
            "end of the signal-heavy phase, gamma_min >= {:g} (per member): {}".format(
                self.margin_target, ", ".join("not reached" if m is None else str(m) for m in self.margin_steps)
            ),
        ]
        if last:
            parts = [
                f"{label} {last[key]:{fmt}}"
                for key, label, fmt in (
                    ("phase/signal_heavy_frac", "signal-heavy fraction", ".3f"),  # absent without neurons (NTK)
                    ("phase/gamma_min", "gamma_min", ".3f"),
                    ("phase/gamma_max", "gamma_max", ".3f"),
                    ("phase/test_loss", "test loss", ".4f"),
                    ("phase/test_error", "test error", ".4f"),
                )
                if key in last
            ]
            lines.append(f"at step {last['step']}: " + ", ".join(parts))
        return "\n".join(lines)

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        text = self.summary()
        rank_zero_info("\nXOR phase summary\n" + text)
        if trainer.is_global_zero:
            publish_text(trainer, "phase/summary", text, trainer.global_step)
