"""Check a tool call's name and arguments against the domain's tool schemas.

A small subset of JSON Schema - the one the domains' tool schemas use: type, enum,
properties, required, items, and (τ³'s pydantic-made schemas) local `$ref`s into `$defs`
and `anyOf`. Unknown argument names are errors too: the tool would refuse them. A `$ref`
left unresolved would let any value through to the constraint checks, which expect the
declared shapes (a flight given as a string crashed the run instead of rejecting it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_bench.sdg.problems import BAD_ARGUMENTS, UNKNOWN_TOOL, Problem

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def schemas_by_name(tool_schemas: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool name -> its `parameters` schema (OpenAI function format)."""
    out = {}
    for schema in tool_schemas:
        function = schema.get("function", schema)
        out[function["name"]] = function.get("parameters") or {"type": "object"}
    return out


def _type_ok(value: Any, kind: str) -> bool:
    allowed = _TYPES.get(kind)
    if allowed is None:
        return True
    if isinstance(value, bool) and kind != "boolean":
        return False
    return isinstance(value, allowed)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema`, or the `$defs`/`definitions` entry its local `$ref` names (a ref that
    cannot be resolved is treated as no constraint, as before)."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < 32:
        section, _, name = schema["$ref"].removeprefix("#/").partition("/")
        target = root.get(section) if section in ("$defs", "definitions") else None
        found = target.get(name) if isinstance(target, Mapping) else None
        if not isinstance(found, Mapping):
            return {}
        schema, seen = found, seen + 1
    return schema


def _check(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    out: list[str],
    root: Mapping[str, Any] | None = None,
) -> None:
    root = schema if root is None else root
    schema = _resolve(schema, root)
    branches = schema.get("anyOf")
    if isinstance(branches, list) and branches:
        tried: list[list[str]] = []
        for branch in branches:
            found: list[str] = []
            if isinstance(branch, Mapping):
                _check(value, branch, path, found, root)
            if not found:
                break
            tried.append(found)
        else:
            out.extend(tried[0])
            return
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(value, kind):
        out.append(f"{path} must be {kind}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path} must be one of {schema['enum']}, got {value!r}")
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                out.append(f"{path}.{name} is required")
        for name, item in value.items():
            if properties and name not in properties:
                out.append(f"{path}.{name} is not a parameter")
            elif name in properties:
                _check(item, properties[name], f"{path}.{name}", out, root)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]", out, root)


def check_call(
    schemas: Mapping[str, Mapping[str, Any]], index: int, name: str, kwargs: Any
) -> list[Problem]:
    """Problems with calling tool `name` with `kwargs` (empty: the call is well-formed)."""
    if name not in schemas:
        known = ", ".join(sorted(schemas))
        return [Problem(UNKNOWN_TOOL, f"{name!r} is not a tool of this domain ({known})", index)]
    messages: list[str] = []
    _check(kwargs, schemas[name], "kwargs", messages)
    return [Problem(BAD_ARGUMENTS, f"{name}: {m}", index) for m in messages]
