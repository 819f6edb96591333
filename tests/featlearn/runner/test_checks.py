"""The checks of a parsed config, called directly: each refusal names the setting, the value and the fix.

``tests/featlearn/runner/test_errors.py`` runs one bad input of most kinds through the
command line and ``test_last_checkpoint.py`` covers ``--ckpt_path last``; here each
function's branches are checked on tiny inputs: jsonargparse Namespaces as the CLI
parses them, and checkpoints written by ``torch.save`` in Lightning's layout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from jsonargparse import Namespace

import featlearn.runner.checks as checks
from featlearn.runner.checks import (
    check_checkpoint_path,
    check_resume,
    check_trainer,
    check_writable_folder,
    check_yaml_files,
    checkpoint_step,
    continue_in_checkpoint_folder,
    describe_data,
    describe_made_by,
    describe_yaml_error,
    plain_arguments,
    planned_steps,
    run_folders,
)


# ---------------------------------------------------------------------- YAML files
def test_yaml_files_must_hold_a_mapping_and_the_first_bad_one_is_named(tmp_path):
    good, empty, scalar = tmp_path / "good.yaml", tmp_path / "empty.yaml", tmp_path / "scalar.yaml"
    good.write_text("trainer: {max_steps: 3}\n")
    empty.write_text("# nothing yet\n")
    scalar.write_text("3\n")
    check_yaml_files([str(good), str(empty)])  # an empty file is an empty config
    with pytest.raises(
        ValueError, match=rf"^--config {scalar} must hold a mapping \(trainer:, model:, data:\), got a int"
    ):
        check_yaml_files([str(good), str(scalar)])


def test_a_yaml_error_says_where_and_what_with_one_based_lines_and_columns(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  lr: 0.1\n   width: 3\n")  # a mapping value where none may start
    with pytest.raises(ValueError) as error:
        check_yaml_files([str(path)])
    assert str(error.value) == (
        f"--config {path} is not valid YAML: mapping values are not allowed here (line 3, column 9)."
    )
    assert error.value.__cause__ is None and error.value.__suppress_context__  # no YAML traceback on top
    flow = pytest.raises(yaml.YAMLError, yaml.safe_load, "a: [1, 2\nb: 3\n").value
    assert describe_yaml_error(flow) == (
        "while parsing a flow sequence (line 1, column 4): expected ',' or ']', but got ':' (line 2, column 2)"
    )
    assert describe_yaml_error(yaml.YAMLError("plain\n   text")) == "plain text"  # no marks: the text alone


# ---------------------------------------------------------------------- trainer
@pytest.mark.parametrize(
    ("trainer", "match"),
    [
        ({"max_steps": -1}, r"trainer\.max_steps must be a number of update steps >= 0 .* got -1: .*--trainer\.max"),
        ({"max_steps": None}, r"got None: .*and None would train forever\. Set it, e\.g\. --trainer\.max_steps 1000"),
        ({"max_steps": True}, r"trainer\.max_steps must be a number of update steps >= 0 .* got True"),
        ({"max_steps": 2.0}, r"trainer\.max_steps must be a number of update steps >= 0 .* got 2\.0"),
        ({"max_steps": 5, "log_every_n_steps": 0}, r"^trainer\.log_every_n_steps must be an integer >= 1, got 0\.$"),
        ({"max_steps": 5, "log_every_n_steps": 2.5}, r"log_every_n_steps must be an integer >= 1, got 2\.5"),
    ],
)
def test_step_counts_that_are_not_counts_are_refused(trainer, match):
    with pytest.raises(ValueError, match=match):
        check_trainer(trainer)


def test_valid_trainers_pass_as_mappings_and_as_parsed_namespaces(tmp_path):
    check_trainer({"max_steps": 0})  # 0: evaluate the initial network
    logger = Namespace(class_path="TensorBoardLogger", init_args=Namespace(save_dir=str(tmp_path / "new" / "runs")))
    check_trainer(Namespace(max_steps=10, log_every_n_steps=1, accelerator="cpu", logger=logger))
    check_trainer({"max_steps": 10, "logger": False})
    check_trainer({"max_steps": 10, "logger": [logger]})  # a list of loggers is Lightning's to check
    assert not (tmp_path / "new").exists()  # checked, not created


@pytest.mark.parametrize("accelerator", ["gpu", "CUDA"])
def test_a_gpu_accelerator_without_a_gpu_says_to_use_cpu_or_auto(monkeypatch, accelerator):
    monkeypatch.setattr(checks.torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        ValueError, match=rf"trainer\.accelerator is '{accelerator}'.*--trainer\.accelerator cpu, or auto"
    ):
        check_trainer({"max_steps": 1, "accelerator": accelerator})
    check_trainer({"max_steps": 1, "accelerator": "auto"})
    monkeypatch.setattr(checks.torch.cuda, "is_available", lambda: True)
    check_trainer({"max_steps": 1, "accelerator": accelerator})


def test_a_logger_folder_under_a_file_is_refused_by_its_setting(tmp_path):
    (tmp_path / "file").write_text("")
    trainer = {"max_steps": 1, "logger": {"init_args": {"save_dir": str(tmp_path / "file" / "runs")}}}
    with pytest.raises(
        ValueError, match=r"^trainer\.logger\.init_args\.save_dir = '.*file/runs' is, or lies under, a file"
    ):
        check_trainer(trainer)


# ---------------------------------------------------------------------- folders
def test_writable_folders_pass_without_being_created(tmp_path):
    check_writable_folder(tmp_path, "x")
    check_writable_folder(tmp_path / "a" / "b" / "c", "x")
    assert list(tmp_path.iterdir()) == []


def test_unusable_folders_are_refused_naming_the_setting_and_the_way_out(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"^out = '.*file' is, or lies under, a file: choose a folder\.$"):
        check_writable_folder(tmp_path / "file", "out")
    (tmp_path / "broken").symlink_to(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"^out = '.*broken/x' cannot be created \(a broken link on the way\)"):
        check_writable_folder(tmp_path / "broken" / "x", "out")
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = checks.os.access
    monkeypatch.setattr(checks.os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode))
    with pytest.raises(ValueError, match=rf"^out = '{locked}/runs' cannot be written \(its folder '{locked}'\): perm"):
        check_writable_folder(locked / "runs", "out")
    with pytest.raises(ValueError, match=rf"^out = '{locked}' cannot be written: permission denied\. Choose another"):
        check_writable_folder(locked, "out")


# ---------------------------------------------------------------------- --ckpt_path
def test_checkpoint_keywords_and_files_pass_and_anything_else_is_named_with_the_fix(tmp_path):
    for value in (None, "", "last", "best", "hpc", "registry"):
        check_checkpoint_path(value)
    (tmp_path / "a.ckpt").write_bytes(b"")
    check_checkpoint_path(tmp_path / "a.ckpt")
    with pytest.raises(ValueError) as missing:
        check_checkpoint_path(str(tmp_path / "b.ckpt"))
    assert str(missing.value).startswith(f"--ckpt_path '{tmp_path / 'b.ckpt'}' does not exist: give a checkpoint file")
    assert "--ckpt_path last to resume the latest run" in str(missing.value)
    with pytest.raises(ValueError, match=r"^--ckpt_path '.*' is a folder: give a checkpoint file"):
        check_checkpoint_path(tmp_path)


def test_checkpoint_step_and_planned_steps_read_the_files_or_say_none(tmp_path):
    torch.save({"global_step": 7, "state_dict": {"w": torch.ones(2)}}, tmp_path / "a.ckpt")
    assert checkpoint_step(tmp_path / "a.ckpt") == 7
    torch.save({"epoch": 0}, tmp_path / "b.ckpt")
    (tmp_path / "c.ckpt").write_bytes(b"not a checkpoint")
    assert checkpoint_step(tmp_path / "b.ckpt") is checkpoint_step(tmp_path / "c.ckpt") is None
    assert checkpoint_step(tmp_path / "none.ckpt") is None
    for content, steps in [
        ("trainer: {max_steps: 12}", 12),
        ("trainer: {max_steps: true}", None),
        ("trainer: {max_steps: null}", None),
        ("model: {}", None),
        ("- a list", None),
        ("trainer: [1", None),
        ("", None),
    ]:
        (tmp_path / "config.yaml").write_text(content)
        assert planned_steps(tmp_path) == steps, content
    assert planned_steps(tmp_path / "nowhere") is None


def test_run_folders_are_the_training_runs_in_numeric_order(tmp_path):
    for name, content in [
        ("version_10", "config.yaml"),
        ("version_2", "checkpoints"),
        ("version_3", "config_test.yaml"),  # made by featlearn test: no run
        ("version_x", "config.yaml"),
        ("other_1", "config.yaml"),
        ("version_0", "config.yaml"),
    ]:
        (tmp_path / name).mkdir()
        if content == "checkpoints":
            (tmp_path / name / content).mkdir()
        else:
            (tmp_path / name / content).write_text("{}")
    assert [f.name for f in run_folders(tmp_path)] == ["version_0", "version_2", "version_10"]
    assert run_folders(tmp_path / "missing") == []


# ---------------------------------------------------------------------- continuing in the checkpoint's folder
def logged(ckpt_path, save_dir, name="exp", version=None) -> Namespace:
    init_args = Namespace(save_dir=str(save_dir), name=name, version=version)
    return Namespace(ckpt_path=ckpt_path, trainer=Namespace(logger=Namespace(init_args=init_args)))


def test_a_checkpoint_of_this_experiment_continues_in_its_version_folder(tmp_path, monkeypatch):
    checkpoint = tmp_path / "runs" / "exp" / "version_3" / "checkpoints" / "step=4.ckpt"
    config = logged(str(checkpoint), tmp_path / "runs")
    continue_in_checkpoint_folder(config)
    assert config.trainer.logger.init_args.version == "version_3"
    monkeypatch.chdir(tmp_path)  # a relative save_dir names the same folder
    relative = logged("runs/exp/version_3/checkpoints/last.ckpt", "runs")
    continue_in_checkpoint_folder(relative)
    assert relative.trainer.logger.init_args.version == "version_3"


@pytest.mark.parametrize(
    "case", ["other experiment", "not in checkpoints", "version set", "keyword", "no save_dir", "no logger"]
)
def test_a_checkpoint_from_elsewhere_or_a_set_version_keeps_the_logger_as_given(tmp_path, case):
    runs = tmp_path / "runs"
    checkpoint = runs / "exp" / "version_3" / "checkpoints" / "last.ckpt"
    config = {
        "other experiment": logged(str(runs / "exp2" / "version_3" / "checkpoints" / "last.ckpt"), runs),
        "not in checkpoints": logged(str(runs / "exp" / "version_3" / "last.ckpt"), runs),
        "version set": logged(str(checkpoint), runs, version="mine"),
        "keyword": logged("last", runs),
        "no save_dir": logged(str(checkpoint), ""),
        "no logger": Namespace(ckpt_path=str(checkpoint), trainer=Namespace(logger=False)),
    }[case]
    before = config.clone()
    continue_in_checkpoint_folder(config)
    assert config == before


# ---------------------------------------------------------------------- check_resume
MODEL = "featlearn.models.TwoLayerNet"
DATA = "featlearn.datamodules.BooleanXOR"
IDENTITY = {"dim": 8, "pair": [0, 1], "seed": 0, "batch_size": 16, "test_size": 64}


def write_checkpoint(path: Path, class_path=MODEL, data="BooleanXOR", identity=IDENTITY, **hparams) -> Path:
    """A checkpoint in Lightning's layout: LightningCLI's hyperparameters, the data model's state under its name."""
    hyper = {"_class_path": class_path, "_instantiator": "x", "input_dim": 8, "training": {"lr": 0.16}}
    hyper.update({"network": {"width": 4, "activation": "relu"}}, **hparams)
    checkpoint = {"global_step": 3, "hyper_parameters": hyper, "state_dict": {}}
    if data is not None:
        checkpoint[data] = {"identity": identity}
    torch.save(checkpoint, path)
    return path


