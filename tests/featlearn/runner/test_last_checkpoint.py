"""``--ckpt_path last`` takes the latest run or refuses: never an older run, never a finished run extended silently."""

from pathlib import Path

import pytest
import torch
import yaml

from featlearn.runner.checks import resolve_last_checkpoint


def make_run(experiment: Path, version: int, step: int | None, max_steps: int = 10) -> Path:
    """A run folder: its config.yaml (max_steps) and, unless ``step`` is None, a last.ckpt at ``step``."""
    folder = experiment / f"version_{version}"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({"trainer": {"max_steps": max_steps}}))
    if step is not None:
        torch.save({"global_step": step}, folder / "checkpoints" / "last.ckpt")
    return folder


def config(save_dir: Path, max_steps: int = 10, version=None) -> dict:
    init_args = {"save_dir": str(save_dir), "name": "exp", "version": version}
    return {"ckpt_path": "last", "trainer": {"max_steps": max_steps, "logger": {"init_args": init_args}}}


def test_the_latest_unfinished_run_is_resumed_in_its_folder(tmp_path):
    make_run(tmp_path / "exp", 0, 10)
    latest = make_run(tmp_path / "exp", 1, 4)
    given = config(tmp_path)
    resolve_last_checkpoint(given)
    assert given["ckpt_path"] == str(latest / "checkpoints" / "last.ckpt")
    assert given["trainer"]["logger"]["init_args"]["version"] == "version_1"


def test_a_latest_run_without_a_checkpoint_is_never_replaced_by_an_older_one(tmp_path):
    older = make_run(tmp_path / "exp", 0, 10, max_steps=10)
    make_run(tmp_path / "exp", 1, None)
    with pytest.raises(ValueError, match="version_1', has no checkpoints/last.ckpt") as error:
        resolve_last_checkpoint(config(tmp_path, max_steps=12))
    assert "Start it again without --ckpt_path" in str(error.value)
    assert str(older / "checkpoints" / "last.ckpt") in str(error.value)  # named, not taken


@pytest.mark.parametrize(
    ("wanted", "says"), [(20, "To extend it to 20 steps, say so"), (10, "raise --trainer.max_steps")]
)
def test_a_finished_run_is_extended_only_by_giving_its_checkpoint(tmp_path, wanted, says):
    folder = make_run(tmp_path / "exp", 0, 10, max_steps=10)
    with pytest.raises(ValueError, match="finished all its 10 update steps") as error:
        resolve_last_checkpoint(config(tmp_path, max_steps=wanted))
    assert says in str(error.value) and f"--ckpt_path {folder / 'checkpoints' / 'last.ckpt'}" in str(error.value)


def test_testing_a_finished_run_with_last_is_no_extension(tmp_path):
    folder = make_run(tmp_path / "exp", 0, 10, max_steps=10)
    given = config(tmp_path)
    resolve_last_checkpoint(given, subcommand="test")
    assert given["ckpt_path"] == str(folder / "checkpoints" / "last.ckpt")


def test_a_named_version_is_the_run_last_resumes(tmp_path):
    make_run(tmp_path / "exp", 3, 4)
    named = tmp_path / "exp" / "mine"
    (named / "checkpoints").mkdir(parents=True)
    torch.save({"global_step": 2}, named / "checkpoints" / "last.ckpt")
    given = config(tmp_path, version="mine")
    resolve_last_checkpoint(given)
    assert given["ckpt_path"] == str(named / "checkpoints" / "last.ckpt")
    assert given["trainer"]["logger"]["init_args"]["version"] == "mine"


def test_a_folder_only_an_evaluation_made_is_no_run_to_resume(tmp_path):
    """`featlearn test` on an outside checkpoint opens a folder with config_test.yaml only: last skips it."""
    trained = make_run(tmp_path / "exp", 0, 4)
    evaluated = tmp_path / "exp" / "version_1"
    evaluated.mkdir()
    (evaluated / "config_test.yaml").write_text("trainer: {max_steps: 10}\n")
    given = config(tmp_path)
    resolve_last_checkpoint(given)
    assert given["ckpt_path"] == str(trained / "checkpoints" / "last.ckpt")
