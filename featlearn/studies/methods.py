"""The methods of a comparison: a methods file's entries, and each method's full config.

A methods file (``featlearn compare --methods``; shipped: ``compare/shi``) maps a method's
name to overrides of the experiment config, written in the config's own shape (``model``,
``data``, ``trainer``), plus ``without_structure: true`` for the data model's variant
without input structure, ``skip_steps`` and ``freeze_first_layer_from`` to reshape the
process, and ``tune:`` for a grid of its free constants (:mod:`featlearn.studies.tuning`).
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from featlearn.config_files import resolve_config
from featlearn.contracts import FirstLayerArguments
from featlearn.runner.registry import config_class
from featlearn.schedules import (
    canonical_segments,
    hold_from,
    is_segment_list,
    map_arguments,
    set_at_step,
    skip_steps,
)
from featlearn.studies.trials import get_path, load_yaml, merge_configs, set_path, tensorboard_logger

#: The default methods file: Table 1 of Shi et al. (2022).
DEFAULT_METHODS = "compare/shi"

_METHOD_KEYS = {
    "model",
    "data",
    "trainer",
    "without_structure",
    "tune",
    "skip_steps",
    "freeze_first_layer_from",
    "from_step",
}


@dataclass
class Method:
    """One column of the comparison: overrides of the experiment config."""

    name: str
    overrides: dict = field(default_factory=dict)
    without_structure: bool = False
    #: Grid of the method's free constants: ``"dotted.path[|dotted.path...]": [values]``; the
    #: paths joined by ``|`` take the same value (e.g. the NTK's three rates). A path ending in
    #: ``@t`` (``model.init_args.training.lr_w@3``) sets a per-step schedule's value from step t
    #: on and keeps the experiment's steps before t (:func:`~featlearn.schedules.hold_from`), so a
    #: grid over a process's late rate leaves its early steps to the experiment (or its calibration).
    tune: dict = field(default_factory=dict)
    #: Steps of the experiment's process this method leaves out (every per-step schedule
    #: of ``model`` and ``data`` loses them, later steps move down, ``max_steps`` shrinks).
    skip_steps: tuple[int, ...] = ()
    #: The first layer (w and b) takes no update from this step on (after ``skip_steps``).
    freeze_first_layer_from: int | None = None
    #: Schedules set from a step on, after the merge: dotted path -> (step t, value); a tuned ``path@t``.
    tails: dict = field(default_factory=dict)

    def grid(self) -> list[dict[str, object]]:
        """Every combination of the tuned values, in the file's order: [{key: value}]."""
        keys = list(self.tune)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(self.tune[k] for k in keys))]

    def with_values(self, values: dict[str, object]) -> Method:
        """This method with the tuned ``values`` written into its overrides (no grid left)."""
        overrides = copy.deepcopy(self.overrides)
        tails = dict(self.tails)
        for key, value in values.items():
            for path in key.split("|"):
                if "@" in path:  # a schedule's value from step t on: applied after the merge (method_config)
                    dotted, step = path.rsplit("@", 1)
                    tails[dotted] = (int(step), value)
                else:
                    set_path(overrides, path, value, f"Method {self.name!r}: tune.{key}")
        return replace(self, overrides=overrides, tune={}, tails=tails)

    @property
    def slug(self) -> str:
        """A folder name: ``Network w/o structure`` -> ``network_w_o_structure``."""
        return re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")


