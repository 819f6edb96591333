"""featlearn's LightningCLI: ``featlearn fit|validate|test|predict`` over its data models and learners.

``featlearn fit --config glasgow_xor`` builds the data model, the learner, the
trainer and its callbacks from the config, trains, then evaluates the test set. The
shipped ``base.yaml`` (trainer defaults, logger, cadence) is loaded first in every
install; later ``--config`` files (paths, or names of shipped configs, see
:mod:`featlearn.config_files`) and command-line flags override it. The console script
and the other commands dispatch from :mod:`featlearn.cli.main`.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Optional

# pytorch_lightning.cli calls jsonargparse APIs that jsonargparse 4.49+ marks as
# deprecated; the warnings are Lightning's to fix and only confuse users.
os.environ.setdefault("JSONARGPARSE_DEPRECATION_WARNINGS", "off")
# Our learners step manually and a checkpoint holds the weights *after* the step of
# its step count: exactly what resuming needs, so Lightning's caution is noise here.
warnings.filterwarnings("ignore", message="Using ModelCheckpoint with manual optimization")
# Raised inside Lightning by torch 2.14's pytree; nothing a user can act on.
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)")

import pytorch_lightning as pl  # noqa: E402
from pytorch_lightning.cli import LightningCLI, SaveConfigCallback  # noqa: E402

# Importing the packages registers their classes for short names (class_path: BooleanXOR).
import featlearn.callbacks  # noqa: E402, F401
import featlearn.datamodules  # noqa: E402
import featlearn.models  # noqa: E402, F401
from featlearn.banners import hide_advertisements  # noqa: E402
from featlearn.config_files import base_config, config_files, resolve_config_args  # noqa: E402
from featlearn.contracts import DataDerivedConstants, Relabelable  # noqa: E402
from featlearn.datamodules import DataModel  # noqa: E402
from featlearn.runner.checks import (  # noqa: E402
    check_checkpoint_path,
    check_resume,
    check_trainer,
    check_yaml_files,
    continue_in_checkpoint_folder,
    plain_arguments,
    resolve_last_checkpoint,
)
from featlearn.runner.errors import exception_chain  # noqa: E402
from featlearn.runner.interrupt import StopAtStepBoundary  # noqa: E402
from featlearn.runner.progress import StepProgressBar  # noqa: E402
from featlearn.runner.registry import config_class  # noqa: E402
from featlearn.runner.run_folder import holds, lock_run_folder, release_run_folder  # noqa: E402
from featlearn.runner.suggest import suggest_correction, without_actions  # noqa: E402
from featlearn.runner.summary import result_block  # noqa: E402
from featlearn.teacher import TeacherSearch  # noqa: E402
from featlearn.validation import check_int  # noqa: E402

hide_advertisements()


class RunFolderConfig(SaveConfigCallback):
    """Saves the resolved ``config.yaml`` into the run's log folder, and keeps the folder the run's alone.

    A run without a logger has no folder; Lightning would write into the working
    directory instead, overwriting any ``config.yaml`` a user keeps there. The run holds
    its folder's lock (:mod:`featlearn.runner.run_folder`): a second process aimed at it is
    refused. A run that fails before its first update leaves no new folder behind.
    """

    def __init__(self, *args, study: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: The study command that runs this fit (``compare``...), None for ``featlearn fit`` itself.
        self.study = study
        #: The subcommand of the run: the first stage set up (``fit`` also tests after fitting).
        self.command: str | None = None

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        """Save the config; ``test``, ``validate`` or ``predict`` on a run's checkpoint as ``config_<stage>.yaml``.

        So an evaluation in a training run's folder never overwrites the config the run
        was trained with (``--ckpt_path last`` reads its ``max_steps``), and a folder that
        only an evaluation made holds no ``config.yaml``: it is no training run to resume.
        """
        stage = str(getattr(stage, "value", stage))  # Lightning passes a TrainerFn ("fit", "test", ...)
        self.command = self.command or stage
        if trainer.logger is None:
            return
        if stage != "fit":
            self.config_filename = f"config_{stage}.yaml"
        super().setup(trainer, pl_module, stage)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """Say how to resume an interrupted run; remove the folder of a run that failed before training.

        Lightning ends the process after a Ctrl-C without the command's own end, so the
        block that says where the run stopped and how to resume it is printed here. The
        folder of a failed start goes if the run made it (the logger's next version).
        """
        folder = run_folder_of(trainer)
        if isinstance(exception, KeyboardInterrupt) and trainer.is_global_zero:
            command = self.command or trainer.state.fn.value
            print("\n" + result_block(trainer, command, folder, study=self.study), flush=True)
        if folder is None or not trainer.is_global_zero or not holds(folder):
            return
        logger_args = (self.config.get("trainer") or {}).get("logger")
        made_here = hasattr(logger_args, "get") and (logger_args.get("init_args") or {}).get("version") is None
        failed_start = trainer.global_step == 0 and not isinstance(exception, KeyboardInterrupt)
        release_run_folder(folder, remove=made_here and failed_start)


def run_folder_of(trainer: pl.Trainer) -> Path | None:
    """The run's folder (its first logger's ``log_dir``), without creating anything; None without a logger."""
    logger = trainer.logger
    folder = getattr(logger, "log_dir", None) if logger is not None else None
    return Path(folder) if folder else None


class FeatlearnCLI(LightningCLI):
    """LightningCLI with featlearn's links and the test run after ``fit``.

    * ``data.input_dim`` is linked into ``model.init_args.input_dim`` once the data
      model is built (so a config never states d twice).
    * ``model.init_args.ensemble_size`` is copied into ``data.init_args.ensemble_size``
      before either is built: one number says how many independent runs train together.
    * Constants of a paper's process that a config leaves null are filled from the
      data model's ``process_constants()``, where the learner class declares them
      (:class:`~featlearn.contracts.DataDerivedConstants`; for ``TwoLayerNet``:
      ``init.sigma_w``, ``sigma_b``, ``sigma_a``, null segment values of ``training.noise_std``
      from ``sigma_xi``, and ``positive_rate``). So ``--data.init_args.k 7`` on a Shi
      experiment trains with k = 7's constants, and a number a user writes always wins.
    * The learner owns its optimizer and schedules (``auto_configure_optimizers``
      is off: ``--optimizer`` would silently replace them).
    * A top-level ``teacher:`` section (a :class:`~featlearn.teacher.TeacherSearch`)
      runs Shi et al.'s Algorithm 1 before ``fit``, ``validate`` and ``test``: it
      chooses, trains (or loads from its cache) the teacher and labels the
      :class:`~featlearn.datamodules.TeacherMixture` data model.
    * After ``fit``, the test set is evaluated (``test/loss``, ``test/error``) unless
      ``--test_after_fit false``; ``fit``, ``validate`` and ``test`` end with a result block
      (:mod:`featlearn.runner.summary`).
    * Before anything is built, the trainer settings and the checkpoint are checked
      (:mod:`featlearn.runner.checks`): ``--ckpt_path last`` becomes the latest run of the
      experiment, a resume continues in its run folder, and a checkpoint of another
      experiment or a changed setting is refused by name.
    * A run holds its folder's lock from before Lightning writes into it
      (:mod:`featlearn.runner.run_folder`), and a failed start removes the folder it made.
    """

    def add_arguments_to_parser(self, parser) -> None:  # noqa: D102
        parser.link_arguments("data.input_dim", "model.init_args.input_dim", apply_on="instantiate")
        # The network a learner is handed takes d too, where it has an input_dim (TwoLayerNetwork).
        parser.link_arguments("data.input_dim", "model.init_args.network.init_args.input_dim", apply_on="instantiate")
        parser.add_argument("--test_after_fit", type=bool, default=True, help="Evaluate the test set after fit.")
        parser.add_argument(
            "--teacher",
            type=Optional[TeacherSearch],  # noqa: UP045 - jsonargparse reads the annotation
            default=None,
            help="Algorithm 1 of Shi et al. (E.5): the teacher that labels a TeacherMixture data model.",
        )

    def parse_arguments(self, parser, args) -> None:
        """Parse, then check what would fail later (trainer settings, the checkpoint), before anything is built.

        The learner's ensemble size is given to the data model and its null process
        constants are filled here, so that a resume compares the settings as the run
        resolved them (its checkpoint keeps the filled values).
        """
        argv = list(sys.argv[1:] if args is None else args) if not isinstance(args, dict) else None
        try:
            if argv is not None and without_actions(argv) != argv:
                parser.parse_args(without_actions(argv))  # --print_config would print, ignoring a misspelt flag
            super().parse_arguments(parser, args)
        except Exception as error:  # the parser's own errors: name the closest valid name where there is one
            text = "\n".join(str(e) for e in exception_chain(error))
            correction = suggest_correction(text, argv, parser.parse_args) if argv is not None else None
            if correction:
                raise ValueError(correction) from None
            raise
        config = self.config.get(self.config.get("subcommand") or "", self.config)
        check_trainer(config.get("trainer") or {})
        resolve_last_checkpoint(config, self.config.get("subcommand") or "fit")
        check_checkpoint_path(config.get("ckpt_path"))
        continue_in_checkpoint_folder(config)
        # Before the resume check: a checkpoint keeps the constants the data model filled in.
        share_ensemble_size(config)
        fill_process_constants(config)
        data_class = config_class(config.get("data.class_path"))
        featlearn_data = isinstance(data_class, type) and issubclass(data_class, DataModel)
        check_resume(config, data_class, data_class.resume_free_arguments if featlearn_data else ())

    def instantiate_trainer(self, **kwargs) -> pl.Trainer:
        """The trainer of the config, with the callbacks every featlearn run has whatever its config lists.

        :class:`~featlearn.runner.interrupt.StopAtStepBoundary` (Ctrl-C stops at a step boundary
        with a checkpoint) and, where the bar is on and the config names none, the
        :class:`~featlearn.runner.progress.StepProgressBar` (update steps of ``max_steps``).
        """
        trainer = (
            self.config_init.get(self.subcommand, self.config_init) if self.subcommand else self.config_init
        ).get("trainer") or {}
        callbacks = trainer.get("callbacks") or []
        callbacks = list(callbacks) if isinstance(callbacks, list) else [callbacks]
        check_distinct_states(callbacks)
        callbacks.append(StopAtStepBoundary())
        has_bar = any(isinstance(c, pl.callbacks.ProgressBar) for c in callbacks)
        if trainer.get("enable_progress_bar", True) is not False and not has_bar:
            callbacks.append(StepProgressBar())
        return super().instantiate_trainer(**{**kwargs, "callbacks": callbacks})

    def before_fit(self) -> None:  # noqa: D102
        self._hold_run_folder()
        self._label_with_teacher()

    def before_validate(self) -> None:  # noqa: D102
        self._hold_run_folder()
        self._label_with_teacher()

    def before_test(self) -> None:  # noqa: D102
        self._hold_run_folder()
        self._label_with_teacher()

    def _hold_run_folder(self) -> None:
        """Take the run folder's lock before Lightning writes anything into it (its logger's events)."""
        folder = run_folder_of(self.trainer)
        if folder is not None and self.trainer.is_global_zero:
            try:
                lock_run_folder(folder)
            except OSError as err:  # a folder no check can foresee (/proc, a full disk, a read-only mount)
                raise ValueError(
                    f"trainer.logger.init_args.save_dir: the run folder {str(folder)!r} cannot be created "
                    f"({err.strerror or err}): choose a folder you can write, e.g. "
                    f"--trainer.logger.init_args.save_dir runs."
                ) from None

    def _label_with_teacher(self) -> None:
        """Run the config's ``teacher:`` on the data model (or refuse a mixture that no teacher labels)."""
        config = self.config_init.get(self.subcommand, self.config_init)
        teacher = config.get("teacher")
        data = self.datamodule
        takes_labels = isinstance(data, Relabelable)
        if teacher is None:
            if takes_labels and not data.is_labelled:
                raise ValueError(
                    f"{type(data).__name__} is labelled by a teacher, and the config has no `teacher:` section: add "
                    f"one (class_path: TeacherSearch, see configs/experiments/shi_teacher_mnist5k_gaussian.yaml)."
                )
            return
        if not takes_labels:
            raise ValueError(
                f"The config's `teacher:` labels a TeacherMixture data model, but data is {type(data).__name__}: "
                f"remove the teacher section or use data.class_path: TeacherMixture."
            )
        teacher.run(data, self.trainer)

    def after_fit(self) -> None:
        """Evaluate the test set on the final weights (skipped for fast_dev_run), then print the result block."""
        config = self.config.get(self.subcommand, self.config)
        if config.get("test_after_fit", True) and not self.trainer.fast_dev_run and not self.trainer.interrupted:
            self.trainer.test(self.model, datamodule=self.datamodule, verbose=False)
        self._finish_run("fit")

    def after_validate(self) -> None:  # noqa: D102
        self._finish_run("validate")

    def after_test(self) -> None:  # noqa: D102
        self._finish_run("test")

    def _finish_run(self, command: str) -> None:
        """Print the end-of-run block (:func:`featlearn.runner.summary.result_block`) once, and let the folder go."""
        folder = run_folder_of(self.trainer)
        if self.trainer.is_global_zero and not self.trainer.fast_dev_run:
            print("\n" + result_block(self.trainer, command, folder), flush=True)
        if folder is not None:
            release_run_folder(folder)


