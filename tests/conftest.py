"""Shared fixtures: tiny, CPU-only, logger-free runs in a temporary folder."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from featlearn.models.networks import Training

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"

# `make test` runs one pytest-xdist worker per core: each worker's torch takes its share of the cores
# (and so do the fits a test starts in a subprocess), since two 2-thread workers on 2 cores spin against
# each other in OpenMP's barriers.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _THREADS = max(1, (os.cpu_count() or 1) // _WORKERS)
    os.environ.setdefault("OMP_NUM_THREADS", str(_THREADS))
    torch.set_num_threads(_THREADS)

warnings.filterwarnings("ignore", message=".*does not have many workers.*")
warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\).*")


@pytest.fixture
def fit(tmp_path):
    """fit(model, datamodule, steps, **trainer_kwargs) -> trainer: a tiny CPU run."""

    def _fit(model, datamodule, steps, ckpt_path=None, **kwargs):
        options = dict(
            max_steps=steps,
            accelerator="cpu",
            devices=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            limit_val_batches=0,
            num_sanity_val_steps=0,
            default_root_dir=tmp_path,
        )
        options.update(kwargs)
        trainer = pl.Trainer(**options)
        trainer.fit(model, datamodule, ckpt_path=ckpt_path)
        return trainer

    return _fit


#: Keyword names of a two-layer learner's config groups, as tests write them flat.
NETWORK_KEYS = {"activation": "activation", "bias": "bias", "output_scale": "output_scale"}
#: The fields of :class:`~featlearn.models.networks.Training` (rates, decays, noise).
TRAINING_KEYS = {f.name for f in dataclasses.fields(Training)}
INIT_KEYS = {"init": "scheme", "init_scale": "scale", "sigma_w": "sigma_w", "sigma_b": "sigma_b", "sigma_a": "sigma_a"}


#: Shi et al.'s network and loss, as flat keywords for :func:`grouped` (each test adds its sigmas).
SHI_PROCESS = dict(
    activation="truncated_relu",
    bias=True,
    output_scale="standard",
    init="gaussian_symmetric",
    mean_field_gradient=False,
    loss="hinge",
)


def grouped(width: int, **kwargs) -> dict:
    """A two-layer learner's keyword arguments from flat ones: ``network``, ``init`` and ``training`` groups.

    The rest pass as they are.
    """
    network = {"width": width, **{NETWORK_KEYS[k]: kwargs.pop(k) for k in list(kwargs) if k in NETWORK_KEYS}}
    init = {INIT_KEYS[k]: kwargs.pop(k) for k in list(kwargs) if k in INIT_KEYS}
    training = {k: kwargs.pop(k) for k in list(kwargs) if k in TRAINING_KEYS}
    return {"network": network, "init": init or None, "training": training or None, **kwargs}
