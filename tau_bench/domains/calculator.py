"""The `calculate` tool's arithmetic, shared by the airline and retail domains (spec §7.2).

Upstream checks every character of the expression against the whitelist
`0123456789+-*/(). `, then evaluates the text as a Python expression, converts the value
with `float()`, rounds it with `round(x, 2)` and returns `str()` of the result. Any exception
becomes the observation `"Error: " + str(exc)`.

We never call `eval`. The text is parsed with CPython's own parser (so syntax errors carry the
very same messages, e.g. `invalid syntax (<string>, line 0)` for the empty string) and the
tree is walked here, applying Python's own operators to Python values, in the order CPython
evaluates them, so runtime errors (`division by zero`, `float() argument must be a string or a
real number, not 'tuple'`, ...) are CPython's texts too. Only the node kinds the whitelist can
produce are accepted: numeric and `...` constants, `+ - * / // % **`, unary `+ -`, the empty
tuple `()` and calls of a parenthesised value (`1(2)`, `1(*())`, `1(**())`), which always
fail because no reachable value is callable.

Reproduced upstream behaviour (spec quirk Q19: parser messages are those of CPython 3.11):
- the whitelist check runs before anything else and iterates the argument, so a non-string
  argument fails as upstream did (`'NoneType' object is not iterable`, `'in <string>'
  requires string as left operand, not int`, `eval() arg 1 must be a string, bytes or code
  object` for an empty list);
- leading spaces are stripped before parsing, as `eval` does (`" 1"` → `1.0`, `"  "` →
  `invalid syntax (<string>, line 0)`);
- `7//2` → `3.0`, `2.675` → `2.67` (binary rounding), `99999999999999999*99` → `9.9e+18`.

Deliberate difference: an integer power whose result would exceed `_MAX_POW_BITS` bits
(e.g. `9**9**9`) raises `OverflowError("exponent too large")` instead of running for minutes
as upstream would.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

ALLOWED_CHARACTERS = "0123456789+-*/(). "
INVALID_CHARACTERS = "Error: invalid characters in expression"

_MAX_POW_BITS = 4_000_000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class UnsupportedExpressionError(ValueError):
    """A syntax node the character whitelist should never let through."""


def _power(base: Any, exponent: Any) -> Any:
    if (
        type(base) is int
        and type(exponent) is int
        and exponent > 0
        and abs(base) > 1
        and (abs(base).bit_length() - 1) * exponent > _MAX_POW_BITS
    ):
        raise OverflowError("exponent too large")
    return operator.pow(base, exponent)


def _not_callable(value: Any) -> TypeError:
    return TypeError(f"'{type(value).__name__}' object is not callable")


def _call(node: ast.Call) -> Any:
    """A call: every reachable value is non-callable, so this always raises.

    Without commas a call has at most one argument. CPython 3.11 evaluates the callee, then
    the argument; a `**` argument is checked for being a mapping as soon as it is evaluated,
    a lone `*` argument for being iterable just before the call.
    """
    func = _evaluate(node.func)
    for kw in node.keywords:
        value = _evaluate(kw.value)
        raise TypeError(f"{func!s} argument after ** must be a mapping, not {type(value).__name__}")
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            value = _evaluate(arg.value)
            if not isinstance(value, tuple):
                raise TypeError(
                    f"{func!s} argument after * must be an iterable, not {type(value).__name__}"
                )
        else:
            _evaluate(arg)
    raise _not_callable(func)


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        value = node.value
        if value is Ellipsis or type(value) in (int, float):
            return value
        raise UnsupportedExpressionError(f"unsupported constant {value!r}")
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left)
        right = _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise UnsupportedExpressionError(f"unsupported operator {type(node.op).__name__}")
        return binary(left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand)
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise UnsupportedExpressionError(f"unsupported operator {type(node.op).__name__}")
        return unary(operand)
    if isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return tuple(_evaluate(e) for e in node.elts)
    if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) <= 1:
        return _call(node)
    raise UnsupportedExpressionError(f"unsupported expression {type(node).__name__}")


def evaluate_expression(expression: Any) -> str:
    """The `calculate` observation for `expression`; raises where upstream's eval raised.

    Returns `"Error: invalid characters in expression"` for a character outside the
    whitelist (upstream returned that string); every other failure is raised, and the
    caller's `"Error: " + str(exc)` produces upstream's text.
    """
    if not all(char in ALLOWED_CHARACTERS for char in expression):
        return INVALID_CHARACTERS
    if not isinstance(expression, str):
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    source = expression.lstrip(" \t")
    tree = compile(source, "<string>", "eval", ast.PyCF_ONLY_AST)
    return str(round(float(_evaluate(tree)), 2))
