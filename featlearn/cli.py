"""The ``featlearn`` command line: a LightningCLI over featlearn's data models and learners.

``featlearn fit --config configs/experiments/glasgow_xor.yaml`` builds the data model,
the learner, the trainer and its callbacks from the config, trains, then evaluates
the test set. ``featlearn compare --config ... --seeds 5 --out DIR`` runs several
methods on one experiment (see :mod:`featlearn.compare`). ``configs/base.yaml``
(trainer defaults, logger, cadence) is loaded first when the repository's ``configs/``
folder is present; later ``--config`` files and command-line flags override it.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

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

#: The repository's config folder (present in a checkout / editable install).
CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
BASE_CONFIG = CONFIG_DIR / "base.yaml"


class RunFolderConfig(SaveConfigCallback):
    """Saves the resolved ``config.yaml`` into the run's log folder, and only there.

    A run without a logger has no folder; Lightning would write into the working
    directory instead, overwriting any ``config.yaml`` a user keeps there.
    """

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:  # noqa: D102
        if trainer.logger is None:
            return
        super().setup(trainer, pl_module, stage)


class FeatlearnCLI(LightningCLI):
    """LightningCLI with featlearn's links and the test run after ``fit``.

    * ``data.input_dim`` is linked into ``model.init_args.input_dim`` once the data
      model is built (so a config never states d twice).
    * The learner owns its optimizer and schedules (``auto_configure_optimizers``
      is off: ``--optimizer`` would silently replace them).
    * After ``fit``, the test set is evaluated (``test/loss``, ``test/error``) unless
      ``--test_after_fit false``.
    """

    def add_arguments_to_parser(self, parser) -> None:  # noqa: D102
        parser.link_arguments("data.input_dim", "model.init_args.input_dim", apply_on="instantiate")
        parser.add_argument("--test_after_fit", type=bool, default=True, help="Evaluate the test set after fit.")

    def after_fit(self) -> None:
        """Evaluate the test set on the final weights (skipped for fast_dev_run)."""
        config = self.config.get(self.subcommand, self.config)
        if not config.get("test_after_fit", True) or self.trainer.fast_dev_run:
            return
        if self.trainer.interrupted:
            return
        self.trainer.test(self.model, datamodule=self.datamodule, verbose=True)


def build_cli(args: list[str] | None = None, run: bool = True) -> FeatlearnCLI:
    """Build (and by default run) the command line; ``args`` default to ``sys.argv[1:]``.

    Args:
        args: Command-line arguments, e.g. ``["fit", "--config", "exp.yaml"]``.
        run: Run the subcommand (False: only build the objects, no subcommand).

    Returns:
        The CLI object (``cli.trainer``, ``cli.model``, ``cli.datamodule``).
    """
    defaults = [str(BASE_CONFIG)] if BASE_CONFIG.is_file() else []
    parser_kwargs = (
        {sub: {"default_config_files": defaults} for sub in ("fit", "validate", "test", "predict")}
        if run
        else {"default_config_files": defaults}
    )
    return FeatlearnCLI(
        model_class=pl.LightningModule,
        datamodule_class=featlearn.datamodules.SyntheticDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        auto_configure_optimizers=False,
        save_config_callback=RunFolderConfig,
        save_config_kwargs={"overwrite": True},
        parser_kwargs=parser_kwargs,
        args=args,
        run=run,
    )


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``featlearn`` console script and ``python -m featlearn``.

    ``featlearn compare ...`` runs :mod:`featlearn.compare`; every other subcommand
    (fit, validate, test, predict) is the LightningCLI's.
    """
    args = sys.argv[1:] if args is None else list(args)
    if args and args[0] == "compare":
        from featlearn.compare import main as compare_main

        compare_main(args[1:])
        return
    build_cli(args)


if __name__ == "__main__":
    main()
