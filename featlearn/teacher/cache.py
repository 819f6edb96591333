"""Trained teachers and sweep points on disk, keyed by everything that determines them."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import torch

#: Bump when what a cached entry means changes (its training code, its file layout).
CACHE_VERSION = 1


def default_cache_dir() -> Path:
    """``$FEATLEARN_CACHE/teachers``, else ``~/.cache/featlearn/teachers``."""
    return Path(os.environ.get("FEATLEARN_CACHE", Path.home() / ".cache" / "featlearn")) / "teachers"


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


class TeacherCache:
    """Trained teachers and sweep points on disk, keyed by everything that determines them.

    An entry is a folder ``<root>/<kind>/<digest>/`` with ``spec.json`` (the full key:
    data, network, size, seeds, steps, rates, regulariser, :data:`CACHE_VERSION`) and its
    payload (``weights.pt`` or ``result.json``), written to a temporary name and renamed
    so an interrupted write leaves no entry. A read checks the stored spec against the
    expected one and loads the payload; any mismatch or unreadable file is reported and
    the entry retrained, never used.

    Args:
        root: The cache folder (created; must be writable).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root):
                pass
        except OSError as error:
            raise ValueError(
                f"teacher.init_args.cache_dir {str(self.root)!r} cannot be written ({error}): set it to a "
                f"writable folder, or set FEATLEARN_CACHE."
            ) from error

    def folder(self, kind: str, spec: dict) -> Path:
        """Where the entry of ``spec`` lives."""
        return self.root / kind / _digest({**spec, "cache_version": CACHE_VERSION})

    def load(self, kind: str, spec: dict, payload: str):
        """The entry's payload (a state dict for ``.pt``, a dict for ``.json``), or None to (re)train."""
        folder = self.folder(kind, spec)
        if not folder.exists():
            return None
        try:
            stored = json.loads((folder / "spec.json").read_text())
            if stored != json.loads(json.dumps({**spec, "cache_version": CACHE_VERSION}, default=str)):
                raise ValueError("its spec.json does not match this run's teacher")
            path = folder / payload
            if payload.endswith(".pt"):
                return torch.load(path, map_location="cpu", weights_only=True)
            return json.loads(path.read_text())
        except Exception as error:  # noqa: BLE001 - any unreadable entry is retrained, and said
            warnings.warn(f"Teacher cache entry {folder} is unusable ({error}): retraining it.", stacklevel=2)
            return None

    def store(self, kind: str, spec: dict, payload: str, value) -> Path:
        """Write an entry atomically; returns its folder."""
        folder = self.folder(kind, spec)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
        (staging / "spec.json").write_text(json.dumps({**spec, "cache_version": CACHE_VERSION}, default=str))
        if payload.endswith(".pt"):
            torch.save(value, staging / payload)
        else:
            (staging / payload).write_text(json.dumps(value, indent=1))
        if folder.exists():  # a stale or corrupt entry
            for child in folder.iterdir():
                child.unlink()
            folder.rmdir()
        staging.rename(folder)
        return folder
