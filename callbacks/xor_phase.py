r"""Phase diagnostics for the XOR problem (Glasgow 2023, Table 1 and Section 4)."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.validation import check_number, is_number

#: The four cluster directions, in the order used for margins and coverage.
CLUSTERS = ("+mu_1", "-mu_1", "+mu_2", "-mu_2")


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
    a (S, p) and the data model's mu_1, mu_2 (``ground_truth()``):

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

    The neurons are the learner's ``first_layer_features()`` and ``output_weights()``;
    for a learner without learned neurons (the NTK baseline) only the margins and the
    test metrics are logged. Metrics are averaged over ensemble members.

    Args:
        cadence: ``"log"`` or every N steps (see :class:`DiagnosticCallback`).
        points_per_decade: Density of the log-spaced cadence.
        signal_heavy_ratio: r in the signal-heavy test above (> 0).
        boundary_fraction: q in the phase-boundary rule, in (0, 0.25].
        quantiles: Quantiles of the per-neuron distributions to log, in [0, 1].
        evaluate_test: Also compute test loss and error at each cadence step.
    """

    def __init__(
        self,
        cadence: str | int = "log",
        points_per_decade: int = 20,
        signal_heavy_ratio: float = 1.0,
        boundary_fraction: float = 0.1,
        quantiles: tuple[float, ...] = (0.1, 0.5, 0.9),
        evaluate_test: bool = True,
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
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
        self.boundary_steps: list[int | None] = []

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        truth = trainer.datamodule.ground_truth() if trainer.datamodule is not None else {}
        if "mu_1" not in truth or "mu_2" not in truth:
            raise ValueError(
                f"XORPhaseDiagnostics needs a data model whose ground_truth() has 'mu_1' and "
                f"'mu_2' (such as BooleanXOR); {type(trainer.datamodule).__name__} gives "
                f"{sorted(truth)}. Remove the callback or use an XOR data model."
            )
        if len(self.boundary_steps) != pl_module.ensemble_size:
            self.boundary_steps = [None] * pl_module.ensemble_size

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
        truth = trainer.datamodule.ground_truth()
        w, a = pl_module.first_layer_features(), pl_module.output_weights()  # (S, p, d), (S, p) or None
        metrics: dict[str, Tensor] = {}
        coverage = None
        if w is not None and a is not None:
            mu_1, mu_2 = truth["mu_1"].to(w.device, w.dtype), truth["mu_2"].to(w.device, w.dtype)
            comp = neuron_components(w, a, mu_1, mu_2)
            for name in ("sig", "opp", "perp"):
                metrics.update(self._summary_stats(f"w_{name}", comp[name]))
            metrics.update(self._summary_stats("balance", a.abs() / comp["norm"].clamp_min(1e-30)))
            heavy = signal_heavy(comp, self.signal_heavy_ratio)  # (S, p)
            metrics["phase/signal_heavy_frac"] = heavy.to(torch.float64).mean()
            coverage = cluster_coverage(heavy, comp["cluster"])  # (S, 4)
            metrics["phase/coverage_min"] = coverage.min(dim=1).values.mean()

        device = pl_module.device
        mu_1, mu_2 = truth["mu_1"].to(device), truth["mu_2"].to(device)
        points, labels = cluster_points(mu_1, mu_2)
        gamma = labels * pl_module.scores(points)  # (S, 4)
        g = pl_module.margin_loss_derivative_abs(gamma)  # (S, 4)
        metrics["phase/gamma_min"] = gamma.min(dim=1).values.mean()
        metrics["phase/gamma_max"] = gamma.max(dim=1).values.mean()
        metrics["phase/g_min"] = g.min(dim=1).values.mean()
        metrics["phase/g_max"] = g.max(dim=1).values.mean()
        for k, name in enumerate(CLUSTERS):
            metrics[f"phase/gamma_{name}"] = gamma[:, k].mean()

        if self.evaluate_test and trainer.datamodule.test_size > 0:
            data = trainer.datamodule
            loss, error = pl_module.evaluate_dataset(*data.eval_set("test"), chunk=data.eval_batch_size)
            metrics["phase/test_loss"] = loss.mean()
            metrics["phase/test_error"] = error.mean()

        if coverage is None:  # no learned neurons (the NTK): no phase boundary to detect
            return metrics
        reached = coverage.min(dim=1).values >= self.boundary_fraction  # (S,)
        for s, hit in enumerate(reached.tolist()):
            if hit and self.boundary_steps[s] is None:
                self.boundary_steps[s] = step
                tag = "phase/boundary_step" if len(reached) == 1 else f"phase_members/boundary_step_{s}"
                metrics[tag] = torch.tensor(float(step))
        return metrics

    def summary(self) -> str:
        """A short text summary of the run's phases (also printed at the end of fit)."""
        last = self.history[-1] if self.history else {}
        steps = ", ".join("not reached" if b is None else str(b) for b in self.boundary_steps)
        lines = [
            f"signal-finding -> signal-heavy boundary step (per member): {steps}",
            f"  rule: every cluster served by >= {self.boundary_fraction:g} of the neurons with "
            f"||w_sig|| >= {self.signal_heavy_ratio:g} (||w_opp|| + ||w_perp||)",
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
        for logger in trainer.loggers if trainer.is_global_zero else []:
            experiment = getattr(logger, "experiment", None)
            if hasattr(experiment, "add_text"):
                experiment.add_text("phase/summary", text.replace("\n", "  \n"), global_step=trainer.global_step)
