"""Scripted A2A peers for failure tests: a real card and a JSON-RPC endpoint that plays
back a list of answers (JSON bodies, HTTP errors, SSE streams, streams that never end)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from adapters.a2a.convention import EXTENSION_URI


def card(
    url: str,
    *,
    streaming: bool = False,
    security: dict[str, Any] | None = None,
    extension: bool = True,
) -> dict:
    data: dict[str, Any] = {
        "name": "scripted peer",
        "description": "plays back scripted answers",
        "version": "0",
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "streaming": streaming,
            "extensions": [{"uri": EXTENSION_URI}] if extension else [],
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["t"]}],
    }
    if security:
        data["securitySchemes"] = security
        data["securityRequirements"] = [{"schemes": {name: {"list": []}}} for name in security]
    return data


def task(state: str, parts: list[dict[str, Any]], task_id: str = "t1") -> dict[str, Any]:
    return {
        "id": task_id,
        "contextId": "c1",
        "status": {
            "state": state,
            "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": parts},
        },
    }


def result(payload: dict[str, Any], rpc_id: Any = "1") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "result": payload}


@dataclass
class Http:
    """A plain HTTP answer (status, JSON body, headers)."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Sse:
    """An SSE answer: these JSON-RPC results, then (hang=True) keep the stream open."""

    results: list[dict[str, Any]]
    hang: bool = False


@dataclass
class Peer:
    """Answers the n-th JSON-RPC call with `script[n]` (a dict is a JSON-RPC result)."""

    script: list[Any]
    streaming: bool = False
    security: dict[str, Any] | None = None
    extension: bool = True
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def app(self, url: str) -> Starlette:
        async def card_route(request: Request) -> Response:
            return JSONResponse(
                card(
                    url, streaming=self.streaming, security=self.security, extension=self.extension
                )
            )

        async def rpc(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            answer = self.script.pop(0) if self.script else Http(500, {"error": "script over"})
            if isinstance(answer, Http):
                return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)
            if isinstance(answer, Sse):
                return StreamingResponse(
                    _sse(answer, body.get("id")), media_type="text/event-stream"
                )
            if isinstance(answer, dict) and "jsonrpc" not in answer:
                # A bare task: SendMessage wraps it in {"task": ...}; GetTask returns it.
                wrapped = {"task": answer} if body.get("method") == "SendMessage" else answer
                answer = result(wrapped, body.get("id"))
            return JSONResponse(answer)

        return Starlette(
            routes=[
                Route("/.well-known/agent-card.json", card_route),
                Route("/", rpc, methods=["POST"]),
            ]
        )


async def _sse(answer: Sse, rpc_id: Any) -> AsyncIterator[str]:
    for item in answer.results:
        yield f"data: {json.dumps(result(item, rpc_id))}\n\n"
    while answer.hang:
        await asyncio.sleep(0.05)
        yield ": keep-alive\n\n"