def load_methods(path: Path, only: list[str] | None = None) -> list[Method]:
    """Read a methods file: ``methods: {name: {model: ..., data: ..., trainer: ..., without_structure: bool}}``.

    ``base: <methods file>`` (a path or a shipped name) starts from that file's methods, in
    its order: an entry of the same name is merged into the inherited one (mappings key by
    key, a ``tune`` grid's list replaced), a new name is added at the end.

    Args:
        path: The YAML file.
        only: Keep these methods (by name), in the file's order.

    Raises:
        ValueError: On an unknown key, a non-mapping entry, or an unknown name in ``only``.
    """
    content = load_yaml(path, "--methods")
    entries = content.get("methods")
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"--methods {str(path)!r} needs a non-empty mapping 'methods: {{name: overrides}}'.")
    base = content.get("base")
    if base is not None:  # another methods file, whose methods these entries edit (or extend)
        inherited = load_yaml(resolve_config(str(base)), f"base: of {str(path)!r}").get("methods") or {}
        entries = {
            **{name: merge_configs(spec or {}, entries.get(name) or {}) for name, spec in inherited.items()},
            **{name: spec for name, spec in entries.items() if name not in inherited},
        }
    methods = []
    for name, spec in entries.items():
        spec = {} if spec is None else copy.deepcopy(spec)  # a YAML alias shares one mapping between methods
        if not isinstance(spec, dict):
            raise ValueError(f"Method {name!r} in {str(path)!r} must be a mapping of overrides, got {spec!r}.")
        unknown = set(spec) - _METHOD_KEYS
        if unknown:
            raise ValueError(
                f"Method {name!r} in {str(path)!r} has unknown keys {sorted(unknown)}; allowed: {sorted(_METHOD_KEYS)}."
            )
        without = spec.pop("without_structure", False)
        if not isinstance(without, bool):
            raise ValueError(f"Method {name!r}: without_structure must be true or false, got {without!r}.")
        tune = spec.pop("tune", None) or {}
        if not isinstance(tune, dict) or any(not isinstance(v, list) or not v for v in tune.values()):
            raise ValueError(
                f"Method {name!r}: tune must map dotted config paths to non-empty lists of values, got {tune!r}."
            )
        for key in tune:
            for path in str(key).split("|"):
                step = path.rsplit("@", 1)[1] if "@" in path else "1"
                if not step.isdigit() or int(step) < 1:
                    raise ValueError(
                        f"Method {name!r}: tune key {key!r}: '@' must be followed by a step >= 1 "
                        f"(model.init_args.training.lr_w@3: the rate from step 3 on)."
                    )
        skip = spec.pop("skip_steps", None) or []
        if not isinstance(skip, list) or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in skip):
            raise ValueError(f"Method {name!r}: skip_steps must be a list of steps >= 1, got {skip!r}.")
        # from_step: {dotted.path@t: value}, a schedule's value from step t on with the experiment's (or its
        # calibration's) earlier steps kept: a fixed tail, as a tuned path@t is one chosen on the validation set.
        held = spec.pop("from_step", None) or {}
        tails = {}
        for key, value in held.items() if isinstance(held, dict) else [(held, None)]:
            dotted, _, step = str(key).rpartition("@")
            if not dotted or not step.isdigit() or int(step) < 1 or isinstance(value, (dict, list)) or value is None:
                raise ValueError(
                    f"Method {name!r}: from_step maps dotted.path@t (a step t >= 1) to one value, got {key!r}: "
                    f"{value!r} (model.init_args.training.lr_w@3: 0.01 sets the rate from step 3 on)."
                )
            tails[dotted] = (int(step), value)
        freeze = spec.pop("freeze_first_layer_from", None)
        if freeze is not None and (isinstance(freeze, bool) or not isinstance(freeze, int) or freeze < 1):
            raise ValueError(f"Method {name!r}: freeze_first_layer_from must be a step >= 1, got {freeze!r}.")
        methods.append(Method(str(name), spec, without, tune, tuple(sorted(set(skip))), freeze, tails))
    slugs = [m.slug for m in methods]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"Method names in {str(path)!r} must differ in letters and digits: {slugs}.")
    if only:
        names = {m.name for m in methods}
        missing = [n for n in only if n not in names]
        if missing:
            raise ValueError(f"--only names {missing} are not in {str(path)!r}; its methods are {sorted(names)}.")
        methods = [m for m in methods if m.name in only]
    return methods


def method_config(experiment: dict, method: Method, seeds: int, seed: int | None, out: Path) -> dict:
    """The full config of ``method``: the experiment, the method's overrides, then the comparison's settings."""
    config = copy.deepcopy(merge_configs(experiment, method.overrides))  # edited below: share nothing
    for path, (step, value) in method.tails.items():  # a tuned schedule tail: the experiment's early steps kept
        where = f"Method {method.name!r}: tune {path}@{step}"
        missing = f"the experiment sets no {path} whose steps before {step} it could keep"
        rewrite_schedule(config, path, lambda spec, s=step, v=value, w=where: hold_from(spec, s, v, w), where, missing)
    if seed is not None:
        config["seed_everything"] = seed
    reshape_process(config, method)
    if method.without_structure:
        data = config.get("data")
        if not isinstance(data, dict) or "class_path" not in data:
            raise ValueError(f"Method {method.name!r} needs the experiment config to give data.class_path.")
        overrides = _structure_free_overrides(config)
        config["data"] = merge_configs(data, {"init_args": overrides})
    model = config.setdefault("model", {})
    model.setdefault("init_args", {})["ensemble_size"] = seeds
    trainer = config.setdefault("trainer", {})
    trainer["logger"] = tensorboard_logger(out / "tensorboard", method.slug)
    trainer["enable_progress_bar"] = False
    trainer["enable_model_summary"] = False
    key = "callbacks" if "callbacks" in trainer and "callbacks+" not in trainer else "callbacks+"
    listed = [c for c in (trainer.get("callbacks") or []) + (trainer.get("callbacks+") or []) if isinstance(c, dict)]
    # Every method draws heldout/test_acc on one chart; an experiment that logs it already keeps its own
    # (two identical diagnostics would share one checkpoint key).
    added = []
    if not any(_is_test_accuracy(c) for c in listed):
        added.append({"class_path": "HeldOutAccuracy"})
    if "callbacks" in trainer:  # base.yaml's list (which flags degenerate runs) was replaced: flag them anyway
        from featlearn.callbacks import DegenerateRuns

        if not any(is_a(c, DegenerateRuns) for c in listed):
            added.append({"class_path": "DegenerateRuns"})
    trainer[key] = list(trainer.get(key) or []) + added
    return config


