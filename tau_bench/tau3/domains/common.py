"""Tools shared by several τ³ domains (same behaviour and texts everywhere)."""

from __future__ import annotations

_CALC_CHARS = frozenset("0123456789+-*/(). ")


def calculate(expression: str) -> str:
    """Evaluate arithmetic with no builtins; `str(round(float(value), 2))`; Python's errors."""
    if not all(char in _CALC_CHARS for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


TRANSFER_RESULT = "Transfer successful"
