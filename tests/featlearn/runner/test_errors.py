"""A catalogue of bad inputs through the real command line: one clean message each, status 2, nothing left behind."""

import subprocess
import sys
from pathlib import Path

import pytest

from featlearn.cli.main import main

SMALL = ["--data.init_args.dim", "8", "--model.init_args.network.width", "4", "--trainer.max_steps", "4"]
GAP = "[{start: 1, end: 2, value: 0.1}, {start: 4, value: 0.1}]"


def glasgow(*extra):
    return ["fit", "--config", "glasgow_xor", *SMALL, *extra]


def shi(*extra):
    return ["fit", "--config", "shi_parity", "--config", "debug/smoke", *extra]


#: (name, arguments, text the message must contain). Files the cases need are written by `prepare`.
CASES = [
    (
        "negative rate",
        glasgow("--model.init_args.training.lr", "-0.1"),
        "model.training.lr: value must be >= 0, got -0.1",
    ),
    (
        "yaml error in a second config",
        glasgow("--config", "{bad_yaml}"),
        "bad.yaml is not valid YAML: while parsing a flow sequence (line 2, column 14)",
    ),
    ("a config that is a list", glasgow("--config", "{list_yaml}"), "list.yaml must hold a mapping"),
    ("misspelt argument", glasgow("--model.init_args.netwrk.width", "3"), "did you mean --model.init_args.network"),
    ("max_steps -1", glasgow("--trainer.max_steps", "-1"), "trainer.max_steps must be a number of update steps >= 0"),
    ("max_steps of another type", glasgow("--trainer.max_steps", "many"), "trainer.max_steps: Expected a <class"),
    ("log_every_n_steps 0", glasgow("--trainer.log_every_n_steps", "0"), "trainer.log_every_n_steps"),
    ("gpu without a gpu", glasgow("--trainer.accelerator", "gpu"), "trainer.accelerator is 'gpu'"),
    ("save_dir under a file", glasgow("--trainer.logger.init_args.save_dir", "{a_file}/runs"), "save_dir"),
    (
        "save_dir that no check foresees",  # /proc passes os.access as root, yet refuses mkdir
        glasgow("--trainer.logger.init_args.save_dir", "/proc/featlearn_nowhere"),
        "trainer.logger.init_args.save_dir: the run folder '/proc/featlearn_nowhere/glasgow_xor/version_0' cannot be "
        "created (No such file or directory): choose a folder you can write",
    ),
    ("unknown shipped config", ["fit", "--config", "glasgow_xro"], "neither a file nor a shipped config"),
    ("missing checkpoint", glasgow("--ckpt_path", "{tmp}/none.ckpt"), "--ckpt_path"),
    ("ckpt_path last without runs", glasgow("--ckpt_path", "last"), "--ckpt_path last: no run under"),
    ("a checkpoint of another experiment", shi("--ckpt_path", "{glasgow_ckpt}"), "comes from another experiment"),
    (
        "a setting changed at resume",
        glasgow("--ckpt_path", "{glasgow_ckpt}", "--model.init_args.training.lr", "0.05"),
        "model.init_args.training.lr = 0.16 there, 0.05 here",
    ),
    (
        "data seed changed at resume",
        glasgow("--ckpt_path", "{glasgow_ckpt}", "--data.init_args.seed", "4"),
        "data.init_args.seed = 0 there, 4 here",
    ),
    ("an abbreviated argument", glasgow("--trainer.max_step", "5"), "did you mean --trainer.max_steps?"),
    (
        "misspelt learner argument",
        glasgow("--model.init_args.training.lrr", "0.1"),
        "did you mean --model.init_args.training.lr?",
    ),
    (
        "a misspelt rate where it sat before the training group",
        glasgow("--model.init_args.lrr", "0.1"),
        "did you mean --model.init_args.training.lr?",
    ),
    (
        "a rate given where it sat before the training group",
        glasgow("--model.init_args.lr_w", "0.1"),
        "did you mean --model.init_args.training.lr_w?",
    ),
    ("misspelt data argument", glasgow("--data.init_args.dimm", "3"), "did you mean --data.init_args.dim?"),
    (
        "misspelt network argument",
        glasgow("--model.init_args.network.widht", "3"),
        "did you mean --model.init_args.network.width?",
    ),
    ("misspelt logger argument", glasgow("--trainer.logger.init_args.save_dri", "x"), "did you mean --trainer.logger"),
    ("misspelt top-level setting", glasgow("--seed_everythin", "3"), "did you mean --seed_everything?"),
    ("misspelt group", glasgow("--trainr.max_steps", "3"), "did you mean --trainer.max_steps?"),
    ("misspelt data model", glasgow("--data", "BooleanXor"), "did you mean BooleanXOR?"),
    ("misspelt learner", glasgow("--model", "TwoLayerNett"), "did you mean TwoLayerNet?"),
    ("misspelt observer", glasgow("--trainer.callbacks+", "XORPhaseDiagnostic"), "did you mean XORPhaseDiagnostics?"),
    (
        "two identical observers",
        glasgow("--trainer.callbacks+", "XORPhaseDiagnostics"),
        "has XORPhaseDiagnostics twice",
    ),
    (
        "misspelt key in a config file",
        glasgow("--config", "{typo_yaml}"),
        "typo.yaml: model.init_args.network.widht: TwoLayerNetwork takes no argument 'widht'; did you mean 'width'?",
    ),
    (
        "misspelt observer argument in a config file",
        glasgow("--config", "{typo_callback_yaml}"),
        "StepCheckpoint takes no argument 'every_n_step'; did you mean 'every_n_train_steps'?",
    ),
    (
        "misspelt flag with --print_config",
        glasgow("--trainer.max_stepz", "5", "--print_config"),
        "--trainer.max_steps?",
    ),
    (
        "misspelt setting of another subcommand",
        ["test", "--config", "glasgow_xor", "--ckpt_pth", "x"],
        "featlearn test",
    ),
    ("xor with one coordinate", glasgow("--data.init_args.dim", "1"), "data.dim must be an integer >= 2"),
    ("k > D", shi("--data.init_args.k", "200"), "data.k must be <= data.D"),
    ("batch size 0", glasgow("--data.init_args.batch_size", "0"), "data.batch_size"),
    ("negative training set", shi("--data.init_args.train_size", "-5"), "data.train_size"),
    ("schedule with a gap", glasgow("--model.init_args.training.lr", GAP), "model.training.lr"),
    (
        "schedule shorter than the run",
        glasgow("--model.init_args.training.lr", "[{start: 1, end: 2, value: 0.1}]"),
        "model.training.lr covers steps 1..2 but trainer.max_steps is 4",
    ),
    ("ensemble size 0", glasgow("--model.init_args.ensemble_size", "0"), "model.ensemble_size"),
    ("momentum 1.5", glasgow("--model.init_args.momentum", "1.5"), "model.momentum must lie in [0, 1)"),
    ("unknown loss", glasgow("--model.init_args.loss", "squared"), "model.loss"),
    ("unknown activation", glasgow("--model.init_args.network.activation", "tanh"), "activation"),
    ("a data model that does not exist", glasgow("--data", "NoSuchData"), "NoSuchData"),
    (
        "an observer without its ground truth",
        glasgow("--trainer.callbacks", "[{class_path: FeatureAlignment}]"),
        "FeatureAlignment reads GroundTruth.feature or centres or class_means",
    ),
    (
        "an observer without its data capability",
        glasgow("--trainer.callbacks", "[{class_path: PartAccuracy}]"),
        "PartAccuracy needs a data model that is a featlearn.contracts.PartedData",
    ),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The files the catalogue refers to, and a finished Glasgow run to resume."""
    root = tmp_path_factory.mktemp("bad_inputs")
    (root / "bad.yaml").write_text("trainer:\n  max_steps: [1\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "a_file").write_text("")
    (root / "typo.yaml").write_text("model: {init_args: {network: {widht: 8}}}\n")
    (root / "typo_callback.yaml").write_text(
        "trainer:\n  callbacks+:\n    - class_path: StepCheckpoint\n      init_args: {every_n_step: 5}\n"
    )
    run = root / "done"
    main(glasgow("--trainer.logger.init_args.save_dir", str(run), "--trainer.enable_progress_bar", "false"))
    checkpoint = next(run.rglob("last.ckpt"))
    return {
        "tmp": root,
        "bad_yaml": root / "bad.yaml",
        "list_yaml": root / "list.yaml",
        "a_file": root / "a_file",
        "typo_yaml": root / "typo.yaml",
        "typo_callback_yaml": root / "typo_callback.yaml",
        "glasgow_ckpt": checkpoint,
    }


@pytest.mark.parametrize(("name", "args", "expected"), CASES, ids=[case[0] for case in CASES])
def test_a_bad_input_gets_one_clean_message_naming_it(files, tmp_path, capsys, name, args, expected):
    runs = tmp_path / "runs"
    for key, value in files.items():  # {name} placeholders (YAML's own braces stay)
        args = [a.replace("{" + key + "}", str(value)) for a in args]
    if "--trainer.logger.init_args.save_dir" not in args:
        args += ["--trainer.logger.init_args.save_dir", str(runs)]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Traceback" not in err and "usage:" not in err
    lines = [line for line in err.splitlines() if line.startswith("featlearn: error:")]
    assert len(lines) == 1
    assert not list(runs.rglob("version_*")), "a failed start left a run folder behind"
    assert not runs.exists(), "a failed start created its save_dir"


def test_the_console_script_prints_the_message_alone_and_the_traceback_on_request(tmp_path):
    script = Path(sys.executable).parent / "featlearn"
    args = [
        str(script),
        *glasgow("--model.init_args.training.lr", "-0.1", "--trainer.logger.init_args.save_dir", str(tmp_path)),
    ]
    quiet = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert "featlearn: error: model.training.lr: value must be >= 0, got -0.1." in quiet.stderr
    loud = subprocess.run(
        args, capture_output=True, text=True, cwd=tmp_path, env={"FEATLEARN_TRACEBACK": "1", "PATH": "/usr/bin:/bin"}
    )
    assert loud.returncode != 0 and "Traceback" in loud.stderr
