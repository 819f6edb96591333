r"""Hidden progress on a sparse parity (Barak et al. 2022): the weights move toward S while the error stays flat."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import publish_text
from featlearn.contracts import EvaluationData, GradientLearner, ProbeData, require
from featlearn.validation import check_int, check_number


class ParityProgress(DiagnosticCallback):
    r"""Logs the hidden progress of a network learning a sparse parity under ``parity/``.

    Barak et al. (2022) find that loss and error sit at chance until an abrupt transition,
    while SGD makes steady progress visible only in the weights. At each cadence step, from
    the first layer w (S, p, d), its value w_0 at the run's start and the data model's
    support directions U (k, d) (``GroundTruth.support``; e_i for i in the hidden set S):

    * ``parity/w_change_l1``, ``parity/w_change_l2``, ``parity/w_change_linf``:
      ||w_t - w_0||_1 (the sum of |entries|), ||w_t - w_0||_F and ||w_t - w_0||_inf (the
      largest |entry|, the paper's progress measure rho of Appendix C.3) over the whole first
      layer, averaged over members.
    * ``parity/support_share``: the share of the first layer's squared mass on the support,
      :math:`\sum_j \|U w_j\|^2 / \sum_j \|w_j\|^2` (k/d in expectation for an isotropic w;
      it rotates with the basis, so a rotated parity reads the same).
    * ``parity/test_error``, ``parity/test_loss``: on the data model's test set.

    :meth:`member_results` gives each member's ``transition_step``: the first cadence step
    from which the test error stays at or below ``error_threshold`` (None where it never
    settles there), and ``support_share_gain``: the support share at the last cadence step
    at which the test error was still at chance (at least ``chance_error``) over its value at
    step 0, the hidden progress made while the error showed none (None where the error never
    was at chance after step 0), and ``plateau_end_step``: that last step at chance (the
    plateau's end; None likewise).

    **The Fourier gap** (Section 4.1: "At each relevant coordinate (i in S), the population
    gradient is the order-(k-1) Fourier coefficient ... irrelevant ... order-(k+1)"). With
    ``gradient_samples`` M > 0, the gradient G_s (p, d) of each member's mean loss on M fresh
    samples drawn once (the data model's probe set) is read from the learner
    (:class:`~featlearn.contracts.GradientLearner`), and

    .. math::  \mathrm{gap}_s = \sqrt{\frac{\lVert G_s U^\top \rVert_F^2 / k}
               {\lVert G_s (I - U^\top U) \rVert_F^2 / (d - k)}} ,

    the root-mean-square gradient per direction of S over the same off S, is logged as
    ``parity/gradient_gap`` (1 where the gradient does not prefer S; the sampling noise of M
    samples sets a floor off S, so labels of pure noise read about 1). :meth:`member_results`
    adds ``gradient_gap_start`` (step 0) and ``gradient_gap_at_plateau`` (at the plateau's end).

    **Stopping once learned.** With ``stop_after_settled`` N > 0 the run stops (Lightning's
    public ``trainer.should_stop``) at the N-th consecutive cadence step at which every
    member's test error is at or below ``error_threshold``: a sweep over n need not run each
    setting for its slowest seed's worst case. A member's transition step is then the first
    of its final run of low errors, as without stopping; a relapse after the stop is not seen.

    Args:
        cadence: ``"log"`` or every N steps (see :class:`DiagnosticCallback`).
        points_per_decade: Density of the log-spaced cadence.
        error_threshold: The test error that ends the transition, in (0, 0.5).
        chance_error: The test error read as chance, in (error_threshold, 0.5].
        stop_after_settled: N; stop the run at the N-th consecutive cadence step at which
            every member is at or below ``error_threshold`` (0, the default: never stop).
        gradient_samples: M, the samples of the Fourier gap's gradient (0, the default: not measured).
    """

    data_requirement = EvaluationData
    state_attributes = ("history", "initial_weights", "tracks", "gap_tracks")
    result_tags = ("parity/test_error", "parity/support_share", "parity/w_change_l1")

    def __init__(
        self,
        cadence: str | int = "log",
        points_per_decade: int = 20,
        error_threshold: float = 0.05,
        chance_error: float = 0.45,
        stop_after_settled: int = 0,
        gradient_samples: int = 0,
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        check_number("ParityProgress.error_threshold", error_threshold, 0.0, 0.5, strict=True)
        check_number("ParityProgress.chance_error", chance_error, error_threshold, 0.5, strict=True)
        self.error_threshold = error_threshold
        self.chance_error = chance_error
        self.stop_after_settled = check_int("ParityProgress.stop_after_settled", stop_after_settled, 0)
        self.gradient_samples = check_int("ParityProgress.gradient_samples", gradient_samples, 0)
        #: Each member's (step, Fourier gap) at every cadence step, with ``gradient_samples``.
        self.gap_tracks: list[list[tuple[int, float]]] = []
        self._probe: tuple[Tensor, Tensor] | None = None  # the gradient's M samples, drawn once
        #: The first layer at the run's start, (S, p, d) on the CPU; None before.
        self.initial_weights: Tensor | None = None
        #: Each member's (step, test error, support share) at every cadence step.
        self.tracks: list[list[tuple[int, float, float]]] = []

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        self.data_model.ground_truth().require(("support",), "ParityProgress", type(self.data_model).__name__)
        w = pl_module.first_layer_features()
        if w is None:
            raise ValueError(
                f"ParityProgress reads the learned first layer, which {type(pl_module).__name__} does not have "
                "(first_layer_features() is None): remove ParityProgress from this run's callbacks."
            )
        if self.initial_weights is None:  # a resumed run keeps the start it measured from
            self.initial_weights = w.detach().to("cpu", torch.float64).clone()
        if len(self.tracks) != w.shape[0]:
            self.tracks = [[] for _ in range(w.shape[0])]
        if self.gradient_samples:
            if not isinstance(pl_module, GradientLearner):
                raise ValueError(
                    f"ParityProgress.gradient_samples reads the loss's gradient on the first layer, which "
                    f"{type(pl_module).__name__} does not give: set gradient_samples to 0."
                )
            require(self.data_model, ProbeData, "ParityProgress.gradient_samples")
            if len(self.gap_tracks) != w.shape[0]:
                self.gap_tracks = [[] for _ in range(w.shape[0])]
        if not self.data_model.set_size("test"):
            raise ValueError(
                "ParityProgress reads the test error, and the data model has no test set: set data.init_args.test_size."
            )

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        w = pl_module.first_layer_features().to(torch.float64)  # (S, p, d)
        delta = w - self.initial_weights.to(w.device)  # (S, p, d)
        support = self.data_model.ground_truth().support.to(w.device, torch.float64)  # (k, d)
        on_support = (w @ support.T).pow(2).sum(dim=(1, 2))  # (S,)
        share = on_support / w.pow(2).sum(dim=(1, 2)).clamp_min(1e-300)  # (S,)
        data = self.data_model
        loss, error = pl_module.evaluate_dataset(*data.eval_set("test"), chunk=data.eval_batch_size)  # (S,), (S,)
        for s, track in enumerate(self.tracks):
            track.append((step, float(error[s]), float(share[s])))
        gap = self._gradient_gap(pl_module, support) if self.gradient_samples else None
        if gap is not None:
            for s, track in enumerate(self.gap_tracks):
                track.append((step, float(gap[s])))
        if self.stop_after_settled and self._settled_everywhere():
            trainer.should_stop = True  # every member learned: the rest of the run would measure nothing new
        return {
            "parity/w_change_l1": delta.abs().sum(dim=(1, 2)).mean(),
            "parity/w_change_l2": delta.pow(2).sum(dim=(1, 2)).sqrt().mean(),
            "parity/w_change_linf": delta.abs().amax(dim=(1, 2)).mean(),
            "parity/support_share": share.mean(),
            "parity/test_error": error.to(torch.float64).mean(),
            "parity/test_loss": loss.to(torch.float64).mean(),
            **({} if gap is None else {"parity/gradient_gap": gap.mean()}),
        }

    def _gradient_gap(self, pl_module: pl.LightningModule, support: Tensor) -> Tensor | None:
        """Each member's Fourier gap (S,) on the probe samples (see the class); None for a learner without neurons."""
        if self._probe is None:
            self._probe = self.data_model.probe_set(self.gradient_samples)
        x, y = self._probe
        grad = pl_module.first_layer_gradient(x, y)
        if grad is None:
            return None
        grad = grad.to(torch.float64)  # (S, p, d)
        k, d = support.shape
        on = (grad @ support.T).pow(2).sum(dim=(1, 2))  # (S,): the squared gradient along S's k directions
        off = (grad.pow(2).sum(dim=(1, 2)) - on).clamp_min(1e-300)  # along the other d - k
        return ((on / k) / (off / (d - k))).sqrt()  # (S,)

    def _settled_everywhere(self) -> bool:
        """Whether every member's last ``stop_after_settled`` cadence errors are at or below the threshold."""
        n = self.stop_after_settled
        low = self.error_threshold
        return all(len(track) >= n and all(error <= low for _, error, _ in track[-n:]) for track in self.tracks)

    def member_results(self) -> dict[str, list]:
        """Per member: ``transition_step``, ``support_share_gain``, ``plateau_end_step``, the gaps (see the class)."""
        steps, gains, plateau_ends = [], [], []
        for track in self.tracks:
            settled = None
            for step, error, _ in reversed(track):  # the earliest step from which every later error is low
                if error > self.error_threshold:
                    break
                settled = step
            steps.append(settled)
            at_chance = [(step, share) for step, error, share in track if step > 0 and error >= self.chance_error]
            start = track[0][2] if track and track[0][0] == 0 else None
            gains.append(at_chance[-1][1] / start if at_chance and start else None)
            plateau_ends.append(at_chance[-1][0] if at_chance else None)
        results = {"transition_step": steps, "support_share_gain": gains, "plateau_end_step": plateau_ends}
        if self.gradient_samples:
            gaps = [dict(track) for track in self.gap_tracks]
            results["gradient_gap_start"] = [g.get(0) for g in gaps]
            results["gradient_gap_at_plateau"] = [g.get(t) for g, t in zip(gaps, plateau_ends, strict=True)]
        return results

    def summary(self) -> str:
        """One line: each member's transition step and hidden-progress gain."""
        results = self.member_results()
        return "sparse parity: transition step (per member) {}, support share gain at chance {}".format(
            results["transition_step"], [None if g is None else round(g, 2) for g in results["support_share_gain"]]
        )

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        text = self.summary()
        rank_zero_info("\nSparse parity summary\n" + text)
        if trainer.is_global_zero:
            publish_text(trainer, "parity/summary", text, trainer.global_step)
