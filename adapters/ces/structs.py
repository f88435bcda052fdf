"""Struct values to Python and back for CES (raw protobuf and proto-plus messages).

`google.protobuf.Struct` knows one number type (double): a tool argument `250` arrives
as `250.0`, and τ-bench's database hash tells the two apart. `to_python` hands the decoded
value to the SDK's `tau_adapters.schema_values.restore_ints`, which restores the ints
guided by the tool's JSON schema (the rule is documented there, shared by every adapter).

A Struct may carry numbers JSON has no spelling for (NaN, ±Infinity), which protobuf's
JSON conversion refuses: they become the strings `"NaN"`, `"Infinity"` and
`"-Infinity"` (proto3 JSON's spelling of such doubles), so an odd payload is kept and
never breaks the episode.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from tau_adapters.schema_values import restore_ints

Schema = Mapping[str, Any] | None


def to_python(struct: Any, schema: Schema = None) -> Any:
    """A Struct (protobuf or proto-plus map) as plain JSON values, ints restored."""
    if isinstance(struct, struct_pb2.Struct):
        plain: Any = _to_dict(struct)
    elif isinstance(struct, Mapping):
        plain = _plain(struct)
    else:
        raise TypeError(f"not a Struct: {type(struct).__name__}")
    return restore_ints(plain, schema)


def struct_values(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct's values as Python, read directly: a tool call's arguments, where a NaN
    or an infinity stays the float it is (as a model's JSON arguments decode, and as the
    Dialogflow CX adapter reads them) for the tool to answer, instead of breaking the
    episode in protobuf's JSON printer."""
    return {key: _value(item) for key, item in struct.fields.items()}


def _value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return struct_values(value.struct_value)
    if kind == "list_value":
        return [_value(item) for item in value.list_value.values]
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        return value
    return [_plain(v) for v in value]


def to_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON object as a Struct (ints become doubles there: the format's limit)."""
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


def message_dict(message: Any) -> dict[str, Any]:
    """A proto-plus or protobuf message as a JSON-ready dict (proto field names);
    non-finite numbers in Struct values become strings (module doc)."""
    pb = type(message).pb(message) if hasattr(type(message), "pb") else message
    return _to_dict(pb, preserving_proto_field_name=True)


def _to_dict(pb: Message, **kwargs: Any) -> Any:
    try:
        return json_format.MessageToDict(pb, **kwargs)
    except (ValueError, json_format.Error):
        # NaN or Infinity in a Value: convert a copy where they are strings.
        copy = type(pb)()
        copy.CopyFrom(pb)
        _finite(copy)
        return json_format.MessageToDict(copy, **kwargs)


def _nonfinite_text(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def _finite(message: Message) -> None:
    """Replace, in place, every non-finite `Value.number_value` by its string spelling."""
    is_value = message.DESCRIPTOR.full_name == "google.protobuf.Value"
    if is_value and message.WhichOneof("kind") == "number_value":
        number = message.number_value  # type: ignore[attr-defined]
        if not math.isfinite(number):
            message.string_value = _nonfinite_text(number)  # type: ignore[attr-defined]
        return
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if descriptor.is_repeated:
            if descriptor.message_type.GetOptions().map_entry:
                if descriptor.message_type.fields_by_name["value"].message_type is not None:
                    for item in value.values():
                        _finite(item)
            else:
                for item in value:
                    _finite(item)
        else:
            _finite(value)