def build_cli(args: list[str] | None = None, run: bool = True, study: str | None = None) -> FeatlearnCLI:
    """Build (and by default run) the command line; ``args`` default to ``sys.argv[1:]``.

    Args:
        args: Command-line arguments, e.g. ``["fit", "--config", "exp.yaml"]``.
        run: Run the subcommand (False: only build the objects, no subcommand).
        study: The study command that builds this run (``compare``...): an interrupted run
            then says to rerun that command, which reuses what finished.

    Returns:
        The CLI object (``cli.trainer``, ``cli.model``, ``cli.datamodule``).
    """
    if args is None:  # the console script: resolve in place, so LightningCLI reads sys.argv as usual
        sys.argv[1:] = resolve_config_args(sys.argv[1:])
        check_yaml_files(config_files(sys.argv[1:]))
    else:
        args = resolve_config_args(list(args))
        check_yaml_files(config_files(args))
    defaults = [str(base_config())]
    # The parser raises its errors instead of printing its usage and exiting: featlearn.runner.errors
    # turns them into one message.
    # No abbreviations: `--trainer.max_step 5` must be refused (with the name it means), not taken as max_steps.
    parser_settings = {"default_config_files": defaults, "exit_on_error": False, "allow_abbrev": False}
    parser_kwargs = (
        {
            "exit_on_error": False,
            "allow_abbrev": False,
            **{sub: parser_settings for sub in ("fit", "validate", "test", "predict")},
        }
        if run
        else parser_settings
    )
    return FeatlearnCLI(
        model_class=pl.LightningModule,
        datamodule_class=featlearn.datamodules.DataModel,
        subclass_mode_model=True,
        subclass_mode_data=True,
        auto_configure_optimizers=False,
        save_config_callback=RunFolderConfig,
        save_config_kwargs={"overwrite": True, "study": study},
        parser_kwargs=parser_kwargs,
        args=args,
        run=run,
    )


