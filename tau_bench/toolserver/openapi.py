"""The tool server's OpenAPI document, generated from the domain's tool schemas.

One operation per tool (`POST /sessions/{session_id}/tools/{name}`, operationId = the
tool's name, request body = its JSON-schema parameters), so a hosted agent platform can
import the whole domain as one OpenAPI tool.
"""

from __future__ import annotations

import copy
from typing import Any

OPENAPI_VERSION = "3.0.3"

_OBSERVATION = {
    "type": "object",
    "properties": {"observation": {"type": "string", "description": "What the tool returned."}},
    "required": ["observation"],
}
_SESSION_ID = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "description": "The conversation's tool session (created by POST /sessions).",
    "schema": {"type": "string"},
}
_ERRORS = {
    "401": {"description": "Missing or wrong bearer token."},
    "404": {"description": "Unknown or expired session."},
}
_TOOL_ERRORS = {
    "400": {"description": "The body is not JSON, nested too deep, or larger than 1 MiB."},
    "401": _ERRORS["401"],
    "404": {"description": "Unknown or expired session, or a tool it does not serve."},
    "408": {"description": "The body did not arrive in time."},
    "429": {
        "description": "The session has made its most tool calls, or sent its most "
        "argument bytes: start a new session."
    },
}


def tool_functions(tool_schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `function` part of OpenAI tool schemas (accepts bare functions too)."""
    out = []
    for schema in tool_schemas:
        fn = schema.get("function", schema)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out.append(fn)
    return out


def _summary(description: str) -> str:
    first = description.strip().split("\n")[0]
    return first if len(first) <= 120 else first[:117] + "..."


def build_openapi(
    tool_schemas: list[dict[str, Any]],
    *,
    domain: str,
    server_url: str | None = None,
    default_split: str | None = None,
) -> dict[str, Any]:
    split_schema: dict[str, Any] = {
        "type": "string",
        "description": "The task split `task_id` indexes (default: the domain's, "
        "as `tau run`: test for τ-bench, base for τ³).",
    }
    if default_split:
        split_schema["default"] = default_split
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Liveness probe (no token needed).",
                "security": [],
                "responses": {"200": {"description": "The server is up."}},
            }
        },
        "/sessions": {
            "post": {
                "operationId": "createSession",
                "summary": "Create a tool session: a private copy of the domain database.",
                "requestBody": {
                    "required": False,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "task_id": {"type": "integer", "minimum": 0},
                                    "split": split_schema,
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "The new session.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "session_id": {"type": "string"},
                                        "domain": {"type": "string"},
                                        "task_id": {"type": "integer", "nullable": True},
                                        "split": {"type": "string"},
                                    },
                                }
                            }
                        },
                    },
                    "400": {"description": "A bad task_id or split."},
                    "401": _ERRORS["401"],
                },
            }
        },
        "/sessions/{session_id}": {
            "parameters": [_SESSION_ID],
            "get": {
                "operationId": "getSession",
                "summary": "The session's database hash and tool-call count.",
                "responses": {"200": {"description": "Session info."}, **_ERRORS},
            },
            "delete": {
                "operationId": "deleteSession",
                "summary": "Forget the session.",
                "responses": {"204": {"description": "Deleted."}, **_ERRORS},
            },
        },
    }
    for fn in tool_functions(tool_schemas):
        name = fn["name"]
        description = str(fn.get("description") or name)
        parameters = copy.deepcopy(fn.get("parameters") or {"type": "object", "properties": {}})
        paths[f"/sessions/{{session_id}}/tools/{name}"] = {
            "post": {
                "operationId": name,
                "summary": _summary(description),
                "description": description,
                "parameters": [_SESSION_ID],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": parameters}},
                },
                "responses": {
                    "200": {
                        "description": "The tool's observation.",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Observation"}
                            }
                        },
                    },
                    **_TOOL_ERRORS,
                },
            }
        }
    doc: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"τ-bench {domain} tools",
            "version": "1.0.0",
            "description": (
                f"The {domain} domain's tools over HTTP. Each session has a private database; "
                "send `Authorization: Bearer <token>`."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": {"Observation": _OBSERVATION},
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearerAuth": []}],
    }
    if server_url:
        doc["servers"] = [{"url": server_url.rstrip("/")}]
    return doc
