"""A reference HTTP chatbot speaking the `generic-json` preset, backed by a local agent.

Users rehearse the HTTP adapter end to end without a bot of their own (`tau http
serve-bot`), and the README's offline demo uses it. Its "brain" is any registered agent
strategy (oracle by default, which needs the task: the preset's session-start body sends
`domain` - any `--env` name, τ³ ones included - and `task_id`; `task_split` defaults
to the domain's: test for v1, base for τ³). `task_id` is a task's index (a number or a
string of digits); null, absent or "" is no task: an LLM brain talks without one, the
oracle's session then answers every message 422 (it has nothing to replay). Any other
task_id is a 422 at session start saying what is expected.

    POST   /sessions                     {domain, task_id, ...} -> {"session_id": ...}
    POST   /sessions/{id}/messages       {"text": ...}          -> reply
    POST   /sessions/{id}/tool-results   {"results": [...]}     -> reply
    DELETE /sessions/{id}
    reply: {"messages": [...], "tool_calls": [{id, name, arguments}], "end_conversation", "handoff"}
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tau_adapters.protocol import (
    AdapterConfigError,
    AgentAdapter,
    AgentTurn,
    ToolResult,
    ToolResults,
    UserTurn,
)
from tau_adapters.redaction import truncate
from tau_adapters.registry import AgentProvider, build_provider


def _reply(turn: AgentTurn) -> dict[str, Any]:
    return {
        "messages": list(turn.messages),
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls
        ],
        "end_conversation": turn.end_conversation,
        "handoff": turn.handoff,
    }


def task_index(raw: Any, count: int, where: str) -> int | None:
    """The session's `task_id`: an index into the `count` tasks of `where` (a number or a
    string of digits), or None for no task (null, absent or ""). Anything else is a
    ValueError saying what the bot expects, never Python's own `int()` message."""
    if raw is None or raw == "":
        return None
    text = str(raw).strip() if isinstance(raw, int | str) and not isinstance(raw, bool) else ""
    if not (text.isascii() and text.isdigit()):
        scalar = isinstance(raw, int | float | str | bool)
        shown = truncate(repr(raw), 80) if scalar else f"a JSON {type(raw).__name__}"
        raise ValueError(
            f"task_id must be the index of a task of {where} (0 to {count - 1}), "
            f"or null for no task; got {shown}"
        )
    if len(text) > 9 or int(text) >= count:
        shown = truncate(text, 20)
        raise ValueError(f"task_id {shown} out of range for {where} (0 to {count - 1})")
    return int(text)


def create_bot_app(
    *,
    brain: str = "oracle",
    brain_options: Mapping[str, Any] | None = None,
    data_dir: str | Path | None = None,
    token: str | None = None,
) -> FastAPI:
    """The bot as an ASGI app; `token` requires `Authorization: Bearer <token>`."""
    from tau_bench.episode import session_for
    from tau_bench.suites import load_domain

    provider: AgentProvider = build_provider(
        brain, {"data_dir": data_dir, **dict(brain_options or {})}
    )
    sessions: dict[str, AgentAdapter] = {}
    refused: dict[str, str] = {}  # sessions whose brain could not start: why
    locks: dict[str, asyncio.Lock] = {}
    app = FastAPI(title="tau-adapters reference bot", docs_url=None, redoc_url=None)

    def _error(status: int, detail: str) -> JSONResponse:
        return JSONResponse({"detail": detail}, status_code=status)

    @app.middleware("http")
    async def auth(request: Request, call_next: Any) -> Any:
        if token and request.headers.get("authorization") != f"Bearer {token}":
            return _error(401, "missing or wrong bearer token")
        return await call_next(request)

    @app.post("/sessions")
    async def start(request: Request) -> JSONResponse:
        body = await request.json()
        if not isinstance(body, dict):
            return _error(422, "expected a JSON object")
        try:
            domain = load_domain(str(body.get("domain") or "retail"), data_dir)
            split = str(body.get("task_split") or domain.default_split)
            tasks = domain.tasks(split)
            task_id = task_index(body.get("task_id"), len(tasks), f"{domain.name}/{split}")
        except (ValueError, KeyError) as exc:
            return _error(422, str(exc))
        task = tasks[task_id] if task_id is not None else None
        session = (
            session_for(domain, task, task_id if task_id is not None else "", 0) if task else None
        )
        if session is None:
            from tau_adapters.protocol import SessionContext

            session = SessionContext(
                str(uuid.uuid4()), domain.name, domain.tool_schemas, domain.policy
            )
        adapter = provider.new_adapter()
        bot_id = uuid.uuid4().hex
        try:
            await adapter.start(session)
        except AdapterConfigError as exc:
            if task is not None:
                return _error(422, str(exc))
            # No task (a pre-flight's session check): the bot is up, but a brain that
            # needs a task (the oracle) cannot talk in this session.
            refused[bot_id] = (
                f"{exc} (the session start named no task_id; e.g. tau http check --probe "
                "--task-id 0)"
            )
        sessions[bot_id] = adapter
        locks[bot_id] = asyncio.Lock()
        return JSONResponse({"session_id": bot_id})

    async def _send(bot_id: str, turn: UserTurn | ToolResults) -> JSONResponse:
        adapter = sessions.get(bot_id)
        if adapter is None:
            return _error(404, f"unknown session {bot_id}")
        if bot_id in refused:
            return _error(422, refused[bot_id])
        async with locks[bot_id]:
            return JSONResponse(_reply(await adapter.send(turn)))

    @app.post("/sessions/{bot_id}/messages")
    async def message(bot_id: str, request: Request) -> JSONResponse:
        body = await request.json()
        return await _send(
            bot_id, UserTurn(str(body.get("text", "")) if isinstance(body, dict) else "")
        )

    @app.post("/sessions/{bot_id}/tool-results")
    async def tool_results(bot_id: str, request: Request) -> JSONResponse:
        body = await request.json()
        raw = body.get("results") if isinstance(body, dict) else None
        if not isinstance(raw, list):
            return _error(422, "expected {'results': [...]}")
        results = [
            ToolResult(
                call_id=str(r.get("tool_call_id", "")),
                name=str(r.get("name", "")),
                content=str(r.get("content", "")),
                is_error=bool(r.get("is_error", False)),
            )
            for r in raw
            if isinstance(r, dict)
        ]
        return await _send(bot_id, ToolResults(results))

    @app.delete("/sessions/{bot_id}")
    async def end(bot_id: str) -> JSONResponse:
        adapter = sessions.pop(bot_id, None)
        locks.pop(bot_id, None)
        if refused.pop(bot_id, None) is None and adapter is not None:
            await adapter.close()
        return JSONResponse({"deleted": adapter is not None})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "brain": brain, "sessions": len(sessions)}

    return app
