"""The classes a config may name by their short name (``class_path: TwoLayerNet``), imported explicitly.

LightningCLI finds a short ``class_path`` among the subclasses of the classes it was given,
once their modules are imported. featlearn's own lookups (a study reading a methods file,
the checks before a run) use this registry: the packages are imported here, where the
import contracts see them (``featlearn.runner`` sits above the data models, learners and
observers), instead of by name from the core.
"""

from __future__ import annotations

import importlib

import featlearn.callbacks
import featlearn.datamodules
import featlearn.models

#: Short name -> class: everything the parts export (their ``__all__``).
SHORT_NAMES: dict[str, type] = {
    name: getattr(package, name)
    for package in (featlearn.models, featlearn.datamodules, featlearn.callbacks)
    for name in package.__all__
    if isinstance(getattr(package, name), type)
}


def config_class(class_path) -> type | None:
    """The class a config's ``class_path`` names: a short name of :data:`SHORT_NAMES`, or a full dotted path.

    A dotted path is imported as LightningCLI imports it (a user's own module included).
    None where nothing of that name can be found.
    """
    if not isinstance(class_path, str) or not class_path:
        return None
    module, _, name = class_path.rpartition(".")
    if not module:
        return SHORT_NAMES.get(name)
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) else None
