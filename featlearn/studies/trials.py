"""Trials: the unit of work of ``featlearn compare`` and ``featlearn samples``.

A *trial* is one ``featlearn fit`` of an ensemble (one member per seed) from a config
that a command derived from an experiment. Both commands treat trials the same way:

* **A folder per trial** holding ``config.yaml`` (run it alone with ``featlearn fit
  --config FOLDER/config.yaml``) and, once finished, ``result.json``: the trial's
  label, a digest of its config, its wall time and its per-seed metrics.
* **Resuming**: a trial whose ``result.json`` has the same digest as the config the
  command derives now is reused, not rerun. One whose digest differs stops the
  command (the experiment or an option changed; results must not mix) unless the
  command was given ``--overwrite``. A trial that did not finish restarts from
  scratch: its run is deterministic.
* **Where trials run** (:class:`Launcher`): in this process, one after the other (the
  default), or as independent jobs through submitit: on a SLURM cluster (a job array
  per round of trials) or in local subprocesses (``submitit-local``, what CI tests). A
  job runs :func:`run_trial_job` on the trial's config file, the same code as the
  local path.

The metrics of a trial, per seed (:func:`measure_run`): train accuracy on the finite
training set (None online), test accuracy on the data model's test set, and Cos
Similarity max_i cos(w_i, feature) of the final first layer (None where the learner
has no learned neurons or the data model no ``feature``), and for data models with
cluster ``centres`` (Gaussian mixtures) the fraction of centres some neuron covers
(cos >= 0.9, :func:`~featlearn.callbacks.alignment.centre_coverage`).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from omegaconf import OmegaConf

from featlearn.banners import quiet_lightning
from featlearn.config_files import resolve_config
from featlearn.contracts import Learner
from featlearn.runner.registry import config_class, grouped_arguments


class BuiltRun(Protocol):
    """A run :class:`BuildRun` made (a :class:`~featlearn.runner.FeatlearnCLI`): its trainer, learner and data."""

    trainer: Any
    model: Any
    datamodule: Any


class BuildRun(Protocol):
    """Builds one ``featlearn fit`` from its arguments, and trains it unless ``run`` is false.

    :func:`featlearn.runner.build_cli` (:func:`default_build`); the command line hands in the
    same function with its command's name, so an interrupted trial names the command to rerun.
    """

    def __call__(self, args: list[str], run: bool = True) -> BuiltRun:  # noqa: D102
        ...


def default_build() -> BuildRun:
    """The builder of one run that featlearn's commands use: :func:`featlearn.runner.build_cli`."""
    from featlearn.runner import build_cli

    return build_cli


#: Where trials can run (see :class:`Launcher`).
LAUNCHERS = ("local", "submitit-local", "slurm")


def merge_configs(base: dict, override: dict) -> dict:
    """Mappings merge key by key (recursively); any other override value replaces the base's.

    OmegaConf's merge, returned as plain containers; ``${...}`` strings are kept as written
    (LightningCLI, not this merge, reads the configs). Class specs (mappings with a
    ``class_path``) follow LightningCLI's rule: a new class keeps the earlier ``init_args``
    only if it is a subclass of the earlier class (the NTK's ``LinearizedTwoLayerNet`` over
    ``TwoLayerNet``); another class, or a class spec over a plain mapping of fields
    (``model/fc``'s ``network: {class_path: QuadraticFC, ...}`` over ``network: {width: 50}``),
    replaces the earlier mapping whole.
    """
    merged = OmegaConf.merge(OmegaConf.create(_without_replaced_fields(base, override)), OmegaConf.create(override))
    return OmegaConf.to_container(merged, resolve=False)


