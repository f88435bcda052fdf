"""The `calculate` tool's arithmetic, shared by the airline and retail domains (spec §7.2) and τ³.

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

Deliberate differences, so that no expression can hold the event loop (and with it every
episode's deadline) for more than a moment; upstream would compute for minutes or forever:
- an integer power or product whose result would exceed `MAX_INT_BITS` bits (`9**9**9`,
  `2**99999*2**99999`) raises `OverflowError("exponent too large")` /
  `OverflowError("integer too large")`. Upstream's `float()` of any integer above 1024 bits
  fails anyway, so only such an intermediate value's error text differs;
- an expression whose integer results add up to more than `MAX_TOTAL_BITS` bits raises
  `OverflowError("expression too costly")`, and one longer than `MAX_LENGTH` characters
  `ValueError("expression too long")`.
`calculate` in the τ³ domains evaluates with the same walker (`arithmetic`).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

ALLOWED_CHARACTERS = "0123456789+-*/(). "
INVALID_CHARACTERS = "Error: invalid characters in expression"

MAX_INT_BITS = 100_000
"""Largest integer a power or product may produce: ~30,000 decimal digits, a millisecond."""
MAX_TOTAL_BITS = 10_000_000
"""Integer bits an expression may produce in all: a fraction of a second of arithmetic."""
MAX_LENGTH = 10_000
"""Longest expression evaluated (an agent's arithmetic is a line, not a file)."""

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


class _Budget:
    """The integer bits an evaluation has produced so far."""

    def __init__(self) -> None:
        self.bits = 0

    def spend(self, value: Any) -> Any:
        if type(value) is int:
            self.bits += value.bit_length()
            if self.bits > MAX_TOTAL_BITS:
                raise OverflowError("expression too costly")
        return value


def _power(base: Any, exponent: Any) -> Any:
    if (
        type(base) is int
        and type(exponent) is int
        and exponent > 0
        and abs(base) > 1
        and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS
    ):
        raise OverflowError("exponent too large")
    return operator.pow(base, exponent)


def _multiply(left: Any, right: Any) -> Any:
    if (
        type(left) is int
        and type(right) is int
        and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1
    ):
        raise OverflowError("integer too large")
    return operator.mul(left, right)


def _not_callable(value: Any) -> TypeError:
    return TypeError(f"'{type(value).__name__}' object is not callable")


def _call(node: ast.Call, budget: _Budget) -> Any:
    """A call: every reachable value is non-callable, so this always raises.

    Without commas a call has at most one argument. CPython 3.11 evaluates the callee, then
    the argument; a `**` argument is checked for being a mapping as soon as it is evaluated,
    a lone `*` argument for being iterable just before the call.
    """
    func = _evaluate(node.func, budget)
    for kw in node.keywords:
        value = _evaluate(kw.value, budget)
        raise TypeError(f"{func!s} argument after ** must be a mapping, not {type(value).__name__}")
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            value = _evaluate(arg.value, budget)
            if not isinstance(value, tuple):
                raise TypeError(
                    f"{func!s} argument after * must be an iterable, not {type(value).__name__}"
                )
        else:
            _evaluate(arg, budget)
    raise _not_callable(func)


def _evaluate(node: ast.AST, budget: _Budget) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, budget)
    if isinstance(node, ast.Constant):
        value = node.value
        if value is Ellipsis or type(value) in (int, float):
            return value
        raise UnsupportedExpressionError(f"unsupported constant {value!r}")
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left, budget)
        right = _evaluate(node.right, budget)
        if isinstance(node.op, ast.Pow):
            return budget.spend(_power(left, right))
        if isinstance(node.op, ast.Mult):
            return budget.spend(_multiply(left, right))
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise UnsupportedExpressionError(f"unsupported operator {type(node.op).__name__}")
        return budget.spend(binary(left, right))
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, budget)
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise UnsupportedExpressionError(f"unsupported operator {type(node.op).__name__}")
        return unary(operand)
    if isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return tuple(_evaluate(e, budget) for e in node.elts)
    if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) <= 1:
        return _call(node, budget)
    raise UnsupportedExpressionError(f"unsupported expression {type(node).__name__}")


def arithmetic(expression: str) -> Any:
    """The value of a whitelisted `expression` as CPython's `eval` computes it, within the
    bounds above; raises what `eval` raises (and `OverflowError`/`ValueError` past them)."""
    if len(expression) > MAX_LENGTH:
        raise ValueError("expression too long")
    source = expression.lstrip(" \t")
    tree = compile(source, "<string>", "eval", ast.PyCF_ONLY_AST)
    return _evaluate(tree, _Budget())


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
    return str(round(float(arithmetic(expression)), 2))
