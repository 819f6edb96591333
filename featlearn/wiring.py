"""The one place where a run's parts are connected: the data model handed to its readers, the run to the data model.

Learners and observers never read ``trainer.datamodule``: those that need the data
model declare it by implementing :class:`~featlearn.contracts.DataConsumer`
(``connect_data(data)``), and :class:`DataWiring` hands it to them at the start of every
``fit``, ``validate`` and ``test``, before any of their ``on_*_start`` hooks run. The
data model in turn never reads the trainer: it is handed its device, rank, step budget,
update counter and chunk plan (:class:`~featlearn.contracts.Placement`). Every featlearn
learner adds a ``DataWiring`` to its trainer (``configure_callbacks``), so this works the
same from the command line and from a plain ``Trainer.fit(model, data)``.
"""

from __future__ import annotations

import pytorch_lightning as pl

from featlearn.contracts import DataConsumer, PlacedData, Placement
from featlearn.steps import StepPlan


class DataWiring(pl.Callback):
    """Hands the trainer's data model to the learner and to every callback that reads data.

    Lightning calls each callback's ``setup`` before the learner's ``setup`` and before
    any ``on_fit_start`` / ``on_validation_start`` / ``on_test_start``: so a learner or
    observer may use the data model from its own ``setup`` (learners) or its start hooks
    (observers) on. A consumer checks what it needs of the data model in ``connect_data``
    (:func:`featlearn.contracts.require`), so a run that cannot work fails here, before
    the first step, with the missing method and the class that lacks it.

    The data model (a :class:`~featlearn.contracts.PlacedData`) is placed first: the
    training device (the strategy's root device), this process's rank, the number of
    processes, ``max_steps``, the update counter and, for a fit, the chunk plan
    (:meth:`StepPlan.from_trainer`, which gathers the steps the callbacks look at).
    Lightning sets the strategy up and attaches the learner's callbacks before any
    ``setup`` hook, and draws no set before the dataloaders are asked for, after every
    ``setup``. The counter is a function, read when the training stream starts: Lightning
    restores a checkpoint's step only after ``setup`` and ``on_fit_start``, and fetches the
    first batch before ``on_train_start``.

    Raises:
        ValueError: From :meth:`StepPlan.from_trainer`, for settings that several updates
            per batch cannot honour.
    """

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:  # noqa: D102
        data = trainer.datamodule  # the one read of it: everyone else is handed it
        if isinstance(data, PlacedData):
            plan = StepPlan.from_trainer(trainer, data.updates_per_batch) if stage == "fit" else None
            device, rank, world = trainer.strategy.root_device, trainer.global_rank, trainer.world_size
            data.place(Placement(device, rank, world, trainer.max_steps, lambda: trainer.global_step, plan))
        for part in (pl_module, *trainer.callbacks):
            if part is not self and isinstance(part, DataConsumer):
                part.connect_data(data)
