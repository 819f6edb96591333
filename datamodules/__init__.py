"""Data models: distributions to learn from, one file each (``featlearn.datamodules``).

Importing a class here is what lets the command line find it by its short name
(``class_path: BooleanXOR``).
"""

from featlearn._guard import require_featlearn_namespace

require_featlearn_namespace(__name__, "datamodules")

from featlearn.datamodules.base import DataModel, HiddenVariableDataModule, SyntheticDataModule  # noqa: E402
from featlearn.datamodules.dictionary import DictionaryDataModule  # noqa: E402
from featlearn.datamodules.gaussian_mixture import GaussianMixture  # noqa: E402
from featlearn.datamodules.hidden_representation import HiddenRepresentation  # noqa: E402
from featlearn.datamodules.images import ImageDataModule  # noqa: E402
from featlearn.datamodules.sparse_coding import SparseCoding  # noqa: E402
from featlearn.datamodules.teacher_mixture import TeacherMixture  # noqa: E402
from featlearn.datamodules.tensors import LabelledTensors  # noqa: E402
from featlearn.datamodules.xor import BooleanXOR, Hypercube, SparseParity  # noqa: E402

__all__ = [
    "BooleanXOR",
    "DataModel",
    "DictionaryDataModule",
    "GaussianMixture",
    "HiddenVariableDataModule",
    "HiddenRepresentation",
    "Hypercube",
    "ImageDataModule",
    "LabelledTensors",
    "SparseCoding",
    "SparseParity",
    "SyntheticDataModule",
    "TeacherMixture",
]
