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
from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl
import yaml
from jsonargparse import Namespace
from torch import nn

import featlearn.callbacks
import featlearn.datamodules
import featlearn.models
from featlearn.config_files import config_files
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
    # A nested parser reports the flag from its own depth (--netwrk.width for --model.init_args.netwrk.width).
    found = re.search(r"unrecognized arguments: --([\w.+-]+)", text) or re.search(
        r"Option '([\w.]+)' is not accepted", text
    )
    if found:
        name = found.group(1)
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


def without_actions(args: list[str]) -> list[str]:
    """``args`` without ``--print_config`` (and its value), which the second parse would otherwise carry out."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            if not arg.startswith("-"):
                continue
        if arg == "--print_config":
            skip = True
            continue
        if arg.startswith("--print_config="):
            continue
        out.append(arg)
    return out


@dataclass(frozen=True)
class Misspelling:
    """Where a config lacks a key: the keys walked to it, its owner, the wrong key, the closest right one."""

    walked: tuple[str, ...]
    owner: str
    wrong: str
    near: str | None
    names: tuple[str, ...]
    rest: tuple[str, ...]

    def fix(self, prefix: str = "--") -> str:
        """``did you mean --a.b.c?``, or the names the owner takes when none is close."""
        if self.near and not prefix:  # a key in a file, whose path the message gives: the key alone
            return f"did you mean {self.near!r}?"
        if self.near:
            return f"did you mean {prefix}{'.'.join([*self.walked, self.near, *self.rest])}?"
        shown = ", ".join(self.names[:LISTED]) + (", ..." if len(self.names) > LISTED else "")
        return f"it takes {shown}."


def find_misspelling(segments: list[str], config: dict, command: str) -> Misspelling | None:
    """The first of ``segments`` (keys, or ``[Name]`` for a list's item of class Name) that ``config`` lacks.

    ``config`` is a run's config as nested dicts, every argument of every class filled in.
    A list (``trainer.callbacks``) is entered at the last item of the class named, else at
    its last item (where ``--trainer.callbacks.init_args.x`` goes).
    """
    node, owner, walked = config, command, []
    for i, segment in enumerate(segments):
        if isinstance(node, list):
            items = [n for n in node if isinstance(n, dict)]
            if segment.startswith("["):
                name = segment.strip("[]")
                items = [n for n in items if str(n.get("class_path", "")).rpartition(".")[2] == name]
                walked.append(segment)
                node = items[-1] if items else None
                continue
            node = items[-1] if items else None
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
            owner = "Trainer" if walked == ["trainer"] else ".".join(walked)
            continue
        names = tuple(sorted(k for k in node if not k.startswith("_")))
        # A name that belongs to one of the owner's groups (lr_w under training), or nearly: the group's path.
        fields = {f: f"{k}.{f}" for k in names if isinstance(node[k], dict) for f in node[k] if not f.startswith("_")}
        near = fields.get(segment) or closest(segment, list(names)) or fields.get(closest(segment, list(fields)))
        return Misspelling(tuple(walked), owner, segment, near, names, tuple(segments[i + 1 :]))
    return None


def describe(misspelling: Misspelling, where: str, prefix: str = "--") -> str:
    """One line: where, who takes no such argument, and the fix."""
    kind = "argument" if misspelling.walked else "setting"
    return f"{where}: {misspelling.owner} takes no {kind} {misspelling.wrong!r}; {misspelling.fix(prefix)}"


def yaml_misspelling(text: str, args: list[str]) -> tuple[str, list[str], list[str]] | None:
    """A key the parser refused in a ``--config`` file: (the file, the key's path, ``args`` without that key).

    The path names a list's item by its class (``trainer.callbacks.[StepCheckpoint]....``);
    the file's ``--config`` is replaced by its content without the key, so the rest parses.
    """
    option = re.search(r"Option '([\w.]+)' is not accepted", text)
    if not option:
        return None
    name = option.group(1).rsplit(".", 1)[-1]
    found = None
    for path in config_files(args):
        try:
            content = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError):
            continue
        for keys in key_paths(content, name):
            found = (path, content, keys)  # a later file wins, as in the merge
    if found is None:
        return None
    path, content, keys = found
    drop_key(content, keys)
    rest = list(args)
    places = [i for i in range(1, len(rest)) if rest[i - 1] in ("--config", "-c") and rest[i] == path]
    if not places:  # given as --config=PATH
        return None
    rest[places[-1]] = yaml.safe_dump(content or {})  # the file's last --config: the one whose key the merge kept
    shown = [key.removesuffix("+") if isinstance(key, str) else f"[{key[1]}]" for key in keys]
    return path, shown, rest


def key_paths(node, name: str, walked: tuple = ()) -> list[tuple]:
    """Every path to a key ``name`` in YAML content (a list item as ``(index, its class name)``)."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == name:
                found.append((*walked, key))
            found += key_paths(value, name, (*walked, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            cls = str(item.get("class_path", "")).rpartition(".")[2] if isinstance(item, dict) else ""
            found += key_paths(item, name, (*walked, (index, cls)))
    return found


def drop_key(node, keys: tuple) -> None:
    """Remove the key at ``keys`` (from :func:`key_paths`) from YAML content, in place."""
    for key in keys[:-1]:
        node = node[key[0]] if isinstance(key, tuple) else node[key]
    del node[keys[-1]]


def class_correction(text: str) -> str | None:
    """``data: Expected a dot import path string: BooleanXor``: the closest class featlearn registers for that slot."""
    found = re.search(r"Expected a dot import path string: ([\w.]+)", text)
    keys = re.findall(r'Parser key "([\w.+]+)"', text)
    if not found or not keys:
        return None
    setting, name = keys[-1], found.group(1)
    given = re.findall(r"^\s*Given value: (.*)$", text, flags=re.M)
    if given and given[-1].startswith("{") and not given[-1].startswith("{'class_path'"):
        return None  # the class path lies deeper than the setting named (a mapping's own class_path)
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
        parse: ``parse(args) -> Namespace``: the parser, to read the config without the misspelt key.
    """
    correction = class_correction(text)
    if correction:
        return correction
    args = without_actions(args)
    flag = misspelt_flag(text, args)
    if flag is not None:
        segments, rest, where = flag.removesuffix("+").split("."), without_flag(args, flag), f"--{flag}"
    else:
        located = yaml_misspelling(text, args)
        if located is None:
            return None
        path, segments, rest = located
        where = f"--config {path}: {'.'.join(segments)}"
    try:
        config = parse(rest)
    except Exception:  # noqa: BLE001 - another error in the rest: the parser's own message stands
        return None
    subcommand = config.get("subcommand") if isinstance(config, Namespace) else None
    if isinstance(config, Namespace):
        config = config.get(subcommand, config) if subcommand else config
        config = config.as_dict() if isinstance(config, Namespace) else dict(config)
    misspelling = find_misspelling(segments, config, f"featlearn {subcommand or 'fit'}")
    if misspelling is None:
        return None
    return describe(misspelling, where, prefix="--" if flag is not None else "")
