"""featlearn.validation: each check accepts good values and refuses bad ones, naming the parameter."""

from __future__ import annotations

import math

import pytest

from featlearn.validation import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_probability,
    is_int,
    is_number,
)

NAN, INF = float("nan"), float("inf")


def test_is_int_and_is_number_refuse_bool():
    assert is_int(0) and is_int(-3) and is_int(10**30)
    assert not is_int(True) and not is_int(False) and not is_int(1.0) and not is_int("1") and not is_int(None)
    assert is_number(0) and is_number(2.5) and is_number(NAN) and is_number(-INF)
    assert not is_number(True) and not is_number("2.5") and not is_number(None) and not is_number([1])


# ---------------------------------------------------------------------- check_int
@pytest.mark.parametrize("value, minimum", [(0, None), (-5, None), (1, 1), (7, 0), (10**20, 2)])
def test_check_int_accepts(value, minimum):
    assert check_int("data.k", value, minimum) == value


@pytest.mark.parametrize(
    "value, minimum, match",
    [
        (True, None, r"data\.k must be an integer, got True\."),
        (False, 0, r"data\.k must be an integer >= 0, got False\."),
        (0, 1, r"data\.k must be an integer >= 1, got 0\."),
        (2.0, 1, r"data\.k must be an integer >= 1, got 2\.0\."),
        (NAN, None, r"data\.k must be an integer, got nan\."),
        ("3", 1, r"data\.k must be an integer >= 1, got '3'\."),
        (None, 1, r"data\.k must be an integer >= 1, got None\."),
    ],
)
def test_check_int_refuses_with_the_name(value, minimum, match):
    with pytest.raises(ValueError, match=match):
        check_int("data.k", value, minimum)


def test_check_int_appends_the_hint():
    with pytest.raises(ValueError, match=r"^data\.dim must be an integer >= 2, got 1 \(XOR needs two\)\.$"):
        check_int("data.dim", 1, 2, hint=" (XOR needs two)")


# ---------------------------------------------------------------------- check_number
@pytest.mark.parametrize(
    "value, kwargs",
    [
        (0, dict(minimum=0.0)),
        (0.5, dict(minimum=0.0, maximum=1.0)),
        (1.0, dict(minimum=0.0, maximum=1.0)),  # the upper bound is included
        (1e-9, dict(minimum=0.0, strict=True)),
        (-3.5, dict()),
        (7, dict(maximum=7)),
    ],
)
def test_check_number_accepts_and_returns_a_float(value, kwargs):
    out = check_number("model.lr", value, **kwargs)
    assert out == value and type(out) is float


@pytest.mark.parametrize(
    "value, kwargs, match",
    [
        (True, dict(minimum=0.0), r"model\.lr must be a finite number >= 0, got True\."),
        (NAN, dict(), r"model\.lr must be a finite number, got nan\."),
        (INF, dict(minimum=0.0), r"model\.lr must be a finite number >= 0, got inf\."),
        (-INF, dict(), r"model\.lr must be a finite number, got -inf\."),
        (-0.1, dict(minimum=0.0), r"model\.lr must be a finite number >= 0, got -0\.1\."),
        (0.0, dict(minimum=0.0, strict=True), r"model\.lr must be a finite number > 0, got 0\.0\."),
        (2.0, dict(minimum=0.0, maximum=1.0), r"model\.lr must be a finite number >= 0 and <= 1, got 2\.0\."),
        ("0.1", dict(), r"model\.lr must be a finite number, got '0\.1'\."),
    ],
)
def test_check_number_refuses_with_the_name(value, kwargs, match):
    with pytest.raises(ValueError, match=match):
        check_number("model.lr", value, **kwargs)


def test_check_number_puts_the_hint_before_the_value():
    with pytest.raises(ValueError, match=r"^data\.sigma_r must be a finite number >= 0 \(the ratio\), got -1\.$"):
        check_number("data.sigma_r", -1, minimum=0.0, hint=" (the ratio)")


# ---------------------------------------------------------------------- check_probability
@pytest.mark.parametrize("value, maximum", [(0, 1.0), (1, 1.0), (0.25, 1.0), (2 / 3, 2 / 3), (0.0, 0.5)])
def test_check_probability_accepts_and_returns_a_float(value, maximum):
    out = check_probability("data.p_o", value, maximum)
    assert out == value and type(out) is float


@pytest.mark.parametrize(
    "value, maximum, match",
    [
        (True, 1.0, r"data\.p_o must be a probability in \[0, 1\], got True\."),
        (NAN, 1.0, r"data\.p_o must be a probability in \[0, 1\], got nan\."),
        (INF, 1.0, r"data\.p_o must be a probability in \[0, 1\], got inf\."),
        (-0.1, 1.0, r"data\.p_o must be a probability in \[0, 1\], got -0\.1\."),
        (1.5, 1.0, r"data\.p_o must be a probability in \[0, 1\], got 1\.5\."),
        (0.7, 2 / 3, r"data\.p_o must be a probability in \[0, 0\.6667\], got 0\.7\."),
        (None, 1.0, r"data\.p_o must be a probability"),
    ],
)
def test_check_probability_refuses_with_the_name(value, maximum, match):
    with pytest.raises(ValueError, match=match):
        check_probability("data.p_o", value, maximum)


def test_check_probability_says_why():
    with pytest.raises(ValueError, match=r"^data\.p_o must be a probability in \[0, 1\] for mixtures, got 2\.$"):
        check_probability("data.p_o", 2, why=" for mixtures")


# ---------------------------------------------------------------------- check_bool, check_choice
@pytest.mark.parametrize("value", [True, False])
def test_check_bool_accepts(value):
    assert check_bool("data.rotate", value) is value


@pytest.mark.parametrize("value", [1, 0, "true", None, NAN])
def test_check_bool_refuses_with_the_name(value):
    with pytest.raises(ValueError, match=r"data\.rotate must be true or false, got "):
        check_bool("data.rotate", value)


def test_check_choice():
    assert check_choice("data.dictionary", "incoherent", ("orthonormal", "incoherent")) == "incoherent"
    with pytest.raises(
        ValueError, match=r"data\.dictionary must be one of \['orthonormal', 'incoherent'\], got 'random'\."
    ):
        check_choice("data.dictionary", "random", ("orthonormal", "incoherent"))
    with pytest.raises(ValueError, match=r"data\.dictionary must be one of"):
        check_choice("data.dictionary", None, ("orthonormal", "incoherent"))


def test_nan_is_not_an_accepted_number_anywhere():
    for check in (
        lambda v: check_number("x", v),
        lambda v: check_probability("x", v),
        lambda v: check_int("x", v),
    ):
        with pytest.raises(ValueError, match=r"^x must be"):
            check(math.nan)
