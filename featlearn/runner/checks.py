"""Checks of a parsed run config, made before any object is built or any folder written.

A mistake found here costs nothing: the run has not started, no ``version_k`` folder
exists. Each error names the setting, the value and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import yaml
from jsonargparse import Namespace

from featlearn.datamodules.base import plain_value
from featlearn.runner.registry import grouped_arguments

#: ``--ckpt_path`` values Lightning resolves itself (not files).
CKPT_KEYWORDS = ("last", "best", "hpc", "registry")


def check_yaml_files(paths: list[str]) -> None:
    """Every ``--config`` file must be valid YAML holding a mapping.

    Raises:
        ValueError: Naming the file, the line and column, and the problem.
    """
    for path in paths:
        try:
            content = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError as err:
            raise ValueError(f"--config {path} is not valid YAML: {describe_yaml_error(err)}.") from None
        if content is not None and not isinstance(content, dict):
            kind = type(content).__name__
            raise ValueError(f"--config {path} must hold a mapping (trainer:, model:, data:), got a {kind}.")


def describe_yaml_error(err: yaml.YAMLError) -> str:
    """Where and what: ``while parsing a flow sequence (line 2, column 14): expected ',' or ']' (line 3, column 1)``."""

    def at(mark) -> str:
        return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""

    context, problem = getattr(err, "context", None), getattr(err, "problem", None)
    if problem is None:
        return " ".join(str(err).split())
    where = f"{context}{at(getattr(err, 'context_mark', None))}: " if context else ""
    return f"{where}{problem}{at(getattr(err, 'problem_mark', None))}"


def check_trainer(trainer) -> None:
    """Trainer settings that make no sense for featlearn's step-scheduled runs, or on this machine.

    Raises:
        ValueError: ``max_steps`` that is not a count >= 0, ``log_every_n_steps`` < 1,
            a GPU accelerator without a GPU, or a logger folder that cannot be written.
    """
    steps = trainer.get("max_steps")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(
            f"trainer.max_steps must be a number of update steps >= 0 (0: evaluate the initial network), got "
            f"{steps!r}: featlearn's runs count update steps (schedules, diagnostics and checkpoints are per step), "
            f"and {steps!r} would train forever. Set it, e.g. --trainer.max_steps 1000."
        )
    every = trainer.get("log_every_n_steps")
    if every is not None and (not isinstance(every, int) or every < 1):
        raise ValueError(f"trainer.log_every_n_steps must be an integer >= 1, got {every!r}.")
    accelerator = trainer.get("accelerator")
    if isinstance(accelerator, str) and accelerator.lower() in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"trainer.accelerator is {accelerator!r}, but this machine has no CUDA GPU that torch can use: "
            f"use --trainer.accelerator cpu, or auto (a GPU where there is one)."
        )
    logger = trainer.get("logger")
    init_args = logger.get("init_args") if hasattr(logger, "get") else None
    save_dir = init_args.get("save_dir") if init_args is not None else None
    if save_dir:
        check_writable_folder(Path(save_dir), "trainer.logger.init_args.save_dir")


def check_writable_folder(folder: Path, setting: str) -> None:
    """``folder`` can be created (or exists) and written, checked without creating anything.

    A run that then fails to start leaves no folder behind: the folder is made by the run
    itself, once it starts.

    Raises:
        ValueError: It is a file, lies under a file, or its nearest existing folder
            cannot be written.
    """
    existing = folder.absolute()
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link: mkdir would fail on it
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ValueError(f"{setting} = {str(folder)!r} is, or lies under, a file: choose a folder.")
    if not existing.exists():
        raise ValueError(
            f"{setting} = {str(folder)!r} cannot be created (a broken link on the way): choose another folder."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == folder.absolute() else f" (its folder {str(existing)!r})"
        raise ValueError(
            f"{setting} = {str(folder)!r} cannot be written{where}: permission denied. Choose another folder."
        )


def check_checkpoint_path(ckpt_path) -> None:
    """A ``--ckpt_path`` file must exist (Lightning's keywords pass).

    Raises:
        ValueError: The file does not exist, or is a folder.
    """
    if not ckpt_path or str(ckpt_path) in CKPT_KEYWORDS:
        return
    path = Path(ckpt_path)
    if not path.is_file():
        raise ValueError(
            f"--ckpt_path {str(path)!r} {'is a folder' if path.is_dir() else 'does not exist'}: give a checkpoint "
            f"file (runs/NAME/version_K/checkpoints/last.ckpt), or --ckpt_path last to resume the latest run "
            f"of this experiment."
        )


# ---------------------------------------------------------------------------- resuming
def checkpoint_step(path: Path) -> int | None:
    """The update step a checkpoint was saved at (its ``global_step``); None where it cannot be read."""
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"])
    except Exception:  # noqa: BLE001 - a file that is not a checkpoint: the resume's own load says why
        return None


def planned_steps(folder: Path) -> int | None:
    """``trainer.max_steps`` of the run in ``folder``, from its ``config.yaml``; None where it has none."""
    try:
        saved = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    steps = (saved.get("trainer") or {}).get("max_steps") if isinstance(saved, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def run_folders(experiment: Path) -> list[Path]:
    """The ``version_K`` folders of an experiment's training runs, by K.

    A training run's folder holds its ``config.yaml`` (or checkpoints); a folder that only
    ``featlearn test`` or ``validate`` made holds ``config_test.yaml`` or
    ``config_validate.yaml`` instead, and is no run to resume.
    """
    numbered = [
        f
        for f in experiment.glob("version_*")
        if f.name.removeprefix("version_").isdigit() and ((f / "config.yaml").is_file() or (f / "checkpoints").is_dir())
    ]
    return sorted(numbered, key=lambda f: int(f.name.removeprefix("version_")))


def resolve_last_checkpoint(config, subcommand: str = "fit") -> None:
    """``--ckpt_path last``: the latest run of this experiment, continued in its own folder, and never an older one.

    Lightning's own ``last`` looks in the new run's folder, which is empty. Here the run is
    the logger's ``save_dir/name/version`` folder when ``version`` is set, else the highest
    ``version_K``; its ``checkpoints/last.ckpt`` is taken and the logger is pointed at that
    folder, so the curves, pictures and checkpoints continue where they were (in place).

    Two cases are refused instead of guessed at: a latest run with no checkpoint (an older
    run is never taken in its place), and, for ``fit``, a run that already finished all its
    steps (extending it is a choice made by giving its checkpoint's path).

    Raises:
        ValueError: No run, a latest run without ``last.ckpt``, or a finished run; the
            message names the folder and the commands that go on.
    """
    if config.get("ckpt_path") != "last":
        return
    logger = (config.get("trainer") or {}).get("logger")
    init_args = logger.get("init_args") if hasattr(logger, "get") else None
    if init_args is None or not init_args.get("save_dir") or init_args.get("name") is None:
        return  # no versioned run folders: Lightning's own lookup
    experiment = Path(init_args["save_dir"]) / str(init_args["name"])
    version = init_args.get("version")
    if version is not None:
        folders = [experiment / (version if isinstance(version, str) else f"version_{version}")]
        folders = [f for f in folders if f.is_dir()]
    else:
        folders = run_folders(experiment)
    if not folders:
        raise ValueError(
            f"--ckpt_path last: no run under {str(experiment)!r} has a checkpoints/last.ckpt to resume. Start a new "
            f"run without --ckpt_path, or give the checkpoint's path."
        )
    folder = folders[-1]
    last = folder / "checkpoints" / "last.ckpt"
    if not last.is_file():
        older = [f / "checkpoints" / "last.ckpt" for f in folders[:-1] if (f / "checkpoints" / "last.ckpt").is_file()]
        other = f"; or, to go on with an older run, give its checkpoint: --ckpt_path {older[-1]}" if older else ""
        raise ValueError(
            f"--ckpt_path last: the latest run of this experiment, {str(folder)!r}, has no checkpoints/last.ckpt "
            f"(it stopped before its first checkpoint was written): there is nothing of it to resume. Start it again "
            f"without --ckpt_path{other}."
        )
    step, planned = checkpoint_step(last), planned_steps(folder)
    wanted = (config.get("trainer") or {}).get("max_steps")
    if subcommand == "fit" and step is not None and planned is not None and step >= planned:
        extend = (
            f"To extend it to {wanted} steps, say so by giving its checkpoint: --ckpt_path {last} (it goes on in "
            f"{folder.name})"
            if isinstance(wanted, int) and wanted > step
            else f"To train it further, raise --trainer.max_steps and give its checkpoint: --ckpt_path {last}"
        )
        raise ValueError(
            f"--ckpt_path last: the latest run of this experiment, {str(folder)!r}, finished all its {planned} update "
            f"steps: there is nothing to resume. {extend}; or start a new run without --ckpt_path."
        )
    config["ckpt_path"] = str(last)
    init_args["version"] = folder.name if version is None else version


def continue_in_checkpoint_folder(config) -> None:
    """A checkpoint in this experiment's ``save_dir/name/version_K/checkpoints/`` continues in ``version_K``.

    So an explicit ``--ckpt_path`` resumes the run where it was, as ``last`` does, instead
    of opening the next version folder. A version the user sets wins.
    """
    path = config.get("ckpt_path")
    logger = (config.get("trainer") or {}).get("logger")
    init_args = logger.get("init_args") if hasattr(logger, "get") else None
    if not path or str(path) in CKPT_KEYWORDS or init_args is None or init_args.get("version") is not None:
        return
    if not init_args.get("save_dir") or init_args.get("name") is None:
        return
    checkpoint = Path(path).resolve()
    run = checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else None
    if run is not None and run.parent == (Path(init_args["save_dir"]) / str(init_args["name"])).resolve():
        init_args["version"] = run.name


def check_resume(config, data_class: type | None, resume_free: tuple[str, ...]) -> None:
    """A checkpoint resumes only the run it was made by: the same learner, data and settings.

    LightningCLI would otherwise load the checkpoint's model settings over the ones given,
    silently. Here the checkpoint's learner class, data model and identity, and every model
    setting it stores are compared with this run's, before anything is built.

    Args:
        config: The parsed config of the subcommand.
        data_class: The configured data model's class, if featlearn's (its identity is compared).
        resume_free: Its constructor arguments that may change at a resume.

    Raises:
        ValueError: The checkpoint comes from another experiment (what it was made from is
            named), or this run changes a setting of the run it resumes (each one is named).
    """
    path = config.get("ckpt_path")
    if not path or str(path) in CKPT_KEYWORDS or not Path(path).is_file():
        return
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    hparams = dict(checkpoint.get("hyper_parameters") or {})
    made_by = str(hparams.pop("_class_path", "") or "")
    hparams.pop("_instantiator", None)
    data_states = {k: v["identity"] for k, v in checkpoint.items() if isinstance(v, dict) and "identity" in v}
    model_path, data_path = str(config.get("model.class_path") or ""), str(config.get("data.class_path") or "")
    data_name = data_path.rpartition(".")[2]
    other_model = made_by and made_by.rpartition(".")[2] != model_path.rpartition(".")[2]
    other_data = data_states and data_name not in data_states
    if other_model or other_data:
        raise ValueError(
            f"--ckpt_path {path} comes from another experiment: it was made by {describe_made_by(made_by, hparams)} "
            f"on {describe_data(data_states)}, and this run builds {model_path.rpartition('.')[2]} on {data_name}. "
            f"Resume with that experiment's configs (its run folder's config.yaml), or start without --ckpt_path."
        )
    changed = []
    if data_states and data_class is not None:
        given = plain_value(plain_arguments(config.get("data.init_args")))  # as the checkpoint keeps them
        saved = data_states[data_name]
        changed += [
            f"data.init_args.{k} = {saved[k]!r} there, {given[k]!r} here"
            for k in sorted(saved)
            if k in given and k not in resume_free and saved[k] != given[k]
        ]
    mine = _flat_arguments(plain_arguments(config.get("model.init_args")))
    theirs = _flat_arguments(grouped_arguments(model_path, hparams))  # a checkpoint of an earlier form too
    changed += [
        f"model.init_args.{k} = {theirs[k]!r} there, {mine[k]!r} here"
        for k in sorted(theirs)
        if k in mine and mine[k] is not None and theirs[k] != mine[k]
    ]
    if changed:
        raise ValueError(
            f"--ckpt_path {path} resumes a run made with other settings: {'; '.join(changed)}. A resumed run continues "
            f"as it was trained: drop the changes (give the run's own config.yaml), or start a new run without "
            f"--ckpt_path."
        )


def describe_made_by(class_path: str, hparams: dict) -> str:
    """``TwoLayerNet (input_dim 8, width 4)``: a learner from its checkpoint's hyperparameters."""
    name = class_path.rpartition(".")[2] or "an unknown learner"
    facts = [f"input_dim {hparams['input_dim']}"] if "input_dim" in hparams else []
    network = hparams.get("network")
    if isinstance(network, dict) and "width" in network:
        facts.append(f"width {network['width']}")
    return f"{name} ({', '.join(facts)})" if facts else name


def describe_data(states: dict) -> str:
    """``BooleanXOR (dim 8, pair [0, 1], ...)``: the data model a checkpoint was trained on."""
    if not states:
        return "an unknown data model"
    name, identity = next(iter(states.items()))
    shown = ", ".join(f"{k} {v}" for k, v in list(identity.items())[:4])
    return f"{name} ({shown}{', ...' if len(identity) > 4 else ''})"


def plain_arguments(value) -> dict:
    """A parsed config's ``init_args`` (a jsonargparse Namespace, a mapping or None) as a plain dict."""
    return value.as_dict() if isinstance(value, Namespace) else dict(value or {})


def _flat_arguments(arguments: dict, prefix: str = "") -> dict:
    """Nested arguments as dotted keys; a class spec ``{class_path, init_args}`` counts as its init_args."""
    flat = {}
    for key, value in plain_value(arguments).items():
        if isinstance(value, dict) and "class_path" in value:
            value = value.get("init_args") or {}
        if isinstance(value, dict):
            flat.update(_flat_arguments(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
