"""featlearn: reproducible feature-learning experiments on PyTorch Lightning.

The data models live in :mod:`featlearn.datamodules`, the learners in
:mod:`featlearn.models`, the diagnostics in :mod:`featlearn.callbacks`; the
command line is :mod:`featlearn.cli` (``featlearn fit --config ...``).
"""

__version__ = "0.1.0"
