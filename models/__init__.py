"""Learners (``featlearn.models``): plain networks and the LightningModules that train them."""

from featlearn._guard import require_featlearn_namespace

require_featlearn_namespace(__name__, "models")

from featlearn.models.base import ScheduledSGDModule  # noqa: E402
from featlearn.models.classifier import ModuleClassifier  # noqa: E402
from featlearn.models.fc import QuadraticFC  # noqa: E402
from featlearn.models.linearize import Linearized  # noqa: E402
from featlearn.models.linearized import LinearizedTwoLayerNet  # noqa: E402
from featlearn.models.multiclass import MulticlassClassifier  # noqa: E402
from featlearn.models.networks import TwoLayerNetwork  # noqa: E402
from featlearn.models.probe import SteppedFeatureProbe  # noqa: E402
from featlearn.models.resnet import ScaledResNet18  # noqa: E402
from featlearn.models.two_layer import TwoLayerNet  # noqa: E402

__all__ = [
    "Linearized",
    "LinearizedTwoLayerNet",
    "ModuleClassifier",
    "MulticlassClassifier",
    "QuadraticFC",
    "ScaledResNet18",
    "ScheduledSGDModule",
    "SteppedFeatureProbe",
    "TwoLayerNet",
    "TwoLayerNetwork",
]
