"""Dialogflow function tools from τ-bench tool schemas (used by provisioning and the emulator).

Each domain tool becomes one function tool: display name = the function name, input
schema = the function's JSON schema, output schema = an object with one string field
`result`, which is where the adapter puts the tool's observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.dialogflow.structs import python_to_struct

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"type": "string"}},
}


def function_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `{name, description, parameters}` part of an OpenAI-style tool schema."""
    fn = schema.get("function", schema)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise ValueError("a tool schema needs function.name")
    return fn


def tool_message(schema: Mapping[str, Any]) -> Any:
    """A `cx.Tool` (no resource name yet) for one τ-bench tool schema."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    fn = function_of(schema)
    parameters = fn.get("parameters") or {"type": "object", "properties": {}}
    tool = cx.Tool(display_name=fn["name"], description=str(fn.get("description") or fn["name"]))
    spec = cx.Tool.FunctionTool()
    type(spec).pb(spec).input_schema.CopyFrom(python_to_struct(parameters))
    type(spec).pb(spec).output_schema.CopyFrom(python_to_struct(OUTPUT_SCHEMA))
    tool.function_spec = spec
    return tool
