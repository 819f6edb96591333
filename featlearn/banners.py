"""Lightning's per-run banners, hidden where a command runs many fits, and its advertisements, hidden always."""

from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def quiet_lightning(quiet: bool = True):
    """Hide Lightning's per-run banners (devices, tips, "seed set", "max_steps reached") while it runs.

    They are INFO records of Lightning's loggers; warnings and errors still show. Commands
    that run many fits show them once (trials) or not at all (teachers).
    """
    names = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning.fabric", "lightning")
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    if quiet:
        for logger in loggers:
            logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


#: Words of the INFO records Lightning prints to sell a product (the "Tip: ... litlogger" line on every
#: trainer): noise in a research tool's output, dropped wherever featlearn builds a trainer.
ADVERTISEMENTS = ("litlogger", "Lightning Experiments platform")


class DropAdvertisements(logging.Filter):
    """A logging filter that drops Lightning's product tips (:data:`ADVERTISEMENTS`) and passes the rest."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: D102
        message = record.getMessage()
        return not any(word in message for word in ADVERTISEMENTS)


def hide_advertisements() -> None:
    """Attach :class:`DropAdvertisements` to the logger Lightning's ``rank_zero_info`` writes to (once)."""
    logger = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    if not any(isinstance(f, DropAdvertisements) for f in logger.filters):
        logger.addFilter(DropAdvertisements())
