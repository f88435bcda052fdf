"""Struct values to Python and back, restoring the integers a Struct cannot carry.

`google.protobuf.Struct` knows one number type (double): a tool argument `250` arrives
as `250.0`. τ-bench scores by hashing the database's text, where `250` and `250.0`
differ, so an agent that did the right thing would score 0. `restore_ints` undoes it,
guided by the tool's JSON schema:

* integral, finite floats become ints where the schema allows `integer` or `number`
  (τ-bench declares amounts `number` but stores ints), or says nothing about the type;
* values the schema types otherwise (`string`, `boolean`), non-integral floats, strings,
  booleans and nulls are left as they are;
* objects and arrays are walked (`properties`, `additionalProperties`, `items`,
  `anyOf`/`oneOf`); object keys follow the schema's property order, then the rest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

Schema = Mapping[str, Any] | None


def _alternatives(schema: Schema) -> list[Mapping[str, Any]]:
    if not isinstance(schema, Mapping):
        return []
    subs = [s for k in ("anyOf", "oneOf") for s in schema.get(k) or () if isinstance(s, Mapping)]
    return [schema, *subs]


def allowed_types(schema: Schema) -> set[str] | None:
    """The JSON types `schema` admits; None when it does not constrain the type."""
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    subs = [s for k in ("anyOf", "oneOf") for s in schema.get(k) or ()]
    if not subs:
        return None
    found: set[str] = set()
    for sub in subs:
        types = allowed_types(sub)
        if types is None:
            return None
        found |= types
    return found


def _child(schema: Schema, key: str) -> Schema:
    for branch in _alternatives(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping) and key in props:
            found: Schema = props[key]
            return found
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping):
            return extra
    return None


def _items(schema: Schema) -> Schema:
    for branch in _alternatives(schema):
        items = branch.get("items")
        if isinstance(items, Mapping):
            return items
    return None


def _order(schema: Schema, keys: Iterable[str]) -> list[str]:
    declared: list[str] = []
    for branch in _alternatives(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping):
            declared += [k for k in props if k not in declared]
    present = list(keys)
    return [k for k in declared if k in present] + [k for k in present if k not in declared]


def restore_ints(value: Any, schema: Schema = None) -> Any:
    """`value` with integral floats turned back into ints (see the module doc)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        types = allowed_types(schema)
        numeric = types is None or bool(types & {"integer", "number"})
        return int(value) if numeric and math.isfinite(value) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {k: restore_ints(value[k], _child(schema, k)) for k in _order(schema, value)}
    if isinstance(value, list | tuple):
        items = _items(schema)
        return [restore_ints(v, items) for v in value]
    return value


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
