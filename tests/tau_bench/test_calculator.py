"""`calculate`'s bounds: no expression holds the event loop (and every episode's deadline
with it), in v1's domains and τ³'s, while ordinary arithmetic keeps upstream's answers."""

from __future__ import annotations

import pytest

from tau_bench.calculator import MAX_LENGTH, evaluate_expression
from tau_bench.tau3.domains.common import calculate


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 2", "4.0"),
        ("10/3", "3.33"),
        ("99999999999999999*99", "9.9e+18"),
        ("2**2000/2**1990", "1024.0"),  # big intermediates within the bounds still work
        ("(2**5000-2**5000+1)", "1.0"),
    ],
)
def test_ordinary_arithmetic_keeps_its_value_in_both_suites(expression: str, value: str) -> None:
    assert evaluate_expression(expression) == value
    assert calculate(expression) == value


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        # Each power is allowed; their product is not computed (upstream: then `float()`'s
        # "int too large to convert to float", after the multiplication).
        ("2**99999*2**99999", "integer too large"),
        ("9**9**9**9", "exponent too large"),  # upstream's eval: never returns
        ("+".join(["3**60000"] * 400), "expression too costly"),  # each part is cheap
    ],
)
def test_costly_arithmetic_is_refused_in_both_suites(expression: str, error: str) -> None:
    with pytest.raises(OverflowError, match=error):
        evaluate_expression(expression)
    with pytest.raises(OverflowError, match=error):
        calculate(expression)


def test_an_expression_longer_than_any_arithmetic_is_refused() -> None:
    text = "1+" * (MAX_LENGTH // 2) + "1"
    with pytest.raises(ValueError, match="expression too long"):
        evaluate_expression(text)
    with pytest.raises(ValueError, match="expression too long"):
        calculate(text)


def test_tau3_keeps_its_own_whitelist_error() -> None:
    with pytest.raises(ValueError, match="Invalid characters in expression"):
        calculate("1e5")
    assert evaluate_expression("1e5") == "Error: invalid characters in expression"