def run_config(ckpt_path, model=MODEL, data=DATA, model_args=None, data_args=None) -> Namespace:
    model_args = {
        "input_dim": 8,
        "training": {"lr": 0.16},
        "network": {"width": 4, "activation": "relu"},
        **(model_args or {}),
    }
    return Namespace(
        ckpt_path=str(ckpt_path),
        model=Namespace(class_path=model, init_args=Namespace(**model_args)),
        data=Namespace(class_path=data, init_args=Namespace(**{**IDENTITY, **(data_args or {})})),
    )


def test_the_same_run_resumes_and_free_or_unset_settings_may_change(tmp_path):
    path = write_checkpoint(tmp_path / "a.ckpt")
    check_resume(run_config(path), object, ())
    check_resume(run_config(path, data_args={"test_size": 512}), object, ("test_size",))  # resume-free
    check_resume(run_config(path, model_args={"training": {"lr": None}}), object, ())  # not given: the checkpoint's
    check_resume(run_config(path, model_args={"momentum": 0.9}), object, ())  # not stored: nothing to compare
    check_resume(run_config(path, data_args={"seed": 5}), None, ())  # not a featlearn data model: no identity check


@pytest.mark.parametrize(
    ("model_args", "data_args", "free", "named"),
    [
        ({"training": {"lr": 0.05}}, {}, (), ["model.init_args.training.lr = 0.16 there, 0.05 here"]),
        ({"network": {"width": 6, "activation": "relu"}}, {}, (), ["model.init_args.network.width = 4 there, 6 here"]),
        ({}, {"seed": 4}, (), ["data.init_args.seed = 0 there, 4 here"]),
        ({}, {"pair": (0, 2)}, (), ["data.init_args.pair = [0, 1] there, [0, 2] here"]),  # a tuple as the ckpt keeps it
        (
            {"training": {"lr": 0.2}},
            {"seed": 1, "test_size": 9},
            ("test_size",),
            ["data.init_args.seed = 0 there, 1 here", "model.init_args.training.lr = 0.16 there, 0.2 here"],
        ),
    ],
)
def test_a_changed_setting_is_refused_naming_each_change_and_the_way_out(tmp_path, model_args, data_args, free, named):
    path = write_checkpoint(tmp_path / "a.ckpt")
    with pytest.raises(ValueError) as error:
        check_resume(run_config(path, model_args=model_args, data_args=data_args), object, free)
    message = str(error.value)
    assert message.startswith(f"--ckpt_path {path} resumes a run made with other settings: {'; '.join(named)}. ")
    assert "give the run's own config.yaml" in message and "start a new run without --ckpt_path" in message


