"""The command line: ``featlearn fit|validate|test|predict`` and the commands beside them.

:mod:`featlearn.cli.lightning` is the LightningCLI (the config's data model, learner,
trainer and callbacks); :mod:`featlearn.cli.main` is the console script, which dispatches
``compare``, ``samples``, ``teacher-check`` and ``configs`` to :mod:`featlearn.studies`.
Nothing below the command line imports it.
"""

from featlearn.cli.lightning import FeatlearnCLI, build_cli
from featlearn.cli.main import main

__all__ = ["FeatlearnCLI", "build_cli", "main"]
