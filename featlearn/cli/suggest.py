"""The closest name for a misspelt argument or class, at any depth of a run's config.

The parser says only that something is wrong ("unrecognized arguments: --trainer.max_step",
"model: Option 'lrr' is not accepted", "data: Expected a dot import path string:
BooleanXor"). :func:`suggest_correction` turns such an error into one message that names
the closest argument the class at that depth takes, or the closest class featlearn
registers for that slot. The arguments a class takes are read from the config the
parser builds *without* the misspelt flag (every argument of every class it holds,
defaults included), so a nested name (``--model.init_args.network.widht``) is matched
against the network's own arguments, whichever network the config chose.
"""

from __future__ import annotations

import difflib
import re

import pytorch_lightning as pl
from jsonargparse import Namespace
from torch import nn

import featlearn.callbacks
import featlearn.datamodules
import featlearn.models
from featlearn.teacher import TeacherSearch

#: The slot a class name fills (the last key of its setting) -> (modules to look in, the base class it must have).
CLASS_SLOTS = {
    "data": ((featlearn.datamodules,), featlearn.datamodules.DataModel, "data model"),
    "model": ((featlearn.models,), pl.LightningModule, "learner"),
    "callbacks": ((featlearn.callbacks, pl.callbacks), pl.Callback, "observer (callback)"),
    "network": ((featlearn.models,), nn.Module, "network"),
    "logger": ((pl.loggers,), pl.loggers.Logger, "logger"),
    "teacher": ((featlearn.teacher,), TeacherSearch, "teacher search"),
}
#: How many accepted names a message lists when none is close.
LISTED = 12


def registered_classes(slot: str) -> list[str]:
    """The short class names that can fill ``slot`` (``data``: the data models featlearn registers, ...)."""
    modules, base, _ = CLASS_SLOTS[slot]
    names = []
    for module in modules:
        for name in getattr(module, "__all__", dir(module)):
            value = getattr(module, name, None)
            if isinstance(value, type) and issubclass(value, base) and not name.startswith("_"):
                if slot == "network" and issubclass(value, pl.LightningModule):
                    continue  # a learner is not a network
                names.append(name)
    return sorted(set(names))


def closest(word: str, names: list[str]) -> str | None:
    """The name in ``names`` closest to ``word``, case aside (``BooleanXor``: ``BooleanXOR``); None if none is."""
    by_lower = {n.lower(): n for n in names}
    match = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


def misspelt_flag(text: str, args: list[str]) -> str | None:
    """The command-line flag the parser refused (without ``--``), found in its message and ``args``."""
    found = re.search(r"unrecognized arguments: --([\w.+-]+)", text)
    if found:
        return found.group(1)
    option = re.search(r"Option '([\w.]+)' is not accepted", text)
    if option:
        name = option.group(1)
        for arg in args:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--") and (flag == f"--{name}" or flag.endswith(f".{name}")):
                return flag[2:]
    return None


def without_flag(args: list[str], flag: str) -> list[str]:
    """``args`` without ``--flag`` and its value."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == f"--{flag}":
            skip = True
            continue
        if arg.startswith(f"--{flag}="):
            continue
        out.append(arg)
    return out


def argument_correction(flag: str, config: dict) -> str | None:
    """``--a.b.c``: the first key that ``config`` (the run's config as nested dicts) lacks, and the closest it has."""
    segments = flag.removesuffix("+").split(".")
    node, owner, walked = config, "the run", []
    for i, segment in enumerate(segments):
        if isinstance(node, dict) and "class_path" in node:
            owner = str(node["class_path"]).rpartition(".")[2]
            if segment in ("class_path", "init_args"):
                node = node.get(segment) if segment == "init_args" else None
                walked.append(segment)
                continue
            node = node.get("init_args") or {}
        if not isinstance(node, dict) or not node:
            return None
        if segment in node:
            node, walked = node[segment], [*walked, segment]
            owner = "Trainer" if walked == ["trainer"] else f"--{'.'.join(walked)}"
            continue
        names = sorted(k for k in node if not k.startswith("_"))
        near = closest(segment, names)
        rest = ".".join(segments[i + 1 :])
        where = ".".join(walked)
        if near:
            fix = f"did you mean --{'.'.join([*walked, near])}{'.' + rest if rest else ''}?"
        else:
            shown = ", ".join(names[:LISTED]) + (", ..." if len(names) > LISTED else "")
            fix = f"it takes {shown}."
        what = f"{owner} takes no argument {segment!r}" if where else f"featlearn fit takes no setting {segment!r}"
        return f"--{flag}: {what}; {fix}"
    return None


def class_correction(text: str) -> str | None:
    """``data: Expected a dot import path string: BooleanXor``: the closest class featlearn registers for that slot."""
    found = re.search(r"Expected a dot import path string: ([\w.]+)", text)
    keys = re.findall(r'Parser key "([\w.+]+)"', text)
    if not found or not keys:
        return None
    setting, name = keys[-1], found.group(1)
    slot = setting.rsplit(".", 1)[-1].removesuffix("+")
    if slot not in CLASS_SLOTS:
        return None
    names = registered_classes(slot)
    near = closest(name.rpartition(".")[2], names)
    kind = CLASS_SLOTS[slot][2]
    if near:
        return f"{setting}: no {kind} is named {name!r}; did you mean {near}?"
    return (
        f"{setting}: no {kind} is named {name!r}. featlearn's are {', '.join(names)}; a class of your own is named "
        f"by its import path (my_module.MyClass)."
    )


def suggest_correction(text: str, args: list[str], parse) -> str | None:
    """One message naming the closest valid name for the misspelling the parser's ``text`` reports; None if none is.

    Args:
        text: The parser's error messages, outermost to innermost.
        args: The command-line arguments that were parsed.
        parse: ``parse(args) -> Namespace``: the parser, to read the config without the misspelt flag.
    """
    correction = class_correction(text)
    if correction:
        return correction
    flag = misspelt_flag(text, args)
    if flag is None:
        return None
    try:
        config = parse(without_flag(args, flag))
    except Exception:  # noqa: BLE001 - another error in the rest: the parser's own message stands
        return None
    if isinstance(config, Namespace):
        subcommand = config.get("subcommand")
        config = config.get(subcommand, config) if subcommand else config
        config = config.as_dict() if isinstance(config, Namespace) else dict(config)
    return argument_correction(flag, config)