def test_a_class_spec_network_is_compared_by_its_init_args(tmp_path):
    spec = {"class_path": "QuadraticFC", "init_args": {"width": 4, "in_features": 8}}
    path = write_checkpoint(tmp_path / "a.ckpt", network=spec)
    given = {"network": {"class_path": "QuadraticFC", "init_args": {"width": 4, "in_features": 8}}}
    check_resume(run_config(path, model_args=given), object, ())
    given["network"]["init_args"]["width"] = 5
    with pytest.raises(ValueError, match=r"model\.init_args\.network\.width = 4 there, 5 here"):
        check_resume(run_config(path, model_args=given), object, ())


@pytest.mark.parametrize(
    ("config", "made_by", "builds"),
    [
        ({"model": "featlearn.models.KernelRidge"}, "TwoLayerNet (input_dim 8, width 4)", "KernelRidge on BooleanXOR"),
        (
            {"data": "featlearn.datamodules.SparseCoding"},
            "TwoLayerNet (input_dim 8, width 4) on BooleanXOR (dim 8, pair [0, 1], seed 0, batch_size 16, ...)",
            "TwoLayerNet on SparseCoding",
        ),
    ],
)
def test_a_checkpoint_of_another_experiment_says_what_made_it(tmp_path, config, made_by, builds):
    path = write_checkpoint(tmp_path / "a.ckpt")
    with pytest.raises(ValueError) as error:
        check_resume(run_config(path, **config), object, ())
    message = str(error.value)
    assert message.startswith(f"--ckpt_path {path} comes from another experiment: it was made by {made_by}")
    assert f"this run builds {builds}." in message and "its run folder's config.yaml" in message


