"""Struct conversion: integral floats back to ints where the schema allows, nothing lost."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.dialogflow.structs import python_to_struct, struct_to_python

BOOKING_SCHEMA = {
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
        "note": {"type": "string"},
    },
}


def same(a: Any, b: Any) -> bool:
    """Equal with identical types all the way down (250 is not 250.0 here); a Struct is a
    map, so key order only comes back where a schema gives it."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_booking_amounts_come_back_as_ints() -> None:
    sent = {
        "total_baggages": 1,
        "user_id": "mia_li_3668",
        "payment_methods": [{"amount": 250, "payment_id": "certificate_7504069"}],
    }
    struct = python_to_struct(sent)
    assert struct["total_baggages"] == 1.0  # the wire has doubles only
    back = struct_to_python(struct, BOOKING_SCHEMA)
    assert same(
        back,
        {
            "user_id": "mia_li_3668",
            "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250}],
            "total_baggages": 1,
        },
    )
    assert list(back) == ["user_id", "payment_methods", "total_baggages"]  # schema order


def test_nested_nulls_bools_and_strings_survive_the_wire() -> None:
    value = {"a": None, "b": [True, False, None, "1.0"], "c": {"d": {"e": -0.5}}, "f": []}
    assert same(struct_to_python(python_to_struct(value)), value)


def test_proto_plus_maps_are_read_deeply() -> None:
    from google.cloud import dialogflowcx_v3beta1 as cx

    call = cx.ToolCall(tool="t", action="a", input_parameters={"x": [1, {"y": 2.0, "z": None}]})
    assert same(struct_to_python(call.input_parameters), {"x": [1, {"y": 2, "z": None}]})


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


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=4))
def test_round_trip_without_schema_is_exact(value: dict[str, Any]) -> None:
    # Ints (exact in a double up to 2**53) and non-integral floats come back as they went.
    back = struct_to_python(python_to_struct(value))
    assert same({k: back[k] for k in value}, value)
