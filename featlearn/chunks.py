"""Several update steps carried by one Lightning batch (see ``ScheduledSGDModule.updates_per_batch``)."""

from __future__ import annotations


class StepChunk(list):
    """The batches (x, y) of consecutive update steps t, t+1, ..., carried as one Lightning batch.

    The data stream builds one when the model asks for several updates per batch
    (``ScheduledSGDModule.updates_in_batch``); the model's ``training_step`` makes one
    update per element, so ``trainer.global_step`` still counts updates.
    """