def _without_replaced_fields(base, override):
    """``base`` less the mappings that a class spec in ``override`` replaces whole (recursively)."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return base
    kept = {}
    for key, value in base.items():
        new = override.get(key)
        if isinstance(value, dict) and isinstance(new, dict) and _replaces(value, new):
            continue
        kept[key] = _without_replaced_fields(value, new) if key in override else value
    return kept


def _replaces(old: dict, new: dict) -> bool:
    """Whether the class spec ``new`` replaces ``old`` whole rather than merging into it."""
    if "class_path" not in new or new["class_path"] == old.get("class_path"):
        return False
    if "class_path" not in old:
        return True
    old_class, new_class = config_class(old["class_path"]), config_class(new["class_path"])
    if old_class is None or new_class is None:  # unknown here: merge, and let LightningCLI judge
        return False
    return not issubclass(new_class, old_class)


def merge_experiment(configs) -> tuple[dict, list[str]]:
    """One experiment from configs given in order: shipped names, paths, or mappings already loaded.

    Merged by :func:`merge_configs` (LightningCLI's rule for ``--config`` files); a layer with an
    ``apply_to(config) -> config`` method (:class:`~featlearn.studies.methods.StepValues`) changes
    what is merged before it. Also returns a name per config for titles (``overrides`` for a
    mapping, ``step values`` for such a layer).
    """
    experiment: dict = {}
    names = []
    for config in configs:
        if callable(getattr(config, "apply_to", None)):
            experiment = config.apply_to(experiment)
            names.append("step values")
        elif isinstance(config, Mapping):
            experiment = merge_configs(experiment, dict(config))
            names.append("overrides")
        else:
            experiment = merge_configs(experiment, load_yaml(resolve_config(config), "--config"))
            names.append(str(config))
    return experiment, names


def cli_flag(name: str) -> str:
    """How the command line spells a study's parameter: ``tune_seeds`` -> ``--tune-seeds``."""
    return "--" + name.replace("_", "-")


def set_path(config: dict, path: str, value, where: str) -> None:
    """Set ``config[a][b][c] = value`` for ``path = "a.b.c"`` (in place), creating missing mappings.

    Raises:
        ValueError: A key on the way holds something other than a mapping (``where`` names the setting).
    """
    keys = str(path).split(".")
    node = config
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            raise ValueError(f"{where}: {key!r} is not a mapping in the config ({child!r}).")
        node = child
    node[keys[-1]] = value


def get_path(config: dict, path: str, default=None):
    """The value at the dotted ``path`` of ``config`` (``training.lr_w``); ``default`` where missing or null."""
    node = config
    for key in str(path).split("."):
        if not isinstance(node, dict) or node.get(key) is None:
            return default
        node = node[key]
    return node


def load_yaml(path: Path, what: str) -> dict:
    """A YAML file holding a mapping; ``what`` names the option in errors."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist: give the path of a YAML file.")
    content = yaml.safe_load(path.read_text()) or {}
    if not isinstance(content, dict):
        raise ValueError(f"{what} {str(path)!r} must hold a mapping at top level, got {type(content).__name__}.")
    return content


def tensorboard_logger(save_dir: Path, name: str) -> dict:
    """A ``trainer.logger`` entry writing TensorBoard events to ``save_dir/name`` (no version folder)."""
    return {
        "class_path": "pytorch_lightning.loggers.TensorBoardLogger",
        "init_args": {"save_dir": str(save_dir), "name": name, "version": "", "default_hp_metric": False},
    }


def _located(config: dict, keep_logger_dirs: bool) -> bool:
    """Whether ``config`` says where it writes (a checkpoint, a root folder, or a logger's ``save_dir``)."""
    trainer = config.get("trainer") or {}
    loggers = trainer.get("logger")
    entries = loggers if isinstance(loggers, list) else [loggers]
    logs_where = not keep_logger_dirs and any(
        isinstance(e, dict) and "save_dir" in (e.get("init_args") or {}) for e in entries
    )
    return "ckpt_path" in config or "default_root_dir" in trainer or logs_where


def _without_locations(config: dict, keep_logger_dirs: bool) -> dict:
    """``config`` without ``ckpt_path``, ``trainer.default_root_dir`` and (unless kept) the loggers' ``save_dir``."""
    if not _located(config, keep_logger_dirs):
        return config
    trainer = {k: v for k, v in (config.get("trainer") or {}).items() if k != "default_root_dir"}
    config = {key: value for key, value in config.items() if key != "ckpt_path"}
    if not keep_logger_dirs and "logger" in trainer:  # an entry without a save_dir is kept as it is
        loggers = trainer["logger"]
        kept = [
            {**e, "init_args": {k: v for k, v in e["init_args"].items() if k != "save_dir"}}
            if isinstance(e, dict) and isinstance(e.get("init_args"), dict)
            else e
            for e in (loggers if isinstance(loggers, list) else [loggers])
        ]
        trainer["logger"] = kept if isinstance(loggers, list) else kept[0]
    config["trainer"] = trainer
    return config


def grouped_as_now(config: dict) -> dict:
    """A full config of an earlier form in the present one (:func:`~featlearn.runner.registry.grouped_arguments`).

    Anything that is not a config with ``model.init_args`` is returned as it is.
    """
    model = config.get("model") if isinstance(config, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("init_args"), dict):
        return config
    return {**config, "model": {**model, "init_args": grouped_arguments(model.get("class_path"), model["init_args"])}}


@dataclass
class Trial:
    """One ``featlearn fit`` of a command: its label, its folder and its full config.

    Args:
        label: How the command names it (unique within the command).
        folder: Holds ``config.yaml`` and ``result.json``.
        config: The full config (what ``featlearn fit --config`` reads).
        stale: Further folders the trial writes (e.g. TensorBoard events) that a rerun
            clears first.
    """

    label: str
    folder: Path
    config: dict
    stale: tuple[Path, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        """The config as YAML, in its keys' order."""
        return yaml.safe_dump(self.config, sort_keys=False)

    @property
    def digest(self) -> str:
        """SHA-256 of the config as YAML but for where it writes: a result is reused only for the same digest.

        ``trainer.default_root_dir``, ``ckpt_path`` (a halving rung's checkpoint folder and the
        checkpoint it resumes, :func:`~featlearn.studies.tuning.rung_config`) and each logger's
        ``save_dir`` (an absolute path into the study's folder) say where, not what: a study's
        folder moved or copied elsewhere keeps its results. A config without them is digested
        as :attr:`text`.
        """
        return self._digest(keep_logger_dirs=False)

    @property
    def legacy_digest(self) -> str:
        """The digest as featlearn wrote it before the loggers' ``save_dir`` was left out (November 2026).

        A result saved under it is reused in place (:meth:`finished`), and its ``result.json`` then
        takes the present digest, so a folder filled before keeps its results and moves freely after
        one rerun.
        """
        return self._digest(keep_logger_dirs=True)

    def _digest(self, keep_logger_dirs: bool) -> str:
        config = self.config
        if not _located(config, keep_logger_dirs):
            return hashlib.sha256(self.text.encode()).hexdigest()
        config = _without_locations(config, keep_logger_dirs)
        return hashlib.sha256(yaml.safe_dump(config, sort_keys=False).encode()).hexdigest()

    def same_as_saved_config(self) -> bool:
        """Whether the folder's ``config.yaml``, written in an earlier config form, is this config.

        Until November 2026 a two-layer learner's rates, decays and noise sat directly under
        ``model.init_args`` (``lr_w: ...``); they now form its ``training`` group. The saved
        config, moved into the present form (:func:`grouped_as_now`), is compared with this
        one key by key, except for where they write: so a study folder filled before keeps its results.
        """
        if not self.config_path.is_file():
            return False
        saved = grouped_as_now(yaml.safe_load(self.config_path.read_text()) or {})
        return _without_locations(saved, keep_logger_dirs=False) == _without_locations(self.config, False)

    @property
    def config_path(self) -> Path:  # noqa: D102
        return self.folder / "config.yaml"

    @property
    def result_path(self) -> Path:  # noqa: D102
        return self.folder / "result.json"

    def finished(self, overwrite: bool, changed: str) -> dict | None:
        """The saved result ``{"metrics", "seconds", ...}`` if this config finished earlier, else None.

        Raises:
            ValueError: A result for a different config is there and ``overwrite`` is false;
                ``changed`` says what may have changed.
        """
        if not self.result_path.is_file():
            return None
        saved = json.loads(self.result_path.read_text())
        if saved.get("digest") == self.digest:
            return saved
        if saved.get("digest") == self.legacy_digest or self.same_as_saved_config():  # an earlier form of this config
            # Upgraded in place: what reads the folder later (phases' rates) finds the present form.
            saved["digest"] = self.digest
            self.config_path.write_text(self.text)
            self.result_path.write_text(json.dumps(saved, indent=1))
            return saved
        if not overwrite:
            raise ValueError(
                f"{self.result_path} holds a result for a different config of {self.label!r} ({changed}). "
                f"Use a new --out, or --overwrite to discard it."
            )
        return None

    def prepare(self) -> Path:
        """Clear what an unfinished or outdated run left, write ``config.yaml``; returns its path."""
        for folder in (self.folder, *self.stale):
            shutil.rmtree(folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.config_path.write_text(self.text)
        return self.config_path

    def save(self, metrics: dict, seconds: float) -> dict:
        """Write ``result.json``; returns what it holds."""
        result = {"label": self.label, "digest": self.digest, "seconds": seconds, "metrics": metrics}
        self.result_path.write_text(json.dumps(result, indent=1))
        return result


# ---------------------------------------------------------------------- one run
def measure_run(config_path: Path, build: BuildRun) -> dict:
    """Train one trial's ensemble with ``featlearn fit`` and measure it per seed.

    Returns:
        ``{"train_acc": [...] | None, "test_acc": [...], "test_loss": [...], "val_acc": [...] | None,
        "cos_similarity": [...] | None,
        "train_majority": [...] | None, "test_majority": [...],
        "centre_coverage": [...] | None, "degenerate": [...] | None, "steps": int}`` with one
        value per member (per seed; a grid ensemble's G K members point by point), accuracies
        in percent, ``degenerate`` from the run's :class:`~featlearn.callbacks.DegenerateRuns`
        (None without one), and ``"diverged_members": {member: step}`` where members of a grid
        ensemble diverged; plus each diagnostic's per-member values
        (:meth:`~featlearn.callbacks.DiagnosticCallback.member_results`, e.g.
        ``boundary_step`` and ``margin_step`` of ``XORPhaseDiagnostics``).

    Raises:
        RuntimeError: Training stopped before ``trainer.max_steps`` without a callback's asking
            (``trainer.should_stop``, e.g. ParityProgress's ``stop_after_settled``).
        KeyboardInterrupt: The run was interrupted (Lightning catches Ctrl-C and returns).
    """
    import torch

    from featlearn.callbacks import DegenerateRuns, DiagnosticCallback
    from featlearn.callbacks.alignment import COVERAGE_THRESHOLD, centre_coverage, feature_alignment

    command = ["fit", "--config", str(config_path), "--test_after_fit", "false"]
    trainer_config = yaml.safe_load(config_path.read_text()).get("trainer") or {}
    scratch = None
    if trainer_config.get("logger") is False and not trainer_config.get("default_root_dir"):
        # A logger-less fit would checkpoint into the working directory (checkpoints/last.ckpt, every trial
        # over the last one's): a folder of its own instead, removed after; its config names none to keep.
        scratch = tempfile.mkdtemp(prefix="featlearn-trial-")
        command += ["--trainer.default_root_dir", scratch]
    argv, sys.argv = sys.argv, sys.argv[:1]  # the CLI warns when sys.argv holds other arguments
    try:
        with warnings.catch_warnings():
            # A halving rung resumes its checkpoint with the next rung's checkpoint interval: a new callback state.
            warnings.filterwarnings("ignore", message="Be aware that when using `ckpt_path`")
            cli = build(command)
    finally:
        sys.argv = argv
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    if trainer.interrupted:
        raise KeyboardInterrupt
    # A callback may end a run on purpose (ParityProgress once every seed learned): Lightning's trainer.should_stop.
    if trainer.max_steps and trainer.global_step < trainer.max_steps and not trainer.should_stop:
        raise RuntimeError(
            f"Training stopped at step {trainer.global_step} of trainer.max_steps = {trainer.max_steps} "
            f"(config {config_path}); a trial needs a complete run."
        )
    # Lightning hands the model back on the CPU after fit; measure it where it trained.
    model.to(trainer.strategy.root_device).eval()
    chunk = data.eval_batch_size
    test_x, test_y = data.eval_set("test")
    test_loss, test_error = model.evaluate_dataset(test_x, test_y, chunk=chunk)
    result: dict = {"steps": int(trainer.global_step), "test_acc": (100.0 * (1.0 - test_error)).tolist()}
    result["test_loss"] = test_loss.tolist()  # the training loss on the test set (Theorem 3.1's population loss)
    result["test_majority"] = majority_rate(test_y)
    result["val_acc"] = None
    val = data.eval_set("val") if data.set_size("val") else None
    if val is not None and val[1].shape[-1]:  # what compare tunes on
        _, val_error = model.evaluate_dataset(*val, chunk=chunk)
        result["val_acc"] = (100.0 * (1.0 - val_error)).tolist()
    result["train_acc"] = result["train_majority"] = None
    if data.set_size("train") is not None:
        train_x, train_y = data.train_set()
        _, train_error = model.evaluate_dataset(train_x, train_y, chunk=chunk)
        result["train_acc"] = (100.0 * (1.0 - train_error)).tolist()
        result["train_majority"] = majority_rate(train_y)
    # Members of a grid ensemble (model.member_values) that diverged while the others trained on.
    diverged = model.updates.diverged_members if isinstance(model, Learner) else None
    if diverged:
        result["diverged_members"] = {str(member): int(step) for member, step in diverged.items()}
    for callback in trainer.callbacks:  # per-member values of diagnostics (e.g. Glasgow's phase steps)
        if isinstance(callback, DiagnosticCallback):
            result.update(callback.member_results())
    checks = [callback for callback in trainer.callbacks if isinstance(callback, DegenerateRuns)]
    result["degenerate"] = checks[0].degenerate if checks else None
    features = model.first_layer_features()  # (S, p, d), None for the NTK: the same answer FeatureAlignment gets
    truths = data.ground_truth()
    truth, centres = truths.feature, truths.centres
    result["cos_similarity"] = result["centre_coverage"] = None
    if features is not None and truth is not None:
        with torch.no_grad():
            result["cos_similarity"] = [
                float(feature_alignment(w.double(), truth.to(w.device, torch.float64), 1, 0.0)["max_cos"])
                for w in features
            ]
    if features is not None and centres is not None:  # Gaussian mixtures: the fraction of centres found
        with torch.no_grad():
            result["centre_coverage"] = [
                float(
                    centre_coverage(w.double(), centres.to(w.device, torch.float64), COVERAGE_THRESHOLD)[
                        "centre_coverage"
                    ]
                )
                for w in features
            ]
    del cli, trainer, model, data
    gc.collect()
    return result


def majority_rate(labels) -> list[float]:
    r"""The trivial rate of each member's labels, in percent: the accuracy of always predicting the commonest class.

    .. math::  \mathrm{triv}_s = 100 \max_c \frac{1}{n} \sum_{i=1}^{n} \mathbf 1\{y_{s,i} = c\}

    Args:
        labels: y (S, n): one row per member (±1 for a binary task, class indices otherwise).

    Returns:
        S values in [0, 100]: a constant predictor's accuracy, which no result of a method may be confused with.
    """
    rates = []
    for row in labels.detach().reshape(labels.shape[0], -1).cpu():
        _, counts = row.unique(return_counts=True)
        rates.append(100.0 * float(counts.max()) / max(row.numel(), 1))
    return rates


def run_trial_job(config_path: str, build: BuildRun) -> dict:
    """What a submitit job runs: one trial from its config file; returns ``{"metrics", "seconds"}``.

    ``build`` is the command's own (:func:`featlearn.runner.build_cli`); submitit pickles it by
    name, so a study never imports the command line.
    """
    start = time.perf_counter()
    metrics = _measure_or_diverge(Path(config_path), build)
    return {"metrics": metrics, "seconds": time.perf_counter() - start}


def _measure_or_diverge(config_path: Path, build: BuildRun) -> dict:
    """:func:`measure_run`, or ``{"diverged": message}`` where training diverged."""
    try:
        return measure_run(config_path, build)
    except FloatingPointError as err:
        return {"diverged": str(err)}


def _raise_if_diverged(metrics: dict, divergence_ok: bool) -> None:
    if "diverged" in metrics and not divergence_ok:
        raise FloatingPointError(metrics["diverged"])


#: Whether this process has shown Lightning's banners once (later trials run quiet).
_BANNERS_SHOWN = [False]


# ---------------------------------------------------------------------- where trials run
@dataclass
class Launcher:
    """Where a command's trials run.

    Args:
        kind: ``local`` (this process, one trial after another), ``slurm`` (one submitit
            job per trial, a job array per round) or ``submitit-local`` (the same jobs as
            local subprocesses: the cluster's code path on one machine).
        folder: submitit's folder for job scripts and logs.
        partition: SLURM partition (``slurm_partition``).
        time_min: Wall-time limit of one trial's job, in minutes.
        gpus_per_trial: GPUs of one job (0: CPU jobs).
        cpus_per_trial: CPU cores of one job.
        mem_gb: Memory of one job, GiB.
        array_parallelism: The most jobs of an array running at once.
        account: SLURM account, if the cluster needs one.
    """

    kind: str = "local"
    folder: Path | None = None
    partition: str | None = None
    time_min: int = 60
    gpus_per_trial: int = 0
    cpus_per_trial: int = 2
    mem_gb: int = 16
    array_parallelism: int = 64
    account: str | None = None

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The launcher options shared by ``compare`` and ``samples``."""
        group = parser.add_argument_group("where trials run (submitit)")
        group.add_argument("--launcher", choices=LAUNCHERS, default="local", help="default: %(default)s")
        group.add_argument("--slurm-partition", default=None, help="SLURM partition of the trials' jobs.")
        group.add_argument("--slurm-account", default=None, help="SLURM account, where the cluster needs one.")
        group.add_argument("--slurm-time", type=int, default=60, help="Minutes per trial's job (default 60).")
        group.add_argument("--slurm-gpus", type=int, default=0, help="GPUs per trial's job (default 0).")
        group.add_argument("--slurm-cpus", type=int, default=2, help="CPU cores per trial's job (default 2).")
        group.add_argument("--slurm-mem-gb", type=int, default=16, help="Memory per trial's job, GiB (default 16).")
        group.add_argument("--array-parallelism", type=int, default=64, help="Most jobs running at once.")

    @classmethod
    def from_args(cls, args: argparse.Namespace, folder: Path) -> Launcher:
        """The launcher of parsed options; submitit writes its files under ``folder``.

        Raises:
            ValueError: A non-positive time, CPU count, memory or parallelism, or negative GPUs.
        """
        for name, value, minimum in (
            ("--slurm-time", args.slurm_time, 1),
            ("--slurm-gpus", args.slurm_gpus, 0),
            ("--slurm-cpus", args.slurm_cpus, 1),
            ("--slurm-mem-gb", args.slurm_mem_gb, 1),
            ("--array-parallelism", args.array_parallelism, 1),
        ):
            if value < minimum:
                raise ValueError(f"{name} must be >= {minimum}, got {value}.")
        return cls(
            kind=args.launcher,
            folder=folder,
            partition=args.slurm_partition,
            time_min=args.slurm_time,
            gpus_per_trial=args.slurm_gpus,
            cpus_per_trial=args.slurm_cpus,
            mem_gb=args.slurm_mem_gb,
            array_parallelism=args.array_parallelism,
            account=args.slurm_account,
        )

    def executor(self):
        """A configured ``submitit`` executor (for ``slurm`` and ``submitit-local``).

        Raises:
            ImportError: submitit is not installed (``pip install submitit``).
        """
        try:
            import submitit
        except ImportError as err:  # pragma: no cover - an install problem, said plainly
            raise ImportError(f"--launcher {self.kind} needs submitit: pip install submitit") from err
        cluster = "local" if self.kind == "submitit-local" else "slurm"
        executor = submitit.AutoExecutor(folder=str(self.folder / "%j"), cluster=cluster)
        params = {"timeout_min": self.time_min, "cpus_per_task": self.cpus_per_trial, "mem_gb": self.mem_gb}
        if self.gpus_per_trial:
            params["gpus_per_node"] = self.gpus_per_trial
        if cluster == "slurm":
            params["slurm_array_parallelism"] = self.array_parallelism
            if self.partition:
                params["slurm_partition"] = self.partition
            if self.account:
                params["slurm_account"] = self.account
        executor.update_parameters(name="featlearn-trial", **params)
        return executor


def run_trials(
    trials: Iterable[Trial],
    build: BuildRun,
    launcher: Launcher | None = None,
    overwrite: bool = False,
    changed: str = "the experiment or the command's options changed",
    log: Callable[[str], None] = print,
    on_result: Callable[[Trial, dict], None] | None = None,
    divergence_ok: bool = False,
) -> dict[str, dict]:
    """Run the trials not finished before; returns every trial's result by label.

    Finished trials (same config digest) are reused. Locally the others run one after
    the other in this process, ``on_result`` is called after each (e.g. to write a
    partial table). Through submitit they are submitted together, as one job array,
    and collected in order.

    With ``divergence_ok`` a trial whose training diverged is a result, ``{"diverged":
    message}`` (a grid point of a tuning search); otherwise it stops the command.

    Raises:
        ValueError: A trial's folder holds a result for another config (see :meth:`Trial.finished`).
        FloatingPointError: A trial diverged and ``divergence_ok`` is false.
    """
    launcher = launcher or Launcher()
    trials = list(trials)
    results: dict[str, dict] = {}
    todo: list[Trial] = []
    for trial in trials:  # check every trial before running any
        saved = trial.finished(overwrite, changed)
        if saved is not None:
            log(f"{trial.label}: finished earlier, reusing {trial.result_path}")
            results[trial.label] = saved
        else:
            todo.append(trial)
    if launcher.kind == "local":
        for trial in todo:
            path = trial.prepare()
            log(f"{trial.label}: featlearn fit --config {path}")
            start = time.perf_counter()
            with quiet_lightning(_BANNERS_SHOWN[0]):
                metrics = _measure_or_diverge(path, build)
            _BANNERS_SHOWN[0] = True
            _raise_if_diverged(metrics, divergence_ok)
            results[trial.label] = trial.save(metrics, time.perf_counter() - start)
            if on_result is not None:
                on_result(trial, results[trial.label])
    elif todo:
        executor = launcher.executor()
        paths = [str(trial.prepare()) for trial in todo]
        jobs = executor.map_array(run_trial_job, paths, [build] * len(paths))
        log(f"submitted {len(jobs)} trial(s) ({launcher.kind}): job ids {', '.join(j.job_id for j in jobs)}")
        for trial, job in zip(todo, jobs, strict=True):
            output = job.result()  # raises with the job's own traceback if it failed
            _raise_if_diverged(output["metrics"], divergence_ok)
            results[trial.label] = trial.save(output["metrics"], output["seconds"])
            if on_result is not None:
                on_result(trial, results[trial.label])
    return {trial.label: results[trial.label] for trial in trials}


# ---------------------------------------------------------------------- numbers
def summarize(values: list[float] | None) -> tuple[float | None, float | None, int]:
    """(mean, sample std with ddof 1, n); (None, None, 0) when not measured; std None for one seed."""
    if not values:
        return None, None, 0
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return mean, std, n


def csv_number(value: float | None) -> str:
    """A number as a CSV cell: empty when not measured."""
    return "" if value is None else repr(float(value))
