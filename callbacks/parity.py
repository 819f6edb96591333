r"""Hidden progress on a sparse parity (Barak et al. 2022): the weights move toward S while the error stays flat."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import publish_text
from featlearn.contracts import EvaluationData
from featlearn.validation import check_number


class ParityProgress(DiagnosticCallback):
    r"""Logs the hidden progress of a network learning a sparse parity under ``parity/``.

    Barak et al. (2022) find that loss and error sit at chance until an abrupt transition,
    while SGD makes steady progress visible only in the weights. At each cadence step, from
    the first layer w (S, p, d), its value w_0 at the run's start and the data model's
    support directions U (k, d) (``GroundTruth.support``; e_i for i in the hidden set S):

    * ``parity/w_change_l1``, ``parity/w_change_l2``: ||w_t - w_0||_1 (the sum of |entries|)
      and ||w_t - w_0||_F over the whole first layer, averaged over members.
    * ``parity/support_share``: the share of the first layer's squared mass on the support,
      :math:`\sum_j \|U w_j\|^2 / \sum_j \|w_j\|^2` (k/d in expectation for an isotropic w;
      it rotates with the basis, so a rotated parity reads the same).
    * ``parity/test_error``, ``parity/test_loss``: on the data model's test set.

    :meth:`member_results` gives each member's ``transition_step``: the first cadence step
    from which the test error stays at or below ``error_threshold`` (None where it never
    settles there), and ``support_share_gain``: the support share at the last cadence step
    at which the test error was still at chance (at least ``chance_error``) over its value at
    step 0, the hidden progress made while the error showed none (None where the error never
    was at chance after step 0).

    Args:
        cadence: ``"log"`` or every N steps (see :class:`DiagnosticCallback`).
        points_per_decade: Density of the log-spaced cadence.
        error_threshold: The test error that ends the transition, in (0, 0.5).
        chance_error: The test error read as chance, in (error_threshold, 0.5].
    """

    data_requirement = EvaluationData
    state_attributes = ("history", "initial_weights", "tracks")
    result_tags = ("parity/test_error", "parity/support_share", "parity/w_change_l1")

    def __init__(
        self,
        cadence: str | int = "log",
        points_per_decade: int = 20,
        error_threshold: float = 0.05,
        chance_error: float = 0.45,
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        check_number("ParityProgress.error_threshold", error_threshold, 0.0, 0.5, strict=True)
        check_number("ParityProgress.chance_error", chance_error, error_threshold, 0.5, strict=True)
        self.error_threshold = error_threshold
        self.chance_error = chance_error
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
        return {
            "parity/w_change_l1": delta.abs().sum(dim=(1, 2)).mean(),
            "parity/w_change_l2": delta.pow(2).sum(dim=(1, 2)).sqrt().mean(),
            "parity/support_share": share.mean(),
            "parity/test_error": error.to(torch.float64).mean(),
            "parity/test_loss": loss.to(torch.float64).mean(),
        }

    def member_results(self) -> dict[str, list]:
        """Per member: ``transition_step`` and ``support_share_gain`` (see the class)."""
        steps, gains = [], []
        for track in self.tracks:
            settled = None
            for step, error, _ in reversed(track):  # the earliest step from which every later error is low
                if error > self.error_threshold:
                    break
                settled = step
            steps.append(settled)
            at_chance = [share for step, error, share in track if step > 0 and error >= self.chance_error]
            start = track[0][2] if track and track[0][0] == 0 else None
            gains.append(at_chance[-1] / start if at_chance and start else None)
        return {"transition_step": steps, "support_share_gain": gains}

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
