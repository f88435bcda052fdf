"""Integral floats back to ints, guided by a tool's JSON schema: one rule for every adapter.

Hosted platforms carry tool arguments as `google.protobuf.Struct`/`Value` (Dialogflow CX,
CES, A2A DataParts) or JSON decoded into doubles: one number type, so an argument `250`
arrives as `250.0`. τ-bench scores by hashing `str()` of its database, where `250` and
`250.0` differ, so an agent that did the right thing would score 0. `restore_ints` undoes
that:

* an integral, finite float becomes an `int` where the schema allows `integer` **or
  `number`** (τ-bench declares amounts `number` while its data stores ints), and where the
  schema says nothing about the type (unknown tool, undeclared property, no `type`);
* where the schema declares only other types (`string`, `boolean`...) the value is left alone;
* non-integral floats, `inf`/`nan`, strings, booleans and nulls are never changed;
* objects and arrays (lists or tuples) are walked through `properties`,
  `additionalProperties`, `items` and `anyOf`/`oneOf`; object keys come back in the
  schema's property order, then the undeclared ones in their own order (a Struct is a map:
  only the schema can give the order back).

Pure standard library: the SDK imports nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["allowed_types", "parameters_by_name", "parameters_of", "restore_ints"]

Schema = Mapping[str, Any] | None
_NUMERIC = frozenset({"integer", "number"})


def allowed_types(schema: Any) -> set[str] | None:
    """The JSON types `schema` admits; None when it does not constrain the type."""
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    subs = [s for key in ("anyOf", "oneOf") for s in schema.get(key) or ()]
    if not subs:
        return None
    found: set[str] = set()
    for sub in subs:
        types = allowed_types(sub)
        if types is None:  # one unconstrained alternative admits anything
            return None
        found |= types
    return found


def _branches(schema: Any) -> list[Mapping[str, Any]]:
    """`schema` and its `anyOf`/`oneOf` alternatives: where sub-schemas may be declared."""
    if not isinstance(schema, Mapping):
        return []
    subs = [s for k in ("anyOf", "oneOf") for s in schema.get(k) or () if isinstance(s, Mapping)]
    return [schema, *subs]


def _property(schema: Any, key: str) -> Schema:
    for branch in _branches(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping) and key in props:
            found: Schema = props[key]
            return found
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping):
            return extra
    return None


def _items(schema: Any) -> Schema:
    for branch in _branches(schema):
        items = branch.get("items")
        if isinstance(items, Mapping):
            return items
    return None


def _order(schema: Any, keys: Iterable[Any]) -> list[Any]:
    declared: list[str] = []
    for branch in _branches(schema):
        props = branch.get("properties")
        if isinstance(props, Mapping):
            declared += [k for k in props if k not in declared]
    present = list(keys)
    if not declared:
        return present
    return [k for k in declared if k in present] + [k for k in present if k not in declared]


def restore_ints(value: Any, schema: Any = None) -> Any:
    """`value` (decoded from a Struct or JSON) with integral floats as ints (see module doc)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        types = allowed_types(schema)
        numeric = types is None or bool(types & _NUMERIC)
        return int(value) if numeric and math.isfinite(value) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {k: restore_ints(value[k], _property(schema, str(k))) for k in _order(schema, value)}
    if isinstance(value, list | tuple):
        items = _items(schema)
        return [restore_ints(v, items) for v in value]
    return value


def parameters_by_name(tools: Iterable[Any] | None) -> dict[str, Any]:
    """Function name -> `parameters` schema, from OpenAI-style tool schemas (bare or wrapped
    in `{"type": "function", "function": ...}`); entries without a string name are skipped and
    a repeated name keeps its first schema, as `parameters_of` does."""
    out: dict[str, Any] = {}
    for tool in tools or ():
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            out.setdefault(fn["name"], fn.get("parameters"))
    return out


def parameters_of(tools: Iterable[Any] | None, name: str) -> Any:
    """The `parameters` schema of tool `name` (the first declared), or None."""
    for tool in tools or ():
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and fn.get("name") == name:
            return fn.get("parameters")
    return None
