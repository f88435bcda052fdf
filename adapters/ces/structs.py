"""Struct values to Python and back for CES (raw protobuf and proto-plus messages).

`google.protobuf.Struct` knows one number type (double): a tool argument `250` arrives
as `250.0`, and τ-bench's database hash tells the two apart. `to_python` hands the decoded
value to the SDK's `tau_adapters.schema_values.restore_ints`, which restores the ints
guided by the tool's JSON schema (the rule is documented there, shared by every adapter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from tau_adapters.schema_values import restore_ints

Schema = Mapping[str, Any] | None


def to_python(struct: Any, schema: Schema = None) -> Any:
    """A Struct (protobuf or proto-plus map) as plain JSON values, ints restored."""
    if isinstance(struct, struct_pb2.Struct):
        plain: Any = json_format.MessageToDict(struct)
    elif isinstance(struct, Mapping):
        plain = _plain(struct)
    else:
        raise TypeError(f"not a Struct: {type(struct).__name__}")
    return restore_ints(plain, schema)


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
    """A proto-plus or protobuf message as a JSON-ready dict (proto field names)."""
    pb = type(message).pb(message) if hasattr(type(message), "pb") else message
    out: dict[str, Any] = json_format.MessageToDict(pb, preserving_proto_field_name=True)
    return out
