"""Put integral floats back to ints, guided by the tool's JSON schema.

A2A DataParts are `google.protobuf.Value`s: every number is a double, so an argument
`250` arrives as `250.0`. τ-bench hashes `str()` of its database, where the two differ,
so a booking stored with `250.0` would score 0 for a correct agent. Rule: an integral
float becomes an int unless the schema declares a non-numeric type for it (τ-bench
declares amounts as `number` but stores them as ints); objects and arrays are walked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_NUMERIC = frozenset({"integer", "number"})


def _declared(schema: Any) -> set[str] | None:
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    found: set[str] = set()
    for alt in [*(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]:
        types = _declared(alt)
        if types is None:
            return None
        found |= types
    return found or None


def _child(schema: Any, key: str | None) -> Any:
    """The sub-schema of property `key` (or of array items when key is None)."""
    if not isinstance(schema, Mapping):
        return None
    for branch in [schema, *(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]:
        if not isinstance(branch, Mapping):
            continue
        if key is None and isinstance(branch.get("items"), Mapping):
            return branch["items"]
        props = branch.get("properties")
        if key is not None and isinstance(props, Mapping) and key in props:
            return props[key]
        if key is not None and isinstance(branch.get("additionalProperties"), Mapping):
            return branch["additionalProperties"]
    return None


def coerce(value: Any, schema: Any = None) -> Any:
    """`value` with integral floats as ints where `schema` allows a number or says nothing."""
    if isinstance(value, float):
        types = _declared(schema)
        if (types is None or types & _NUMERIC) and math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, Mapping):
        return {k: coerce(v, _child(schema, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [coerce(v, _child(schema, None)) for v in value]
    return value


def parameters_of(tools: list[dict[str, Any]], name: str) -> Any:
    """The `parameters` schema of OpenAI function tool `name`, or None."""
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and fn.get("name") == name:
            return fn.get("parameters")
    return None
