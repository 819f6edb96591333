"""Where featlearn's shipped configs are, in a checkout and in an installed wheel alike.

The repository's ``configs/`` folder installs as the package ``featlearn.configs``
(package data), so ``base.yaml``, the experiments and the methods files are found
the same way whether featlearn runs from a checkout, an editable install or a wheel.
A config is named by a path, or by its name among the shipped ones::

    featlearn fit --config glasgow_xor                       # experiments/glasgow_xor.yaml
    featlearn fit --config shi_parity --config shi/d100      # an experiment and an overlay
    featlearn fit --config debug/smoke.yaml ...              # any shipped file, by its relative path
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def config_root() -> Path:
    """The folder of the shipped configs (``featlearn/configs`` once installed)."""
    return Path(str(files("featlearn.configs")))


def base_config() -> Path:
    """``base.yaml``: trainer defaults, logger and checkpoints, loaded before any ``--config``."""
    return config_root() / "base.yaml"


def shipped_experiments() -> list[str]:
    """The names of the shipped experiments and overlays (``glasgow_xor``, ``shi/d100``), sorted."""
    folder = config_root() / "experiments"
    return sorted(str(p.relative_to(folder).with_suffix("")) for p in folder.rglob("*.yaml"))


def config_summary(path: Path) -> str:
    """A shipped config's one-line summary: its first line, ``#: ...`` (every shipped config has one)."""
    first = path.read_text().split("\n", 1)[0]
    return first.removeprefix("#:").strip() if first.startswith("#:") else ""


#: The groups of shipped configs ``featlearn configs`` lists: folder -> heading.
CONFIG_GROUPS = {
    "experiments": "Experiments and their overlays (featlearn fit --config NAME [--config OVERLAY])",
    "model": "Model overlays (featlearn fit --config EXPERIMENT --config NAME)",
    "debug": "Debug overlays (featlearn fit --config EXPERIMENT --config NAME)",
    "compare": "Methods files (featlearn compare --config EXPERIMENT --methods NAME)",
    "calibration": "Candidates of a paper's open constants (featlearn calibrate --config EXPERIMENT --candidates NAME)",
    "samples": "Sample-complexity studies (featlearn samples --config EXPERIMENT --study NAME)",
    "reproduce": "Reproduction plans (featlearn reproduce --paper PAPER, PAPER the name after reproduce/)",
    "": "Defaults (loaded before every --config)",
}


def shipped_configs() -> dict[str, list[tuple[str, str]]]:
    """Every shipped config by group (:data:`CONFIG_GROUPS`): the name a ``--config`` takes, and its summary."""
    root = config_root()
    groups: dict[str, list[tuple[str, str]]] = {group: [] for group in CONFIG_GROUPS}
    for path in sorted(root.rglob("*.yaml")):
        relative = path.relative_to(root)
        group = relative.parts[0] if len(relative.parts) > 1 else ""
        if group not in groups:
            groups[group] = []
        name = relative.relative_to("experiments") if group == "experiments" else relative
        groups[group].append((str(name.with_suffix("")), config_summary(path)))
    return groups


def resolve_config(name: str) -> Path:
    """The file a ``--config`` value names: an existing path, else a shipped config.

    A shipped config is looked up as ``experiments/<name>[.yaml]``, then as
    ``<name>[.yaml]`` under the config folder (``debug/smoke``, ``compare/shi``).

    Raises:
        FileNotFoundError: If ``name`` is neither a file nor a shipped config; the message
            lists the shipped experiments.
    """
    path = Path(name)
    if path.is_file():
        return path
    root = config_root()
    stem = name[: -len(".yaml")] if name.endswith(".yaml") else name
    for candidate in (root / "experiments" / f"{stem}.yaml", root / f"{stem}.yaml"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"--config {name!r} is neither a file nor a shipped config. Give the path of a YAML file, or one of "
        f"the shipped experiments: {', '.join(shipped_experiments())} (list them with `featlearn configs`)."
    )


def resolve_config_args(args: list[str]) -> list[str]:
    """``args`` with every ``--config NAME`` (``--config=NAME``, ``-c NAME``) value resolved by :func:`resolve_config`.

    A value that is inline YAML (``--config '{trainer: {max_steps: 5}}'``, which LightningCLI
    also accepts) is passed through as it is.
    """

    def resolve(value: str) -> str:
        return value if any(c in value for c in ":{\n") else str(resolve_config(value))

    out, expect_value = [], False
    for arg in args:
        if expect_value:
            out.append(resolve(arg))
            expect_value = False
        elif arg in ("--config", "-c"):
            out.append(arg)
            expect_value = True
        elif arg.startswith(("--config=", "-c=")):
            flag, value = arg.split("=", 1)
            out.append(f"{flag}=" + resolve(value))
        else:
            out.append(arg)
    return out


def config_files(args: list[str]) -> list[str]:
    """The files that ``--config`` (``--config=``, ``-c``) values of resolved ``args`` name (inline YAML left out)."""
    files, expect_value = [], False
    for arg in args:
        value = None
        if expect_value:
            value, expect_value = arg, False
        elif arg in ("--config", "-c"):
            expect_value = True
        elif arg.startswith(("--config=", "-c=")):
            value = arg.split("=", 1)[1]
        if value is not None and not any(c in value for c in ":{\n"):
            files.append(value)
    return files
