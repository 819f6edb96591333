"""Errors a person reads: one message that names the parameter, the value and the fix, no traceback.

A bad setting is found deep inside the config parser or a constructor, and arrives
wrapped in the parser's own errors ("Does not validate against any of the Union
subtypes ..."). :func:`explain` takes the innermost message, the one featlearn wrote (a misspelt name
gets its closest valid one before, in :mod:`featlearn.runner.suggest`).
:func:`report_errors` prints it and exits with status 2; ``FEATLEARN_TRACEBACK=1`` shows
the traceback instead, for debugging.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator

import yaml
from jsonargparse import ArgumentError
from lightning_fabric.utilities.exceptions import MisconfigurationException

#: The errors a run's settings cause: shown as one message. Anything else is a bug and keeps its traceback.
USER_ERRORS = (
    ValueError,
    TypeError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    FloatingPointError,
    ImportError,
    ArgumentError,
    MisconfigurationException,
    yaml.YAMLError,
)
#: Set to 1 to see the traceback of an error featlearn would otherwise explain in one message.
TRACEBACK_VARIABLE = "FEATLEARN_TRACEBACK"
#: The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a process that Ctrl-C ended.
INTERRUPTED_STATUS = 130
#: Lines the parser wraps real messages in.
_WRAPPERS = ("Does not validate against any of the Union subtypes", "Problem with given class_path", "Parser key")


def exception_chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then its causes, outermost first."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        # As Python prints it: the explicit cause, else the context unless `raise ... from None` hid it.
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)


def explain(error: BaseException) -> str:
    """The message a person needs from ``error``: featlearn's own, not the parser's wrapping of it."""
    chain = list(exception_chain(error))
    everything = "\n".join(str(e) for e in chain)
    keys = re.findall(r'Parser key "([\w.]+)"', everything)  # the setting the parser was reading
    for candidate in reversed(chain):  # innermost first: the message nearest the cause
        text = str(candidate).strip()
        if isinstance(candidate, SystemExit) or not text or text.startswith(_WRAPPERS):
            continue
        if isinstance(candidate, yaml.YAMLError):
            return f"a config is not valid YAML: {' '.join(text.split())}"
        if keys and keys[-1] not in text:  # a bare type error ("Expected a <class 'int'>"): say of what
            return f"{keys[-1]}: {text}"
        return text
    listed = re.findall(r"^\s*- (.+)$", everything, flags=re.M)  # the parser's list of reasons
    reasons = [r for r in listed if not r.startswith(("Expected a <class 'NoneType'>", "Problem with given"))]
    return reasons[-1] if reasons else str(error)


@contextlib.contextmanager
def report_errors(command: str = "featlearn") -> Iterator[None]:
    """Run the block; a user's error becomes one line on stderr and exit status 2 (no traceback).

    ``FEATLEARN_TRACEBACK=1`` lets the error through with its traceback. Ctrl-C ends with
    status 130, whether Lightning stopped the run gracefully (it exits with 1) or not.
    """
    try:
        yield
    except KeyboardInterrupt:  # Ctrl-C outside a training loop (Lightning handles the ones inside)
        print(f"\n{command}: interrupted.", file=sys.stderr)
        raise SystemExit(INTERRUPTED_STATUS) from None
    except USER_ERRORS as error:
        if os.environ.get(TRACEBACK_VARIABLE) == "1":
            raise
        print(f"{command}: error: {explain(error)}", file=sys.stderr)
        print(f"({TRACEBACK_VARIABLE}=1 shows where it was raised.)", file=sys.stderr)
        raise SystemExit(2) from None
    except SystemExit as exit_:
        # The parser exits after printing its own message; a wrapped error exits with ours.
        cause = None if exit_.__suppress_context__ else exit_.__context__
        if isinstance(cause, KeyboardInterrupt):  # Lightning's graceful stop after Ctrl-C exits with 1
            raise SystemExit(INTERRUPTED_STATUS) from None
        if exit_.code not in (0, None) and isinstance(cause, USER_ERRORS) and os.environ.get(TRACEBACK_VARIABLE) != "1":
            print(f"{command}: error: {explain(cause)}", file=sys.stderr)
            raise SystemExit(2) from None
        raise