def test_keywords_and_missing_files_are_not_read_and_a_checkpoint_without_data_state_compares_the_model(tmp_path):
    check_resume(run_config("last", model="featlearn.models.Other"), object, ())
    check_resume(run_config(tmp_path / "none.ckpt", model="featlearn.models.Other"), object, ())
    path = write_checkpoint(tmp_path / "a.ckpt", data=None)
    check_resume(run_config(path, data="featlearn.datamodules.SparseCoding"), object, ())  # nothing says otherwise
    with pytest.raises(ValueError, match=r"made by TwoLayerNet \(input_dim 8, width 4\) on an unknown data model"):
        check_resume(run_config(path, model="featlearn.models.RandomFeatures"), object, ())


def test_descriptions_of_learners_and_data_models():
    assert describe_made_by("a.b.TwoLayerNet", {"input_dim": 3, "network": {"width": 9}}) == (
        "TwoLayerNet (input_dim 3, width 9)"
    )
    assert describe_made_by("KernelRidge", {"network": {"class_path": "X"}}) == "KernelRidge"
    assert describe_made_by("", {}) == "an unknown learner"
    assert describe_data({"XOR": {"dim": 4, "seed": 1}}) == "XOR (dim 4, seed 1)"
    five = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    assert describe_data({"XOR": five}) == "XOR (a 1, b 2, c 3, d 4, ...)"
    assert describe_data({}) == "an unknown data model"
    assert plain_arguments(Namespace(a=1, b=Namespace(c=2))) == {"a": 1, "b": {"c": 2}}
    assert plain_arguments(None) == {} and plain_arguments({"a": 1}) == {"a": 1}


def test_a_checkpoint_saved_with_the_rates_directly_under_init_args_is_compared_in_the_present_form(tmp_path):
    path = tmp_path / "old.ckpt"
    write_checkpoint(path, lr=0.16)  # before November 2026: TwoLayerNet took lr beside network
    checkpoint = torch.load(path, weights_only=False)
    del checkpoint["hyper_parameters"]["training"]
    torch.save(checkpoint, path)
    check_resume(run_config(path), object, ())  # the same rate, written in the present form
    with pytest.raises(ValueError, match="model.init_args.training.lr = 0.16 there, 0.05 here"):
        check_resume(run_config(path, model_args={"training": {"lr": 0.05}}), object, ())
