"""τ³'s tool schemas describe object arguments through `$ref`s into `$defs` and `anyOf`:
the schema check follows them, so a malformed object argument is a `bad_arguments`
rejection of that sample, never an exception that stops the whole generation run."""

from __future__ import annotations

from typing import Any

import pytest

from tau_bench.sdg.answers import ProposedAction
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.sandbox import Sandbox
from tau_bench.sdg.schema_check import check_call

USER = "mohamed_silva_9265"
RESERVATION = "K1NW8N"


@pytest.mark.parametrize("flights", [["HAT001"], [None], [["HAT001", "2024-05-20"]]])
def test_a_malformed_flight_is_bad_arguments_not_a_crash(tau3_airline: Any, flights: Any) -> None:
    kwargs = {
        "reservation_id": RESERVATION,
        "cabin": "economy",
        "flights": flights,
        "payment_id": "credit_card_4196779",
    }
    action = ProposedAction(name="update_reservation_flights", kwargs=kwargs)
    verdict = Sandbox(tau3_airline).validate(USER, [action], Difficulty.easy)
    assert [p.reason for p in verdict.problems] == ["bad_arguments"]
    assert "kwargs.flights[0]" in verdict.problems[0].message


def test_any_of_accepts_a_value_one_branch_accepts() -> None:
    schemas = {
        "f": {
            "$defs": {"P": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "type": "object",
            "properties": {
                "xs": {
                    "type": "array",
                    "items": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "integer"}]},
                }
            },
        }
    }
    assert check_call(schemas, 0, "f", {"xs": [{"a": "x"}, 3]}) == []
    problems = check_call(schemas, 0, "f", {"xs": ["s"]})
    assert [p.reason for p in problems] == ["bad_arguments"]
    assert check_call(schemas, 0, "f", {"xs": [{"a": 1}]})[0].message.endswith("got int")
