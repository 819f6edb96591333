"""Ctrl-C during ``fit`` stops at the end of the update step and saves a checkpoint there.

Python's own Ctrl-C raises ``KeyboardInterrupt`` wherever the program is, possibly
between the two layers' updates of one step, so Lightning could only save a checkpoint
of a half-made step; without one, a resume went back to the last periodic checkpoint
and redid every step since. Here the first Ctrl-C of a training loop only asks to stop:
at the end of the step it is in (the end of a Lightning batch, the point where
``ModelCheckpoint`` saves) the run writes ``last.ckpt`` through the trainer's checkpoint
IO (``AtomicCheckpointIO``: written beside its target, then renamed), lets the step's
logging finish, and raises ``KeyboardInterrupt`` before the next step, which Lightning
handles as an interrupt. A Ctrl-C in the last step finds training complete. The command then
exits with status 130, the shell's convention for Ctrl-C (:mod:`featlearn.runner.errors`).
A second Ctrl-C stops at once, with no new checkpoint. SIGKILL cannot be caught: such a
run resumes from its last periodic checkpoint.

This is Lightning's ``OnExceptionCheckpoint`` made to wait for a step boundary, with the
run's own checkpoint folder (known only once the logger has its version) instead of a
folder fixed when the callback is built.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback, ModelCheckpoint


def interrupt_checkpoint_path(trainer: pl.Trainer) -> Path | None:
    """Where the interrupt's checkpoint goes: the run's ``last.ckpt``; None where checkpointing is off.

    That is the file ``--ckpt_path last`` resumes. Without a ``ModelCheckpoint``
    (``trainer.enable_checkpointing: false``, or a callback list without one) the run
    keeps no checkpoints, and none is written at the interrupt either.
    """
    checkpoint = trainer.checkpoint_callback
    if not isinstance(checkpoint, ModelCheckpoint) or checkpoint.dirpath is None:
        return None
    return Path(checkpoint.dirpath) / f"{checkpoint.CHECKPOINT_NAME_LAST}{checkpoint.FILE_EXTENSION}"


class StopAtStepBoundary(Callback):
    """Turns the first Ctrl-C of a training loop into a stop, and a checkpoint, at the end of the current step.

    The command line adds it to every run (``FeatlearnCLI.instantiate_trainer``), so a
    config's callback list cannot drop it. It is active from ``on_train_start`` to ``on_train_end`` in the
    main thread of a single-process run; elsewhere Ctrl-C keeps Python's behaviour.

    Attributes:
        requested: Whether a Ctrl-C asked the run to stop.
        stopped_at: The update step the run stops after (None: it goes on).
    """

    def __init__(self) -> None:
        self.requested = False
        self.stopped_at: int | None = None
        self._previous = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        self.requested, self.stopped_at = False, None
        if threading.current_thread() is threading.main_thread() and trainer.world_size == 1:
            self._previous = signal.signal(signal.SIGINT, self._ask_to_stop)

    def _ask_to_stop(self, signum, frame) -> None:
        if self.requested:  # the second Ctrl-C: now, as Python would
            self._restore()
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nCtrl-C: stopping at the end of this update step, with a checkpoint there "
            "(Ctrl-C again stops at once, without one).",
            file=sys.stderr,
            flush=True,
        )

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        """After the step a Ctrl-C came in: save its checkpoint, where ``ModelCheckpoint`` saves its own."""
        if self.requested and self.stopped_at is None:
            self._restore()
            path = interrupt_checkpoint_path(trainer)
            if path is not None:
                trainer.save_checkpoint(path, weights_only=False)
            self.stopped_at = trainer.global_step

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module, batch, batch_idx) -> None:
        """Stop before the next step, once the saved step's logging and hooks have all run."""
        if self.stopped_at is not None:
            raise KeyboardInterrupt

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Let Ctrl-C go. A Ctrl-C in the last step finds training complete: the run goes on to its test."""
        if self.requested:
            print(
                "Ctrl-C came in the last update step: training is complete (its final checkpoint is written); "
                "Ctrl-C again to stop before the test set is evaluated.",
                file=sys.stderr,
                flush=True,
            )
        self._restore()

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:  # noqa: D102
        self._restore()

    def _restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
