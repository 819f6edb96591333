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
from featlearn.contracts import PerMemberValues

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


def grouped_arguments(class_path, init_args: dict) -> dict:
    """A learner's ``init_args`` of an earlier form in the present one: its per-point arguments in their group.

    A learner that keeps its per-grid-point arguments in a group (``TwoLayerNet``'s
    ``training``: ``MEMBER_VALUE_GROUP`` of :class:`~featlearn.contracts.PerMemberValues`)
    took them directly under ``init_args`` before November 2026 (``lr_w: ...``); they move
    into the group. Anything else is returned as it is.
    """
    learner = config_class(class_path)
    group = getattr(learner, "MEMBER_VALUE_GROUP", "") if isinstance(learner, PerMemberValues) else ""
    flat = [key for key in learner.MEMBER_VALUE_ARGUMENTS if key in init_args] if group else []
    if not flat:
        return init_args
    moved = {key: value for key, value in init_args.items() if key not in flat}
    moved[group] = {**(init_args.get(group) or {}), **{key: init_args[key] for key in flat}}
    return moved
