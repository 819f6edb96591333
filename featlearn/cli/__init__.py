"""The command line: ``featlearn fit|validate|test|predict`` and the commands beside them.

:mod:`featlearn.cli.main` is the console script: ``fit`` and the other LightningCLI
subcommands go to :mod:`featlearn.runner` (which builds one run from its configs), and
``compare``, ``samples``, ``teacher-check``, ``calibrate``, ``reproduce`` and ``configs`` to
:mod:`featlearn.studies`. Nothing below the command line imports it.
"""

from featlearn.cli.main import main
from featlearn.runner import FeatlearnCLI, build_cli

__all__ = ["FeatlearnCLI", "build_cli", "main"]
