"""Shared fixtures: tiny, CPU-only, logger-free runs in a temporary folder."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import pytorch_lightning as pl

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"

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
