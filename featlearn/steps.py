"""Several update steps in one Lightning batch, and the plan that says where a batch must end.

Lightning's per-batch machinery (hooks, fetcher, optimizer wrappers) costs about a
millisecond, as much as a small network's whole update. A data model with
``updates_per_batch: K`` hands Lightning up to K consecutive steps' batches at once
(a :class:`StepChunk`) and the learner makes one update per element, so
``trainer.global_step`` still counts updates.

A chunk must end wherever something outside the learner looks at the run: a
diagnostic's step, a checkpoint's step, ``max_steps``. Those steps are gathered once,
when the stream starts, into a :class:`StepPlan` from the trainer's public state: the
callbacks that implement :class:`StepObserver` (every featlearn diagnostic and
:class:`featlearn.callbacks.StepCheckpoint`) and ``trainer.max_steps``. The plan
refuses what it cannot see: a plain ``ModelCheckpoint`` (its step cadence is not
public in Lightning) and Lightning's validation interval (which counts batches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint


class StepChunk(list):
    """The batches (x, y) of consecutive update steps t, t+1, ..., carried as one Lightning batch."""


@runtime_checkable
class StepObserver(Protocol):
    """Anything that looks at the run after chosen update steps (a callback)."""

    def is_due(self, step: int) -> bool:
        """Whether it looks after ``step`` updates."""


@dataclass(frozen=True)
class StepPlan:
    """How many consecutive updates each Lightning batch carries.

    Args:
        updates_per_batch: K, the most updates per batch.
        max_steps: The last update step (None: unbounded).
        observers: ``is_due(step)`` of everything that looks at the run after a step.
    """

    updates_per_batch: int = 1
    max_steps: int | None = None
    observers: tuple[Callable[[int], bool], ...] = ()

    def chunk_length(self, step: int) -> int:
        """How many consecutive updates, from ``step`` on, the next batch carries.

        Up to K, ending at ``max_steps`` and at the first step an observer is due, so
        every observer sees exactly the steps it would see with one update per batch.
        """
        if self.updates_per_batch == 1:
            return 1
        last = step + self.updates_per_batch - 1
        if self.max_steps is not None:
            last = min(last, self.max_steps)
        for s in range(step, last):
            if any(is_due(s) for is_due in self.observers):
                return s - step + 1
        return max(last - step + 1, 1)

    @classmethod
    def from_trainer(cls, trainer: pl.Trainer | None, updates_per_batch: int) -> StepPlan:
        """Gather the plan from the trainer's callbacks and ``max_steps``.

        Raises:
            ValueError: With K > 1, if Lightning validates during fit (its interval counts
                batches, not steps) or a ``ModelCheckpoint`` does not state its steps.
        """
        if trainer is None:
            return cls(updates_per_batch)
        max_steps = trainer.max_steps if trainer.max_steps is not None and trainer.max_steps > 0 else None
        if updates_per_batch == 1:
            return cls(1, max_steps)
        if trainer.limit_val_batches != 0:
            raise ValueError(
                f"data.updates_per_batch = {updates_per_batch} puts several updates in one Lightning batch, "
                f"so Lightning's validation interval would count chunks, not steps. Set "
                f"trainer.limit_val_batches: 0 (featlearn's diagnostics evaluate held-out data at exact steps), "
                f"or data.updates_per_batch: 1."
            )
        blind = [
            type(cb).__name__
            for cb in trainer.callbacks
            if isinstance(cb, ModelCheckpoint) and not isinstance(cb, StepObserver)
        ]
        if blind:
            raise ValueError(
                f"data.updates_per_batch = {updates_per_batch} needs every checkpoint callback to state its steps, "
                f"but trainer.callbacks has {blind}. Use featlearn's StepCheckpoint (class_path: StepCheckpoint, "
                f"same arguments as ModelCheckpoint), set trainer.enable_checkpointing: false if the checkpoint "
                f"is Lightning's default one, or data.updates_per_batch: 1."
            )
        observers = tuple(cb.is_due for cb in trainer.callbacks if isinstance(cb, StepObserver))
        return cls(updates_per_batch, max_steps, observers)
