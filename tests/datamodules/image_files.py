"""Tiny image datasets written in the real on-disk formats that torchvision reads.

Each writer puts ``n`` random uint8 images per split with labels cycling through
0..9 (so every class is present) and returns them, so tests can compare what the data
model read with what was written. CIFAR-10's and SVHN's MD5 sums are torchvision class
attributes; :func:`trust_written_files` points them at the files written here.
"""

from __future__ import annotations

import gzip
import hashlib
import pickle
import struct
from pathlib import Path

import numpy as np
import scipy.io

IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _images(n: int, shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, *shape), dtype=np.uint8), np.arange(n, dtype=np.uint8) % 10


def _idx_images(images: np.ndarray) -> bytes:
    n, h, w = images.shape
    return struct.pack(">IIII", 2051, n, h, w) + images.tobytes()


def _idx_labels(labels: np.ndarray) -> bytes:
    return struct.pack(">II", 2049, labels.shape[0]) + labels.tobytes()


def write_mnist(folder: Path, n_train: int = 40, n_test: int = 20, compress: bool = False) -> dict:
    """MNIST's four IDX files in ``folder`` (gzipped with ``compress``, as Debian ships them)."""
    folder.mkdir(parents=True, exist_ok=True)
    splits = {"train": _images(n_train, (28, 28), 0), "t10k": _images(n_test, (28, 28), 1)}
    for split, (images, labels) in splits.items():
        for kind, payload in (("images-idx3", _idx_images(images)), ("labels-idx1", _idx_labels(labels))):
            name = f"{split}-{kind}-ubyte"
            if compress:
                (folder / f"{name}.gz").write_bytes(gzip.compress(payload))
            else:
                (folder / name).write_bytes(payload)
    return splits


def write_cifar10(root: Path, per_batch: int = 10, n_test: int = 20) -> dict:
    """CIFAR-10's python archive layout: ROOT/cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        images, labels = _images(n_test if name == "test_batch" else per_batch, (3, 32, 32), 10 + i)
        with open(folder / name, "wb") as f:
            pickle.dump({"data": images.reshape(len(labels), -1), "labels": labels.tolist()}, f)
        written[name] = (images, labels)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump(
            {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]},
            f,
        )
    return written


def write_svhn(root: Path, n_train: int = 40, n_test: int = 20) -> dict:
    """SVHN's MATLAB files: X (32, 32, 3, N) uint8, y (N, 1) with the digit 0 stored as 10."""
    root.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, n, seed in (("train", n_train, 20), ("test", n_test, 21)):
        images, labels = _images(n, (32, 32, 3), seed)
        stored = np.where(labels == 0, 10, labels).astype(np.uint8).reshape(-1, 1)
        scipy.io.savemat(
            root / f"{split}_32x32.mat", {"X": np.ascontiguousarray(images.transpose(1, 2, 3, 0)), "y": stored}
        )
        written[split] = (images, labels)
    return written


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def trust_written_files(monkeypatch, root: Path) -> None:
    """Point torchvision's CIFAR-10 and SVHN checksums at the tiny files under ``root``."""
    from torchvision import datasets

    folder = root / datasets.CIFAR10.base_folder
    if folder.is_dir():
        for attr in ("train_list", "test_list"):
            entries = [[name, _md5(folder / name)] for name, _ in getattr(datasets.CIFAR10, attr)]
            monkeypatch.setattr(datasets.CIFAR10, attr, entries)
        meta = dict(datasets.CIFAR10.meta, md5=_md5(folder / datasets.CIFAR10.meta["filename"]))
        monkeypatch.setattr(datasets.CIFAR10, "meta", meta)
    splits = {}
    for split, (url, filename, md5) in datasets.SVHN.split_list.items():
        path = root / filename
        splits[split] = [url, filename, _md5(path) if path.is_file() else md5]
    monkeypatch.setattr(datasets.SVHN, "split_list", splits)