def share_ensemble_size(config) -> None:
    """Copy ``model.init_args.ensemble_size`` into ``data.init_args.ensemble_size`` (in place).

    Raises:
        ValueError: If the config gives the data model another ensemble size (other than 1).
    """
    size = config.get("model.init_args.ensemble_size")
    data_args = config.get("data.init_args")
    if size is None or data_args is None:
        return
    check_int("model.ensemble_size", size, 1)  # before the data model gets it: the message names what was set
    if "ensemble_size" not in data_args:
        if size != 1:
            raise ValueError(
                f"model.init_args.ensemble_size = {size}, but {config.get('data.class_path')} takes no "
                f"ensemble_size: use a data model built on featlearn.datamodules.DataModel (one stream per member), or "
                f"model.init_args.ensemble_size: 1."
            )
        return
    given = data_args.get("ensemble_size")
    if given not in (1, size):
        raise ValueError(
            f"data.init_args.ensemble_size = {given} but model.init_args.ensemble_size = {size}: set the "
            f"ensemble size on the model only; the command line gives the data model the same number."
        )
    data_args["ensemble_size"] = size


def fill_process_constants(config) -> None:
    """Fill the learner's null process constants from the data model's ``process_constants()`` (in place).

    The learner class says which of its arguments are such constants for this config
    (:class:`~featlearn.contracts.DataDerivedConstants`); this function knows no learner's
    argument names. Only a config that leaves one null pays for building the data model here.

    Raises:
        ValueError: If a null constant has no value from the data model.
    """
    learner, init_args = config_class(config.get("model.class_path")), config.get("model.init_args")
    if init_args is None or not isinstance(learner, DataDerivedConstants):
        return
    wanted = learner.unset_data_constants(plain_arguments(init_args))
    if not wanted:
        return
    data = config.get("data")
    constants = config_class(data.class_path)(**plain_arguments(data.get("init_args"))).process_constants()
    for path, name in wanted.items():
        if name not in constants:
            raise ValueError(
                f"model.init_args.{path} is null, to be derived from the data model's {name}, but "
                f"{config.get('data.class_path')} states no {name}: set a number."
            )
        _set_argument(init_args, path, constants[name])


def _set_argument(init_args, path: str, value) -> None:
    """Set the dotted ``path`` (``init.sigma_w``, ``training.noise_std.0.value``: list positions as numbers)."""
    *parents, last = path.split(".")
    node = init_args
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value


def check_distinct_states(callbacks: list) -> None:
    """Two callbacks with state must differ in settings: a checkpoint keeps each state under its ``state_key``.

    Lightning finds the clash only when it builds the trainer, and raises a RuntimeError
    with a traceback; here it is a one-line error that names the callback.

    Raises:
        ValueError: Two stateful callbacks share a ``state_key`` (the same class, the same settings).
    """
    seen: set[str] = set()
    for callback in callbacks:
        if not isinstance(callback, pl.Callback) or type(callback).state_dict is pl.Callback.state_dict:
            continue
        key = callback.state_key
        if key in seen:
            raise ValueError(
                f"trainer.callbacks has {type(callback).__name__} twice with the same settings: a checkpoint could not "
                f"tell their states "
                f"apart. Drop one (`callbacks+:` in a config and `--trainer.callbacks+` add to the lists of base.yaml "
                f"and the experiment), or give the second other settings."
            )
        seen.add(key)
