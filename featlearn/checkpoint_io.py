"""Checkpoints written atomically: a kill during a write never leaves an unreadable ``last.ckpt``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer, with each local file written beside its target, synced, then renamed.

    ``os.replace`` within one folder is atomic on POSIX: a reader (a resume) sees the old
    complete file or the new complete file, never a partial one, whatever kills the process
    during the write. (Lightning's own writer stages in the system's temporary folder, and
    its final move is a copy whenever that lies on another file system.) Remote paths
    (``s3://...``) are left to Lightning. ``base.yaml`` installs it for every run.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        """Write ``checkpoint`` to ``path``: to a partial file in the same folder first, then rename it."""
        if storage_options is not None or "://" in str(path):
            super().save_checkpoint(checkpoint, path, storage_options)
            return
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
        try:
            with open(partial, "wb") as handle:
                torch.save(checkpoint, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
