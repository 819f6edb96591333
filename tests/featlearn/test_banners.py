import logging

import pytorch_lightning as pl
from pytorch_lightning.utilities.rank_zero import rank_zero_info

import featlearn.runner.lightning  # noqa: F401  (imported by every featlearn command: installs the filter)
from featlearn.banners import DropAdvertisements, hide_advertisements


def test_lightnings_product_tip_is_dropped_and_its_other_banners_kept(caplog, tmp_path):
    with caplog.at_level(logging.INFO):
        pl.Trainer(max_steps=1, default_root_dir=tmp_path, enable_checkpointing=False)  # logs the litlogger tip
        rank_zero_info("GPU available: False, used: False")
    assert "litlogger" not in caplog.text and "Tip" not in caplog.text
    assert "GPU available" in caplog.text


def test_the_filter_is_attached_once():
    hide_advertisements()
    hide_advertisements()
    logger = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    assert sum(isinstance(f, DropAdvertisements) for f in logger.filters) == 1
