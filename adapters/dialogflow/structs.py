"""Struct <-> Python values for Dialogflow CX (raw protobuf and proto-plus messages).

`google.protobuf.Struct` has one number type (double), so a tool argument `250` sent by
the agent arrives as `250.0`; τ-bench hashes `str()` of the database, where the two
differ. `struct_to_python` therefore hands the decoded value to the SDK's
`tau_adapters.schema_values.restore_ints`, which puts integral floats back to ints guided
by the tool's JSON schema (the rule is documented there, shared with the other adapters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from tau_adapters.schema_values import restore_ints


def struct_to_python(
    struct: struct_pb2.Struct | Any, schema: Mapping[str, Any] | None = None
) -> Any:
    """A Struct (raw protobuf or proto-plus map) as plain JSON values, coerced by `schema`."""
    if isinstance(struct, struct_pb2.Struct):
        value: Any = {key: _from_value(item) for key, item in struct.fields.items()}
    elif isinstance(struct, Mapping):
        value = _plain(struct)
    else:
        raise TypeError(f"not a Struct: {type(struct).__name__}")
    return restore_ints(value, schema)


def _from_value(value: struct_pb2.Value) -> Any:
    """One Struct value as Python, read directly (json_format's walk costs several times
    more, and this runs on every tool call)."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return {key: _from_value(item) for key, item in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_from_value(item) for item in value.list_value.values]
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


def _plain(value: Any) -> Any:
    """Deep-copy proto-plus map/repeated composites into dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return value


def python_to_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON object as a Struct (ints become doubles: that is the format's limit)."""
    struct = struct_pb2.Struct()
    struct.update(_jsonable(value))
    return struct


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def message_to_dict(message: Any) -> dict[str, Any]:
    """A proto-plus or protobuf message as a JSON-ready dict (field names as in the proto).

    A `Struct` number that is not finite (NaN, ±infinity: JSON has no spelling for them,
    and protobuf's JSON printer refuses them in a Struct) is recorded as the string
    `"NaN"`, `"Infinity"` or `"-Infinity"`, as JSON-proto writes a non-finite double
    field: a payload never breaks the episode."""
    pb = type(message).pb(message) if hasattr(type(message), "pb") else message
    try:
        return json_format.MessageToDict(pb, preserving_proto_field_name=True)
    except json_format.SerializeToJsonError:
        copy = type(pb)()
        copy.CopyFrom(pb)
        if not _finite_structs(copy):
            raise
        return json_format.MessageToDict(copy, preserving_proto_field_name=True)


def _finite_structs(message: Any) -> bool:
    """Replace, in place and at any depth, every non-finite `Value.number_value` by its
    JSON-proto string; whether any was found."""
    found = False
    if (
        message.DESCRIPTOR.full_name == "google.protobuf.Value"
        and message.WhichOneof("kind") == "number_value"
        and not math.isfinite(message.number_value)
    ):
        message.string_value = NON_FINITE[repr(message.number_value)]
        return True
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            if fd.message_type.fields_by_name["value"].message_type is None:
                continue
            items: Any = value.values()
        elif fd.is_repeated:
            items = value
        else:
            items = (value,)
        for item in items:
            found = _finite_structs(item) or found
    return found
