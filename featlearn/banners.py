"""Lightning's per-run banners, hidden where a command runs many fits."""

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
