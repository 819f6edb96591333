r"""How a study's config grows with the dimension d: arithmetic expressions in d, evaluated safely.

A sample-complexity study (:mod:`featlearn.studies.samples`) states its scaling as
``dotted.config.path: expression in d``, e.g. ``data.init_args.batch_size: ceil(d * log(d))``.
:func:`evaluate_expression` reads such an expression without Python's ``eval``: numbers,
d, ``+ - * / // **``, unary minus and the functions log, log2, sqrt, ceil, floor, min, max.
:func:`apply_scale` sets each path of a config to its expression's value at d.
"""

from __future__ import annotations

import ast
import copy
import math
import operator

from featlearn.studies.trials import set_path

_FUNCTIONS = {
    "log": math.log,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
}
_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
}


def evaluate_expression(text: str | int | float, d: int, where: str = "scale") -> float | int:
    """The value of an arithmetic expression in d, e.g. ``ceil(d * log(d))``.

    Only numbers, d, + - * / // ** , unary minus and the functions log, log2, sqrt,
    ceil, floor, min, max are allowed (no Python evaluation).

    Raises:
        ValueError: Anything else, naming ``where``.
    """
    if isinstance(text, bool):
        raise ValueError(f"{where}: expected a number or an expression in d, got {text!r}.")
    if isinstance(text, int | float):
        return text

    def value(node: ast.AST):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id == "d":
            return d
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS
            and not node.keywords
        ):
            return _FUNCTIONS[node.func.id](*(value(a) for a in node.args))
        raise ValueError(
            f"{where}: {text!r} is not an expression in d (allowed: numbers, d, + - * / // **, "
            f"{', '.join(sorted(_FUNCTIONS))})."
        )

    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"{where}: {text!r} is not an expression in d ({err.msg}).") from None
    try:
        return value(tree)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError) as err:
        if isinstance(err, ValueError) and str(err).startswith(where):
            raise
        raise ValueError(f"{where}: {text!r} cannot be evaluated at d = {d} ({err}).") from None


def apply_scale(config: dict, scale: dict, d: int, where: str = "scale") -> dict:
    """``config`` (copied) with each dotted path of ``scale`` set to its expression's value at d.

    Integral values are written as ints (a width, a batch size), others as floats.
    """
    config = copy.deepcopy(config)
    for path, expression in scale.items():
        number = evaluate_expression(expression, d, f"{where}.{path}")
        # 8.0 from ceil(...) or 4 * d is a count (a width, a batch); a float literal such as 3.0 stays a rate.
        if isinstance(number, float) and number.is_integer() and not isinstance(expression, float):
            number = int(number)
        set_path(config, path, number, f"{where}.{path}")
    return config
