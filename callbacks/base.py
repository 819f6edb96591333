"""Base class of diagnostics: observe the network at chosen steps and log what they see."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import pytorch_lightning as pl
import torch

from featlearn.contracts import require
from featlearn.validation import check_int, is_int


def log_spaced_steps(max_step: int, points_per_decade: int) -> list[int]:
    """Steps 0, 1, 2, ... spaced evenly in log(step), up to and including ``max_step``.

    Args:
        max_step: The last step (included).
        points_per_decade: How many points per factor of 10 (fewer at small steps,
            where integer rounding merges them).

    Returns:
        Sorted distinct steps: 0 (initialisation), then round(10^(k / points_per_decade)).
    """
    steps = {0, max_step}
    k = 0
    while True:
        step = round(10 ** (k / points_per_decade))
        if step > max_step:
            break
        steps.add(step)
        k += 1
    return sorted(s for s in steps if s <= max_step)


class DiagnosticCallback(pl.Callback, abc.ABC):
    """Computes :meth:`compute` at step 0 and on a cadence, and writes it to every logger.

    Metrics are written straight to the loggers at ``trainer.global_step`` (the
    number of updates done), so they land on their own cadence rather than
    Lightning's ``log_every_n_steps`` grid, and off-cadence steps cost nothing.
    Everything computed is also kept in :attr:`history` (a list of dicts with a
    ``step`` key).

    **The data model.** A diagnostic is handed the run's data model (:meth:`connect_data`,
    called by :class:`~featlearn.wiring.DataWiring` before the run starts) and reads it as
    :attr:`data_model`; one that needs a capability names it in :attr:`data_requirement`
    (a protocol of :mod:`featlearn.contracts`), checked then.

    Args:
        cadence: ``"log"`` (log-spaced steps, dense early where the dynamics are
            fast) or a positive integer N (every N steps). The last step is always
            included when ``trainer.max_steps`` is set.
        points_per_decade: Density of the log-spaced cadence.
    """

    #: What the diagnostic needs of the data model (a :mod:`featlearn.contracts` protocol); None: nothing.
    data_requirement: ClassVar[type | None] = None
    #: What it has seen, saved in checkpoints and restored on resume (so a resumed run's summary,
    #: curves and pictures equal an uninterrupted one's). A subclass adds its own.
    state_attributes: ClassVar[tuple[str, ...]] = ("history",)
    #: The settings that tell two instances of one diagnostic apart in a checkpoint.
    distinguishing_settings: ClassVar[tuple[str, ...]] = ("cadence",)
    #: The tags worth reading at the end of a run (``featlearn fit`` prints their last values).
    result_tags: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cadence: str | int = "log", points_per_decade: int = 20) -> None:
        super().__init__()
        name = type(self).__name__
        if not (cadence == "log" or (is_int(cadence) and cadence > 0)):
            raise ValueError(f"{name}.cadence must be 'log' or a positive integer number of steps, got {cadence!r}.")
        check_int(f"{name}.points_per_decade", points_per_decade, 1)
        self.cadence = cadence
        self.points_per_decade = points_per_decade
        self.history: list[dict[str, float]] = []
        self._steps: set[int] = set()
        #: The run's data model, handed over by :meth:`connect_data` (None before, or in a run without one).
        self.data_model: Any = None

    @property
    def state_key(self) -> str:
        """The checkpoint key of this instance: its class and :attr:`distinguishing_settings`."""
        settings = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.distinguishing_settings)
        return f"{type(self).__qualname__}{{{settings}}}"

    def state_dict(self) -> dict:
        """:attr:`state_attributes` by name, for the checkpoint."""
        return {name: getattr(self, name) for name in self.state_attributes}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore :attr:`state_attributes` from a checkpoint."""
        for name in self.state_attributes:
            if name in state_dict:
                setattr(self, name, state_dict[name])

    def results(self) -> dict[str, float]:
        """The last value of each of :attr:`result_tags` that the run logged."""
        found = {}
        for entry in reversed(self.history):
            for tag in self.result_tags:
                if tag in entry and tag not in found:
                    found[tag] = entry[tag]
        return {tag: found[tag] for tag in self.result_tags if tag in found}

    def member_results(self) -> dict[str, list]:
        """Per-member values a study reads at the end of a run (name -> one value per member); none here."""
        return {}

    def connect_data(self, data: Any) -> None:
        """Receive the run's data model; check :attr:`data_requirement` of it.

        Raises:
            TypeError: The data model lacks what the diagnostic reads (the message names it).
        """
        if self.data_requirement is not None:
            require(data, self.data_requirement, type(self).__name__)
        self.data_model = data

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        max_steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        if self.cadence == "log":
            self._steps = set(log_spaced_steps(max_steps or 10**9, self.points_per_decade))
        else:
            self._steps = set()
        if max_steps:
            self._steps.add(max_steps)

    def is_due(self, step: int) -> bool:
        """Whether the diagnostics run after ``step`` updates."""
        if self.cadence == "log":
            return step in self._steps
        return step % self.cadence == 0 or step in self._steps

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        if trainer.global_step == 0:
            self._run(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: D102
        if self.is_due(trainer.global_step):
            self._run(trainer, pl_module)

    @torch.no_grad()
    def _run(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        step = trainer.global_step
        metrics = {k: float(v) for k, v in self.compute(trainer, pl_module, step).items()}
        if not metrics:
            return
        self.history.append({"step": step, **metrics})
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=step)

    @abc.abstractmethod
    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:
        """The metrics to log after ``step`` updates, by tag."""
