"""One ``featlearn fit`` (or validate, test, predict) built from its configs: the LightningCLI and its checks.

:mod:`featlearn.runner.lightning` is :class:`FeatlearnCLI` (the config's data model, learner,
trainer and callbacks, with featlearn's links, checks and result block) and
:func:`build_cli`, which builds and runs one from arguments. The command line
(:mod:`featlearn.cli`) and the studies (:mod:`featlearn.studies`, which run many fits) both
use it; it knows neither of them.

* :mod:`~featlearn.runner.checks`: what would fail later, refused before anything is built;
* :mod:`~featlearn.runner.errors`: a user's error as one line and exit status 2;
* :mod:`~featlearn.runner.interrupt`: Ctrl-C stops at a step boundary with a checkpoint;
* :mod:`~featlearn.runner.run_folder`: one run per folder (a lock);
* :mod:`~featlearn.runner.progress`, :mod:`~featlearn.runner.summary`: the bar and the result block;
* :mod:`~featlearn.runner.suggest`: the closest valid name for a misspelt one.
"""

from featlearn.runner.lightning import FeatlearnCLI, build_cli

__all__ = ["FeatlearnCLI", "build_cli"]
