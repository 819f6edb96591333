"""The ``featlearn`` console script: dispatches each subcommand to its module.

* ``featlearn fit|validate|test|predict ...``: the LightningCLI (:mod:`featlearn.runner.lightning`);
* ``featlearn compare ...``: several methods on one experiment (:mod:`featlearn.studies.compare`);
* ``featlearn samples ...``: sample complexity n*(d) per method (:mod:`featlearn.studies.samples`);
* ``featlearn teacher-check ...``: Shi et al.'s check of Algorithm 1 (:mod:`featlearn.studies.teacher_check`);
* ``featlearn calibrate ...``: a paper's open constants chosen once on one table (:mod:`featlearn.studies.calibration`);
* ``featlearn reproduce ...``: a paper's experiments and a report (:mod:`featlearn.studies.reproduce`);
* ``featlearn configs [copy NAME [DEST]]``: list the shipped experiments, or copy one out to edit.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import sys
from pathlib import Path

from featlearn.cli.host_memory import keep_freed_memory
from featlearn.runner.errors import report_errors


def configs_command(argv: list[str]) -> None:
    """``featlearn configs``: list the shipped experiments; ``featlearn configs copy NAME [DEST]``: copy one."""
    from featlearn.config_files import CONFIG_GROUPS, resolve_config, shipped_configs

    parser = argparse.ArgumentParser(
        prog="featlearn configs", description="The configs shipped with featlearn.", allow_abbrev=False
    )
    sub = parser.add_subparsers(dest="action")
    copy = sub.add_parser("copy", help="Copy a shipped config out, to edit and run with --config.", allow_abbrev=False)
    copy.add_argument("name", help="A shipped experiment (glasgow_xor) or config (debug/smoke).")
    copy.add_argument("dest", nargs="?", default=None, help="File or folder to write (default: ./NAME's file name).")
    args = parser.parse_args(argv)
    if args.action is None:
        groups = shipped_configs()
        width = max(len(name) for entries in groups.values() for name, _ in entries)
        for group, entries in groups.items():
            if not entries:
                continue
            print(f"{CONFIG_GROUPS.get(group, group)}:")
            for name, summary in entries:
                print(f"  {name:<{width}}  {summary}")
        print("Copy one out to edit: featlearn configs copy NAME [DEST]")
        return
    try:
        source = resolve_config(args.name)
    except FileNotFoundError as err:
        parser.error(str(err))
    dest = Path(args.dest) if args.dest else Path(source.name)
    if dest.is_dir():
        dest = dest / source.name
    if dest.exists():
        parser.error(f"{dest} exists: choose another DEST (featlearn never overwrites your files).")
    shutil.copyfile(source, dest)
    print(f"wrote {dest} ({how_to_use(source, dest)})")


def how_to_use(source: Path, dest: Path) -> str:
    """The command that takes a copy ``dest`` of the shipped config ``source``, by the folder it ships in."""
    from featlearn.config_files import config_root

    folder = source.parent.relative_to(config_root()).parts if source.parent != config_root() else ()
    if folder[:1] == ("experiments",):
        if len(folder) > 1:
            return f"an overlay: featlearn fit --config EXPERIMENT --config {dest}"
        return f"run it with: featlearn fit --config {dest}"
    if folder[:1] in (("model",), ("debug",)):
        return f"an overlay: featlearn fit --config EXPERIMENT --config {dest}"
    if folder[:1] == ("compare",):
        return f"a methods file: featlearn compare --config EXPERIMENT --methods {dest}"
    if folder[:1] == ("samples",):
        return f"a study: featlearn samples --config glasgow_xor --study {dest}"
    if folder[:1] == ("reproduce",):
        return f"a reproduction plan: featlearn reproduce --paper {source.stem} reads the shipped one"
    return f"the defaults every run loads first: give your copy as the first --config, e.g. --config {dest}"


def use_working_folder() -> None:
    """Put the working folder first on ``sys.path``, as ``python -m featlearn`` does.

    So ``--data my_data.Majority`` finds ``./my_data.py`` whichever way featlearn is
    started: a console script's ``sys.path`` starts with the script's own folder instead.
    """
    here = os.getcwd()
    if not any(entry in ("", ".", here) for entry in sys.path):
        sys.path.insert(0, here)


#: The study commands: name -> (module, function(argv, build)), each an argparse layer over the study's
#: Python function. They are handed the builder with the command's name (an interrupted trial names it).
STUDIES = {
    "compare": ("featlearn.studies.compare", "compare_command"),
    "samples": ("featlearn.studies.samples", "samples_command"),
    "teacher-check": ("featlearn.studies.teacher_check", "teacher_check_command"),
    "calibrate": ("featlearn.studies.calibration", "calibrate_command"),
    "reproduce": ("featlearn.studies.reproduce", "reproduce_command"),
}


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``featlearn`` console script and ``python -m featlearn``.

    A user's error (a bad setting, a missing file) prints one message, prefixed with the
    command, and exits with status 2 (:mod:`featlearn.runner.errors`; ``FEATLEARN_TRACEBACK=1``
    shows the traceback). Started as the command (``args`` None) with ``FEATLEARN_MALLOC=keep``,
    it first tunes the host allocator to reuse freed tensor memory (:mod:`featlearn.cli.host_memory`).
    """
    use_working_folder()
    argv = sys.argv[1:] if args is None else list(args)
    name = f"featlearn {argv[0]}" if argv and argv[0] in STUDIES else "featlearn"
    with report_errors(name):
        if args is None:  # the command itself, not a program calling main(): its process, its allocator
            keep_freed_memory()
        dispatch(args)


def dispatch(args: list[str] | None) -> None:
    """Run the subcommand ``args[0]`` (``sys.argv`` when None)."""
    argv = sys.argv[1:] if args is None else list(args)
    command = argv[0] if argv else None
    if command in STUDIES:
        from featlearn.runner.lightning import build_cli

        module, function = STUDIES[command]
        build = functools.partial(build_cli, study=command)  # an interrupted run names the study's command
        getattr(importlib.import_module(module), function)(argv[1:], build)
    elif command == "configs":
        configs_command(argv[1:])
    else:
        from featlearn.runner.lightning import build_cli

        if command in (None, "-h", "--help"):
            print(
                "featlearn {fit,validate,test,predict} (the LightningCLI below), featlearn compare --help, "
                "featlearn samples --help, featlearn teacher-check --help, featlearn calibrate --help, "
                "featlearn reproduce --help, featlearn configs [copy NAME [DEST]]\n"
            )
        build_cli(args)  # None: LightningCLI reads sys.argv itself


if __name__ == "__main__":
    main()
