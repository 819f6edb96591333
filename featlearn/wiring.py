"""The one place where a run's parts are connected: the data model handed to its readers.

Learners and observers never read ``trainer.datamodule``: those that need the data
model declare it by implementing :class:`~featlearn.contracts.DataConsumer`
(``connect_data(data)``), and :class:`DataWiring` hands it to them at the start of every
``fit``, ``validate`` and ``test``, before any of their ``on_*_start`` hooks run. Every
featlearn learner adds a ``DataWiring`` to its trainer (``configure_callbacks``), so this
works the same from the command line and from a plain ``Trainer.fit(model, data)``.
"""

from __future__ import annotations

import pytorch_lightning as pl

from featlearn.contracts import DataConsumer


class DataWiring(pl.Callback):
    """Hands the trainer's data model to the learner and to every callback that reads data.

    Lightning calls each callback's ``setup`` before the learner's ``setup`` and before
    any ``on_fit_start`` / ``on_validation_start`` / ``on_test_start``: so a learner or
    observer may use the data model from its own ``setup`` (learners) or its start hooks
    (observers) on. A consumer checks what it needs of the data model in ``connect_data``
    (:func:`featlearn.contracts.require`), so a run that cannot work fails here, before
    the first step, with the missing method and the class that lacks it.
    """

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:  # noqa: D102
        data = trainer.datamodule  # the one read of it: everyone else is handed it
        for part in (pl_module, *trainer.callbacks):
            if part is not self and isinstance(part, DataConsumer):
                part.connect_data(data)
