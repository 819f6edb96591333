"""One run per folder: a run holds its folder's lock while it runs, and a failed start leaves no folder.

Two processes writing one TensorBoard run interleave their curves, overwrite each other's
``config.yaml`` and pictures, and split their checkpoints into ``last.ckpt`` and
``last-v1.ckpt``. The lock is an exclusive ``flock`` on ``.NAME.featlearn.lock`` beside
the run folder ``NAME`` (beside it, so that taking it creates no folder), which the
operating system releases when the process ends, however it ends (a SIGKILL included):
a stale lock never blocks the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path


def lock_file(folder: Path) -> Path:
    """The lock file of ``folder``, beside it (it holds the pid of the process that runs there)."""
    return folder.parent / f".{folder.name}.featlearn.lock"


#: Folders this process holds, by resolved path -> the open lock file's descriptor.
_HELD: dict[Path, int] = {}
#: Per held folder, the folders above it that taking it created (the experiment's, save_dir), innermost first.
_MADE: dict[Path, list[Path]] = {}


def lock_run_folder(folder: Path) -> None:
    """Hold ``folder`` for this process (its parent is created if missing); again from this process is a no-op.

    Raises:
        ValueError: Another process holds it; the message names its pid and the way out.
    """
    key = folder.resolve()
    if key in _HELD:
        return
    made = [p for p in [folder.parent, *folder.parent.parents] if not p.exists()]
    folder.parent.mkdir(parents=True, exist_ok=True)
    _MADE[key] = made
    descriptor = os.open(lock_file(folder), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
        os.close(descriptor)
        raise ValueError(
            f"The run folder {str(folder)!r} is in use by another featlearn process (pid {holder}): two runs in one "
            f"folder would interleave their curves and overwrite each other's config and checkpoints. Give this run "
            f"its own folder (--trainer.logger.init_args.version NAME), or wait for that run to end."
        ) from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, str(os.getpid()).encode())
    _HELD[key] = descriptor


def holds(folder: Path) -> bool:
    """Whether this process holds ``folder``."""
    return folder.resolve() in _HELD


def release_run_folder(folder: Path, remove: bool = False) -> None:
    """Let ``folder`` go (nothing if this process does not hold it).

    With ``remove``, delete it and its lock first, then the empty folders above it that
    taking it created: a failed start leaves the file system as it found it.
    """
    descriptor = _HELD.pop(folder.resolve(), None)
    made = _MADE.pop(folder.resolve(), [])
    if descriptor is None:
        return
    if remove:
        shutil.rmtree(folder, ignore_errors=True)
        lock_file(folder).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the experiment's folder, if nothing else is there
            folder.parent.rmdir()
        for parent in made:  # and the folders above that this run created (save_dir), if still empty
            with contextlib.suppress(OSError):
                parent.rmdir()
    fcntl.flock(descriptor, fcntl.LOCK_UN)
    os.close(descriptor)