def followed_value(config: dict, path: str):
    """The value at ``path``, or, where it is unset, the value of the argument it follows.

    A learner's first-layer arguments say what an unset one follows (``first_layer_arguments``:
    ``training.lr_b`` follows ``training.lr_w``, which follows ``training.lr``); None where neither is set.
    """
    value = get_path(config, path)
    prefix = "model.init_args."
    if value is not None or not path.startswith(prefix):
        return value
    learner = config_class((config.get("model") or {}).get("class_path"))
    declared = learner.first_layer_arguments if isinstance(learner, FirstLayerArguments) else {}
    key = path[len(prefix) :]
    while value is None and declared.get(key):
        key = declared[key]
        value = get_path(config, prefix + key)
    return value


@dataclass(frozen=True)
class StepValues:
    """A config layer of values at single update steps, ``{step: {path: value}}``: what a calibration may choose.

    Where a mapping layer replaces a schedule whole, this one changes one step of the schedule
    merged before it (:func:`~featlearn.schedules.set_at_step`) and keeps the rest: E.1.1's
    step-1 rate lands in E.1.2's process without its biases, frozen from step 2, following
    E.1.1's. An unset argument takes the value of the one it follows (``training.lr_b``
    follows ``training.lr_w``: :func:`followed_value`), read before any change of this layer.
    """

    values: dict

    def apply_to(self, config: dict) -> dict:
        """``config`` (unchanged) with each step's values set; a new mapping.

        Raises:
            ValueError: A path neither set nor followed in ``config``, or a step inside a ramp.
        """
        changed = copy.deepcopy(config)
        for step, entries in sorted(self.values.items()):
            for path, value in entries.items():
                where = f"at_steps {step}: {path}"
                missing = f"the experiment sets no {path} (nor the argument it follows)"
                rewrite_schedule(
                    changed,
                    path,
                    lambda spec, s=int(step), v=value, w=where: set_at_step(spec, s, v, w),
                    where,
                    missing,
                    followed_in=config,
                )
        return changed


def rewrite_schedule(config: dict, path: str, rewrite, where: str, missing: str, followed_in: dict | None = None):
    """Set the schedule at ``path`` of ``config`` (in place) to ``rewrite(schedule)``, in canonical form.

    The schedule is the one set at ``path``, or where it is unset the one of the argument it
    follows (:func:`followed_value`), read in ``followed_in`` (default: ``config`` itself).

    Raises:
        ValueError: Neither is set (``missing`` says so, after ``where``).
    """
    current = get_path(config, path)
    if current is None:
        current = followed_value(config if followed_in is None else followed_in, path)
    if current is None:
        raise ValueError(f"{where}: {missing}.")
    set_path(config, path, canonical_segments(rewrite(copy.deepcopy(current)), where), where)


def _is_test_accuracy(callback: dict) -> bool:
    """Whether a config's callback entry is a HeldOutAccuracy on the test set (its default split)."""
    from featlearn.callbacks import HeldOutAccuracy

    split = (callback.get("init_args") or {}).get("split", "test")
    return is_a(callback, HeldOutAccuracy) and split == "test"


def reshape_process(config: dict, method: Method) -> None:
    """Apply ``method.skip_steps`` and ``method.freeze_first_layer_from`` to ``config`` in place.

    Shi et al.'s One Step is their process with the first layer fixed after step 1: step 2
    is skipped (``skip_steps: [2]``: every segment-list schedule under ``model.init_args``
    and ``data.init_args``, at any depth (``training.lr_w``), loses it) and the first layer
    is frozen from the new step 2 on (the arguments the learner class declares as its
    ``first_layer_arguments`` held at 0: ``training.lr_w``, ``lr_b``, ``weight_decay_w``,
    ``weight_decay_b`` for ``TwoLayerNet``), while
    the classifier stage keeps its length (``trainer.max_steps`` drops by the skipped steps).

    Raises:
        MethodNotApplicable: Freezing asked of a learner that declares no first-layer
            arguments (:class:`~featlearn.contracts.FirstLayerArguments`), or whose config
            sets none of them.
    """
    model = config.setdefault("model", {}).setdefault("init_args", {})
    if method.skip_steps:
        data = (config.get("data") or {}).get("init_args") or {}

        def skip(spec, name: str):
            return skip_steps(spec, method.skip_steps, name) if is_segment_list(spec) else spec

        for section, args in (("model", model), ("data", data)):
            map_arguments(args, f"{section}.init_args", skip)
        trainer = config.setdefault("trainer", {})
        max_steps = trainer.get("max_steps")
        if isinstance(max_steps, int) and max_steps > 0:
            trainer["max_steps"] = max_steps - sum(1 for t in method.skip_steps if t <= max_steps)
    if method.freeze_first_layer_from is not None:
        freeze_first_layer(config, method)


