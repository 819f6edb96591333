"""featlearn: reproducible feature-learning experiments on PyTorch Lightning.

The data models live in :mod:`featlearn.datamodules`, the learners in
:mod:`featlearn.models`, the diagnostics in :mod:`featlearn.callbacks`, the
shipped configs in ``featlearn.configs``; the console script is :mod:`featlearn.cli`
(``featlearn fit --config glasgow_xor``).
"""

__version__ = "0.1.0"
