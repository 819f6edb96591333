r"""What a learner keeps of its updates: the divergence check, the logged member losses, the train curves.

:class:`UpdateRecord` is the part of :class:`~featlearn.models.base.ScheduledSGDModule`
that runs after each SGD update: it hands the members' losses (S,) to the
:class:`~featlearn.models.sgd.DivergenceGuard`, keeps them on logging steps for observers,
and writes the ``train/*`` and ``sched/*`` curves on Lightning's cadence.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytorch_lightning as pl
from torch import Tensor

from featlearn.models.sgd import DivergenceGuard, member_metrics
from featlearn.schedules import Schedule


def world_size(module: pl.LightningModule) -> int:
    """The number of processes training ``module``; 1 when no Trainer holds it (a learner used directly)."""
    try:
        return module.trainer.world_size
    except RuntimeError:
        return 1


def across_processes(module: pl.LightningModule, values: Tensor) -> Tensor:
    """The mean of ``values`` over the processes of a distributed run (Lightning's strategy reduce)."""
    if world_size(module) == 1:
        return values
    return module.trainer.strategy.reduce(values, reduce_op="mean")


class UpdateRecord:
    """The record of a learner's updates since its fit started.

    Args:
        streams: K, the data streams; member s belongs to grid point s // K.
        grid_points: G. With G = 1 a NaN or infinite loss stops the run; with a grid the
            diverged members are recorded and the others train on.
        max_members_logged: Per-member curves are written when S is at most this.
    """

    def __init__(self, streams: int, grid_points: int, max_members_logged: int) -> None:
        self.streams = streams
        self.grid_points = grid_points
        self.max_members_logged = max_members_logged
        #: The divergence check over the updates since the last logging step.
        self.divergence = DivergenceGuard()
        #: Grid members whose loss became NaN or infinite: member -> the first such update step.
        self.diverged_members: dict[int, int] = {}
        #: Per-member training losses (S,) at step 1 and at each logging step, on the CPU.
        self.logged_member_losses: dict[int, Tensor] = {}
        #: Steps logged besides Lightning's cadence: the first step of every schedule segment.
        self.singled_out_steps: set[int] = set()

    def start(self, schedules: Iterable[Schedule]) -> None:
        """At fit start: forget losses an interrupted fit left waiting; log where each schedule segment starts.

        Shi et al.'s steps 1, 2 and 3, where the process changes, are then on the curves.
        """
        self.divergence.clear()
        self.singled_out_steps = {segment.start for schedule in schedules for segment in schedule.segments}

    def add(self, learner, losses: Tensor, step: int, batch_size: int) -> None:
        """Keep update ``step``'s member losses (S,) for the divergence check; log on Lightning's cadence.

        ``batch_size`` is this process's; with W processes the logged losses are the whole batch's.
        """
        full = self.divergence.add(losses, step)
        log_step = step % learner.trainer.log_every_n_steps == 0 or step in self.singled_out_steps
        if log_step or full:
            self.check(learner)
        if log_step or step == 1:
            losses = across_processes(learner, losses)
            self.logged_member_losses[step] = losses.detach().float().cpu()
        if log_step:
            self._log(learner, losses, step, batch_size * world_size(learner))

    def check(self, learner) -> None:
        """Raise at the first waiting update with a NaN or infinite loss (G = 1), or record the diverged members.

        Raises:
            FloatingPointError: With one grid point, naming the step and the hyperparameters in
                effect then (``learner.scheduled_values(step)``).
        """
        reduce = lambda values: across_processes(learner, values)  # noqa: E731
        if self.grid_points == 1:
            describe = lambda step: ", ".join(f"{k}={v:g}" for k, v in learner.scheduled_values(step).items())  # noqa: E731
            self.divergence.check(reduce, describe)
            return
        for member, step in self.divergence.diverged_members(reduce).items():
            self.diverged_members.setdefault(member, step)

    @property
    def diverged_points(self) -> dict[int, int]:
        """Grid points with a diverged member: point -> the first step one of its members diverged."""
        points: dict[int, int] = {}
        for member, step in self.diverged_members.items():
            point = member // self.streams
            points[point] = min(step, points.get(point, step))
        return points

    def _log(self, learner, losses: Tensor, step: int, batch_size: int) -> None:
        # One self.log (progress bar, callback_metrics); the rest goes straight to the
        # loggers at step t, since each self.log call costs about a millisecond.
        mean = losses.mean()
        learner.log(
            "train/loss", mean, on_step=True, on_epoch=False, prog_bar=True, logger=False, batch_size=batch_size
        )
        metrics = {"train/loss": mean}
        metrics.update(member_metrics("train", "loss", losses, self.max_members_logged))
        metrics.update({f"sched/{k}": v for k, v in learner.scheduled_values(step).items()})
        metrics["sched/batch_size"] = batch_size  # what the data model drew for this step
        if learner.trainer.is_global_zero:
            metrics = {k: float(v) for k, v in metrics.items()}
            for logger in learner.loggers:
                logger.log_metrics(metrics, step=step)
