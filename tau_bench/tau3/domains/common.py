"""Tools shared by several τ³ domains (same behaviour and texts everywhere)."""

from __future__ import annotations

from tau_bench.calculator import ALLOWED_CHARACTERS, arithmetic


def calculate(expression: str) -> str:
    """Arithmetic as the original's `eval` with no builtins does it, `str(round(float(value),
    2))`, Python's errors; evaluated by v1's bounded walker (`tau_bench.calculator`:
    an expression cannot run for minutes, as `9**9**9**9` did through `eval`)."""
    if not all(char in ALLOWED_CHARACTERS for char in expression):
        raise ValueError("Invalid characters in expression")
    if not isinstance(expression, str):
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    return str(round(float(arithmetic(expression)), 2))


TRANSFER_RESULT = "Transfer successful"
