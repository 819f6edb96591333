"""Multi-run studies: Python functions that derive, run and summarise many ``featlearn fit`` trials.

Each returns a dataclass a notebook can read; the command line (``featlearn compare ...``)
is a thin argparse layer over it::

    from featlearn.studies import compare, reproduce, samples, teacher_check

    table = compare(["shi_parity"], "runs/parity", only=["Network", "NTK"])  # Comparison
    table["Network"]["test_acc"]  # one test accuracy per seed
    report = reproduce("glasgow2023", "runs/glasgow", scale="smoke")  # Reproduction
    report.verdicts(verdict="differs")

* :func:`~featlearn.studies.compare.compare`: several methods on one experiment (:class:`Comparison`);
* :func:`~featlearn.studies.samples.samples`: the sample complexity n*(d) (:class:`SampleComplexityResult`);
* :func:`~featlearn.studies.teacher_check.teacher_check`: Figure 26's check of Algorithm 1;
* :func:`~featlearn.studies.calibration.calibrate`: a paper's open constants chosen once on one
  table, by a stated objective (:class:`Calibration`);
* :func:`~featlearn.studies.reproduce.reproduce`: a paper's plan and its report (:class:`Reproduction`).

:mod:`~featlearn.studies.trials` runs and reuses the fits (a trial's config, digest, resume,
submitit jobs). A study builds its fits with :func:`featlearn.runner.build_cli` unless it is
handed another ``build`` (the command line hands in its own, which names the command in an
interrupted run's hint).
"""

from featlearn.studies.calibration import Calibration, calibrate
from featlearn.studies.compare import CompareOptions, Comparison, compare
from featlearn.studies.reproduce import Reproduction, reproduce
from featlearn.studies.samples import SampleComplexityResult, samples
from featlearn.studies.teacher_check import TeacherSizeCheck, teacher_check

__all__ = [
    "Calibration",
    "CompareOptions",
    "Comparison",
    "Reproduction",
    "SampleComplexityResult",
    "TeacherSizeCheck",
    "calibrate",
    "compare",
    "reproduce",
    "samples",
    "teacher_check",
]
