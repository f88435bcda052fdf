"""The shared int-restoring rule every hosted adapter applies to tool arguments."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tau_adapters.schema_values import (
    allowed_types,
    parameters_by_name,
    parameters_of,
    restore_ints,
)

BOOKING = {
    "type": "object",
    "properties": {
        "user_id": {"type": "string"},
        "payment_methods": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"payment_id": {"type": "string"}, "amount": {"type": "number"}},
            },
        },
        "total_baggages": {"type": "integer"},
    },
}


def same(a: Any, b: Any) -> bool:
    """Equal with identical types all the way down (250 is not 250.0 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_scalars_follow_the_declared_type() -> None:
    assert same(restore_ints(3.0, {"type": "integer"}), 3)
    assert same(restore_ints(3.0, {"type": "number"}), 3)  # τ-bench amounts are `number`
    assert same(restore_ints(2.5, {"type": "number"}), 2.5)
    assert same(restore_ints(3.0), 3)  # no schema
    assert same(restore_ints(3.0, {"description": "untyped"}), 3)
    assert same(restore_ints(3.0, {"type": "string"}), 3.0)  # declared otherwise: untouched
    assert same(restore_ints(3.0, {"type": ["integer", "null"]}), 3)
    assert same(restore_ints(3.0, {"anyOf": [{"type": "string"}, {"type": "integer"}]}), 3)
    assert same(restore_ints(3.0, {"oneOf": [{"type": "string"}, {"type": "boolean"}]}), 3.0)
    assert same(restore_ints(3.0, {"anyOf": [{"type": "string"}, {"title": "any"}]}), 3)
    assert same(restore_ints(-0.0), 0)
    assert math.isinf(restore_ints(math.inf, {"type": "integer"}))
    assert math.isnan(restore_ints(math.nan))
    assert restore_ints(True, {"type": "integer"}) is True
    assert restore_ints(None, {"type": "integer"}) is None
    assert same(restore_ints("1.0", {"type": "number"}), "1.0")


def test_objects_and_arrays_are_walked_and_keys_follow_the_schema() -> None:
    wire = {
        "total_baggages": 1.0,
        "extra": 2.0,
        "payment_methods": [{"amount": 250.0, "payment_id": "certificate_7504069"}],
        "user_id": "mia_li_3668",
    }
    back = restore_ints(wire, BOOKING)
    expected = {
        "user_id": "mia_li_3668",
        "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250}],
        "total_baggages": 1,
        "extra": 2,  # undeclared: no type constraint, after the declared keys
    }
    assert same(back, expected)


def test_sub_schemas_come_from_every_place_json_schema_puts_them() -> None:
    strings = {"type": "object", "additionalProperties": {"type": "string"}}
    assert same(restore_ints({"k": 1.0}, strings), {"k": 1.0})
    in_alternative = {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]}
    assert same(restore_ints([1.0], in_alternative), [1.0])
    nested = {"oneOf": [{"type": "object", "properties": {"code": {"type": "string"}}}]}
    assert same(restore_ints({"n": 4.0, "code": 7.0}, nested), {"code": 7.0, "n": 4})
    assert same(restore_ints((1.0, 2.5)), [1, 2.5])  # tuples are arrays too
    assert same(restore_ints({"a": {"b": [1.0, None, "x"]}}), {"a": {"b": [1, None, "x"]}})


def test_the_input_is_not_changed_in_place() -> None:
    wire = {"payment_methods": [{"amount": 250.0}]}
    restore_ints(wire, BOOKING)
    assert same(wire, {"payment_methods": [{"amount": 250.0}]})


def test_allowed_types() -> None:
    assert allowed_types(None) is None and allowed_types({"enum": [1]}) is None
    assert allowed_types({"type": "integer"}) == {"integer"}
    assert allowed_types({"anyOf": [{"type": "string"}, {"type": ["null", "number"]}]}) == {
        "string",
        "null",
        "number",
    }


def test_tool_schemas_by_name() -> None:
    tools = [
        {"type": "function", "function": {"name": "book", "parameters": BOOKING}},
        {"name": "bare", "parameters": {"type": "object"}},
        {"type": "function", "function": {"description": "no name"}},
        "not a tool",
        {"type": "function", "function": {"name": "book", "parameters": {"type": "string"}}},
    ]
    assert parameters_by_name(tools) == {"book": BOOKING, "bare": {"type": "object"}}
    assert parameters_of(tools, "book") is BOOKING and parameters_of(tools, "nope") is None
    assert parameters_by_name(None) == {} and parameters_of(None, "book") is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**52), max_value=2**52)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)


def _as_doubles(value: Any) -> Any:
    """What a Struct/JSON-double round trip does to a value: every int becomes a float."""
    if isinstance(value, dict):
        return {k: _as_doubles(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_doubles(v) for v in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


@given(json_values)
def test_a_double_round_trip_is_undone_without_a_schema(value: Any) -> None:
    assert same(restore_ints(_as_doubles(value)), value)
    assert same(restore_ints(json.loads(json.dumps(value))), value)
