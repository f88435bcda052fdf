"""A domain tool's JSON schema as a CES client-function `Tool` (for provisioning and the
emulator's preloaded apps).

CES schemas are OpenAPI-style messages (`type_` enum, `properties`, `required`, `items`,
`enum`, `any_of`, `nullable`...). Keywords with no CES counterpart are dropped;
`additionalProperties: false` is the default behaviour there and is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "object": "OBJECT",
    "array": "ARRAY",
}


def function_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `function` part of an OpenAI tool schema (or the schema itself)."""
    fn = schema.get("function", schema)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise ValueError("tool schema without a function name")
    return fn


def ces_schema(schema: Mapping[str, Any]) -> Any:
    """JSON schema -> `ces_v1.Schema`."""
    from google.cloud import ces_v1

    out = ces_v1.Schema()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    if "null" in types:
        out.nullable = True
        types = [t for t in types if t != "null"]
    if types:
        name = _TYPES.get(str(types[0]))
        if name is None:
            raise ValueError(f"unsupported JSON schema type {types[0]!r}")
        out.type_ = getattr(ces_v1.Schema.Type, name)
    if isinstance(schema.get("description"), str):
        out.description = schema["description"]
    for key, value in (schema.get("properties") or {}).items():
        out.properties[str(key)] = ces_schema(value)
    if schema.get("required"):
        out.required = [str(r) for r in schema["required"]]
    if isinstance(schema.get("items"), Mapping):
        out.items = ces_schema(schema["items"])
    if schema.get("enum"):
        out.enum = [str(e) for e in schema["enum"]]
    alternatives = schema.get("anyOf") or schema.get("oneOf") or []
    if alternatives:
        out.any_of = [ces_schema(a) for a in alternatives]
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        out.additional_properties = ces_schema(extra)
    return out


def tool_message(schema: Mapping[str, Any]) -> Any:
    """The client-function Tool for one domain tool (display name is derived server-side)."""
    from google.cloud import ces_v1

    fn = function_of(schema)
    function = ces_v1.ClientFunction(
        name=fn["name"], description=str(fn.get("description") or "").strip()
    )
    params = fn.get("parameters")
    if isinstance(params, Mapping):
        function.parameters = ces_schema(params)
    return ces_v1.Tool(client_function=function)
