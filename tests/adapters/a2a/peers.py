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

FLOOD_CAP = 256 * 1024 * 1024


def card(
    url: str,
    *,
    streaming: bool = False,
    security: dict[str, Any] | None = None,
    extension: bool = True,
    name: str = "scripted peer",
) -> dict:
    data: dict[str, Any] = {
        "name": name,
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
class Raw:
    """Bytes as they are (e.g. gzip-compressed), with these headers."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200


@dataclass
class Sse:
    """An SSE answer: these JSON-RPC results, then (hang=True) keep the stream open;
    flood=True: repeat the last result without end, as fast as the socket takes it;
    endless_line=True: then start a `data:` line that never ends."""

    results: list[dict[str, Any]]
    hang: bool = False
    flood: bool = False
    endless_line: bool = False


@dataclass
class Peer:
    """Answers the n-th JSON-RPC call with `script[n]` (a dict is a JSON-RPC result)."""

    script: list[Any]
    streaming: bool = False
    security: dict[str, Any] | None = None
    extension: bool = True
    name: str = "scripted peer"
    pad_card: int = 0  # bytes of padding in the card (a description that long)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def app(self, url: str) -> Starlette:
        async def card_route(request: Request) -> Response:
            data = card(
                url,
                streaming=self.streaming,
                security=self.security,
                extension=self.extension,
                name=self.name,
            )
            if self.pad_card:
                data["description"] = "x" * self.pad_card
            return JSONResponse(data)

        async def rpc(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            answer = self.script.pop(0) if self.script else Http(500, {"error": "script over"})
            if isinstance(answer, Raw):
                return Response(answer.body, status_code=answer.status, headers=answer.headers)
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
    # "Without end" for the client: both stop when it hangs up (Starlette cancels the
    # generator; sleep(0) lets it), or at worst after FLOOD_CAP bytes.
    event = (
        f"data: {json.dumps(result(answer.results[-1], rpc_id))}\n\n" * 16 if answer.flood else ""
    )
    for _ in range(FLOOD_CAP // max(len(event), 1) if answer.flood else 0):
        yield event
        await asyncio.sleep(0)
    if answer.endless_line:
        yield "data: "
        for _ in range(FLOOD_CAP // 65536):
            yield "a" * 65536
            await asyncio.sleep(0)
    while answer.hang:
        await asyncio.sleep(0.05)
        yield ": keep-alive\n\n"
