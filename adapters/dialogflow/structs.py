"""Struct <-> Python values, and why integral floats become ints again.

`google.protobuf.Struct` has one number type (double), so a tool argument `250` sent by
the agent arrives as `250.0`. τ-bench hashes `str()` of the database, where `250` and
`250.0` differ, so a booking stored with `250.0` would score 0 although the agent did the
right thing. The rule used here, guided by the tool's JSON schema (`session.tools`):

* an integral float becomes an `int` where the schema says `integer` **or `number`**
  (τ-bench declares amounts as `number` while its data stores them as ints), and where
  the schema says nothing (unknown tool, undeclared property, no `type`);
* where the schema declares another type (`string`, `boolean`...) the value is left alone;
* non-integral floats, `inf`/`nan`, strings, booleans and nulls are never changed;
* objects and arrays are walked recursively (`properties`, `additionalProperties`,
  `items`, `anyOf`/`oneOf`), and object keys are put back in the schema's property order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

_NUMERIC = {"integer", "number"}


def _types(schema: Mapping[str, Any] | None) -> set[str] | None:
    """The JSON types a schema allows, or None when it does not say."""
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    alternatives = [s for key in ("anyOf", "oneOf") for s in schema.get(key) or []]
    if alternatives:
        found: set[str] = set()
        for alt in alternatives:
            types = _types(alt)
            if types is None:
                return None
            found |= types
        return found
    return None


def _branches(schema: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not isinstance(schema, Mapping):
        return []
    alts = [
        s for key in ("anyOf", "oneOf") for s in schema.get(key) or [] if isinstance(s, Mapping)
    ]
    return [schema, *alts]


def _property_schema(schema: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    for branch in _branches(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping) and key in props:
            return props[key]  # type: ignore[no-any-return]
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping):
            return extra
    return None


def _items_schema(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    for branch in _branches(schema):
        items = branch.get("items")
        if isinstance(items, Mapping):
            return items
    return None


def _key_order(schema: Mapping[str, Any] | None) -> list[str]:
    order: list[str] = []
    for branch in _branches(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping):
            order.extend(k for k in props if k not in order)
    return order


def coerce(value: Any, schema: Mapping[str, Any] | None = None) -> Any:
    """`value` (decoded from a Struct) with integral floats restored as ints (see module doc)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        types = _types(schema)
        if (types is None or types & _NUMERIC) and math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, Mapping):
        order = _key_order(schema)
        keys = [k for k in order if k in value] + [k for k in value if k not in order]
        return {k: coerce(value[k], _property_schema(schema, k)) for k in keys}
    if isinstance(value, list | tuple):
        items = _items_schema(schema)
        return [coerce(v, items) for v in value]
    return value


def struct_to_python(
    struct: struct_pb2.Struct | Any, schema: Mapping[str, Any] | None = None
) -> Any:
    """A Struct (raw protobuf or proto-plus map) as plain JSON values, coerced by `schema`."""
    if isinstance(struct, struct_pb2.Struct):
        value: Any = json_format.MessageToDict(struct)
    elif isinstance(struct, Mapping):
        value = _plain(struct)
    else:
        raise TypeError(f"not a Struct: {type(struct).__name__}")
    return coerce(value, schema)


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


def message_to_dict(message: Any) -> dict[str, Any]:
    """A proto-plus or protobuf message as a JSON-ready dict (field names as in the proto)."""
    pb = type(message).pb(message) if hasattr(type(message), "pb") else message
    return json_format.MessageToDict(pb, preserving_proto_field_name=True)
