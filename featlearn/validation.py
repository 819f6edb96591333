"""Checks of user-set values, shared by every data model, learner and observer.

Each check raises a ``ValueError`` that names the parameter as a user writes it
(``data.k``, ``model.network.width``) and says what it accepts, so a bad config fails before
training with a message that points at the fix. ``bool`` is refused wherever a number
is expected: YAML's ``true`` would otherwise pass as the integer 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (and not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or a float (and not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(name: str, value: Any, minimum: int | None = None, hint: str = "") -> int:
    """Return ``value`` if it is an integer >= ``minimum``.

    Args:
        name: The parameter as a user writes it (``data.k``).
        value: The value to check.
        minimum: The smallest accepted value (None: any integer).
        hint: Appended to the message (how to fix it).

    Raises:
        ValueError: Naming ``name``, if the value is not such an integer.
    """
    if not is_int(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"{name} must be an integer{bound}, got {value!r}{hint}.")
    return value


def check_number(
    name: str,
    value: Any,
    minimum: float | None = None,
    maximum: float | None = None,
    strict: bool = False,
    hint: str = "",
) -> float:
    """Return ``float(value)`` if it is a finite number in [minimum, maximum].

    Args:
        name: The parameter as a user writes it.
        value: The value to check.
        minimum: Lower bound (None: none).
        maximum: Upper bound (None: none).
        strict: The lower bound is excluded (``> minimum``).
        hint: Appended to the message (what the value means, how to fix it).

    Raises:
        ValueError: Naming ``name``, if the value is not such a number.
    """
    ok = is_number(value) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if strict else value >= minimum
    if ok and maximum is not None:
        ok = value <= maximum
    if not ok:
        bounds = []
        if minimum is not None:
            bounds.append(f"{'>' if strict else '>='} {minimum:g}")
        if maximum is not None:
            bounds.append(f"<= {maximum:g}")
        raise ValueError(f"{name} must be a finite number {' and '.join(bounds)}".rstrip() + f"{hint}, got {value!r}.")
    return float(value)


def check_probability(name: str, value: Any, maximum: float = 1.0, why: str = "") -> float:
    """Return ``float(value)`` if it is a probability in [0, maximum].

    Raises:
        ValueError: Naming ``name``, if it is not.
    """
    if not (is_number(value) and math.isfinite(value) and 0.0 <= value <= maximum):
        bound = "1" if maximum == 1.0 else f"{maximum:.4g}"
        raise ValueError(f"{name} must be a probability in [0, {bound}]{why}, got {value!r}.")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is true or false.

    Raises:
        ValueError: Naming ``name``, if it is anything else.
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}.")
    return value


def check_choice(name: str, value: Any, choices: Collection) -> Any:
    """Return ``value`` if it is one of ``choices``.

    Raises:
        ValueError: Naming ``name`` and listing the choices, if it is not.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.")
    return value
