"""Observers (``featlearn.callbacks``): diagnostics that read the network, never train it."""

from featlearn._guard import require_featlearn_namespace

require_featlearn_namespace(__name__, "callbacks")

from featlearn.callbacks.alignment import FeatureAlignment  # noqa: E402
from featlearn.callbacks.base import DiagnosticCallback, log_spaced_steps  # noqa: E402
from featlearn.callbacks.checkpoint import StepCheckpoint  # noqa: E402
from featlearn.callbacks.counts import CountAccuracy  # noqa: E402
from featlearn.callbacks.degenerate import DegenerateRuns  # noqa: E402
from featlearn.callbacks.filters import FilterDynamics  # noqa: E402
from featlearn.callbacks.heldout import HeldOutAccuracy  # noqa: E402
from featlearn.callbacks.parity import ParityProgress  # noqa: E402
from featlearn.callbacks.parts import PartAccuracy  # noqa: E402
from featlearn.callbacks.units import HiddenUnits  # noqa: E402
from featlearn.callbacks.xor_phase import XORPhaseDiagnostics  # noqa: E402

__all__ = [
    "CountAccuracy",
    "DegenerateRuns",
    "DiagnosticCallback",
    "FeatureAlignment",
    "FilterDynamics",
    "HeldOutAccuracy",
    "HiddenUnits",
    "ParityProgress",
    "PartAccuracy",
    "StepCheckpoint",
    "XORPhaseDiagnostics",
    "log_spaced_steps",
]