def freeze_first_layer(config: dict, method: Method) -> None:
    """Hold the learner's first-layer rates and decays at 0 from ``method.freeze_first_layer_from`` on (in place).

    The learner class says which arguments those are and what an unset one follows
    (``first_layer_arguments``): an unset argument that follows another first-layer
    argument stays unset (it follows the held one), one that follows an outside argument
    (``training.lr_w`` following ``training.lr``) is set from it so it can be held, and one
    that follows nothing is 0 anyway. The arguments are dotted paths under ``model.init_args``.

    Raises:
        MethodNotApplicable: The learner declares no first-layer arguments, or the config
            sets none of them (nor what they follow).
    """
    model = config["model"]["init_args"]
    learner = config_class(config["model"].get("class_path"))
    declared = learner.first_layer_arguments if isinstance(learner, FirstLayerArguments) else {}
    given = {key: get_path(model, key) for key in {*declared, *(f for f in declared.values() if f)}}
    for key, follows in declared.items():
        if given[key] is None and follows is not None and follows not in declared and given[follows] is not None:
            given[key] = given[follows]
            set_path(model, key, given[key], f"model.init_args.{key}")
    held = [key for key in declared if given[key] is not None]
    if not held:
        raise MethodNotApplicable(
            f"Method {method.name!r} freezes the first layer, but {config['model'].get('class_path')} declares no "
            f"first-layer arguments (first_layer_arguments) that model.init_args sets: nothing to hold."
        )
    for key in held:
        where = f"model.init_args.{key}"
        set_path(model, key, hold_from(given[key], method.freeze_first_layer_from, 0.0, where), where)


def _structure_free_overrides(config: dict) -> dict:
    """Ask the configured data model for its ``init_args`` without input structure.

    The data model is built from the config's own ``data`` section (its constructor is all
    :meth:`~featlearn.datamodules.SyntheticDataModule.structure_free_overrides` reads); no run is made.
    """
    data = config["data"]
    data_class = config_class(data["class_path"])
    if not isinstance(data_class, type):
        raise ValueError(f"data.class_path {data['class_path']!r} is not a class featlearn can find.")
    data_model = data_class(**copy.deepcopy(data.get("init_args") or {}))
    try:
        return data_model.structure_free_overrides()
    except NotImplementedError as err:
        fix = "Drop the 'without structure' method (--only) for this experiment."
        raise MethodNotApplicable(str(err), fix) from err


class MethodNotApplicable(ValueError):
    """A method of the methods file that this experiment cannot run (e.g. no variant without structure).

    Args:
        why: What the experiment lacks (the table's note for a skipped method).
        fix: What to do about it, for a method asked for by name.
    """

    def __init__(self, why: str, fix: str = "") -> None:
        super().__init__(f"{why} {fix}".strip())
        self.why = why


def is_a(entry, base: type) -> bool:
    """Whether a config's callback entry builds a ``base`` (its ``class_path`` resolved, short names included)."""
    cls = config_class(entry.get("class_path")) if isinstance(entry, dict) else None
    return isinstance(cls, type) and issubclass(cls, base)


def without_diagnostics(config: dict) -> None:
    """Strip a trial's config (in place) to what its result needs: no per-step diagnostics, no curves.

    Drops every :class:`~featlearn.callbacks.DiagnosticCallback` listed under ``trainer.callbacks``
    or ``trainer.callbacks+`` and the logger. The other callbacks stay (checkpoints, the end-of-fit
    :class:`~featlearn.callbacks.DegenerateRuns`): none of them changes training.
    """
    from featlearn.callbacks import DiagnosticCallback

    trainer = config.setdefault("trainer", {})
    trainer["logger"] = False
    for key in ("callbacks", "callbacks+"):
        if isinstance(trainer.get(key), list):
            trainer[key] = [entry for entry in trainer[key] if not is_a(entry, DiagnosticCallback)]
