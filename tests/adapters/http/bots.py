"""Deterministic HTTP chatbots for the end-to-end tests, one per session shape.

Each plays the task's ground truth the way `tau_bench.agents.oracle` does (the GT tool
calls, then the outputs message), but over its own wire format, so an episode driven by
the HTTP adapter reaches the ground-truth DB only if the adapter speaks that format right.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tau_adapters.protocol import AgentTurn, SessionContext, ToolResult, ToolResults, UserTurn
from tau_bench.agents.oracle import OracleAgent
from tau_bench.tasks import Task


class TaskBook:
    """The tasks the bots may be asked to play: by (domain, task_id) or by instruction."""

    def __init__(self, tasks: dict[tuple[str, Any], Task]) -> None:
        self.tasks = {(d, str(t)): task for (d, t), task in tasks.items()}

    def get(self, domain: str, task_id: Any) -> Task:
        return self.tasks[(domain, str(task_id))]

    def by_instruction(self, text: str) -> Task:
        for task in self.tasks.values():
            if task.instruction == text:
                return task
        raise KeyError(text)


async def new_oracle(task: Task, domain: str = "") -> OracleAgent:
    oracle = OracleAgent()
    await oracle.start(SessionContext(session_id="bot", domain=domain, tools=[], task=task))
    return oracle


def _user() -> UserTurn:
    return UserTurn("(ignored)")


class Log:
    """What the bots saw, for assertions."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Any]] = []
        self.deleted: list[str] = []


# -- 1. client-chosen session id; tool results one by one to a dedicated endpoint --------


def client_session_bot(book: TaskBook, log: Log) -> FastAPI:
    app = FastAPI()
    conversations: dict[str, OracleAgent] = {}

    def reply(turn: AgentTurn) -> dict[str, Any]:
        return {
            "replies": [{"type": "text", "text": m} for m in turn.messages],
            "actions": [
                {"call_id": c.id, "tool": c.name, "args": json.dumps(c.arguments)}
                for c in turn.tool_calls
            ],
            "done": turn.end_conversation,
        }

    @app.post("/chat")
    async def chat(request: Request) -> Any:
        body = await request.json()
        log.requests.append(("chat", body))
        cid = body["conversation_id"]
        if cid not in conversations:
            ctx = body["context"]
            conversations[cid] = await new_oracle(book.get(ctx["domain"], ctx["task_id"]))
        return reply(await conversations[cid].send(UserTurn(body["text"])))

    @app.post("/chat/{cid}/tool-result")
    async def tool_result(cid: str, request: Request) -> Any:
        body = await request.json()
        log.requests.append(("tool-result", body))
        oracle = conversations[cid]
        result = ToolResult(body["call_id"], body["tool"], body["output"])
        return reply(await oracle.send(ToolResults([result])))

    return app


CLIENT_SESSION_CONFIG: dict[str, Any] = {
    "base_url": "BASE",
    "session": {"mode": "client", "id": "conv-{{ session_id }}"},
    "message": {
        "path": "/chat",
        "body": {
            "conversation_id": "{{ bot_session_id }}",
            "text": "{{ message }}",
            "context": {
                "domain": "{{ domain }}",
                "task_id": "{{ task_id }}",
                "user": "{{ user_id }}",
            },
        },
    },
    "tool_results": {
        "mode": "each",
        "path": "/chat/{{ bot_session_id }}/tool-result",
        "body": {
            "call_id": "{{ tool_result.tool_call_id }}",
            "tool": "{{ tool_result.name }}",
            "output": "{{ tool_result.content }}",
        },
    },
    "response": {
        "messages": "replies[?type=='text'].text",
        "tool_calls": "actions",
        "tool_call": {"id": "call_id", "name": "tool", "arguments": "args"},
        "end": "done",
    },
}


# -- 2. server-created sessions (the generic-json preset) ---------------------------------


def server_session_bot(book: TaskBook, log: Log, token: str) -> FastAPI:
    app = FastAPI()
    sessions: dict[str, OracleAgent] = {}

    def authorised(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {token}"

    def reply(turn: AgentTurn) -> dict[str, Any]:
        return {
            "messages": turn.messages,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls
            ],
            "end_conversation": turn.end_conversation,
            "handoff": turn.handoff,
        }

    @app.post("/sessions")
    async def create(request: Request) -> Any:
        if not authorised(request):
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        body = await request.json()
        log.requests.append(("start", body))
        sid = uuid.uuid4().hex
        sessions[sid] = await new_oracle(book.get(body["domain"], body["task_id"]))
        return {"session_id": sid}

    @app.post("/sessions/{sid}/messages")
    async def message(sid: str, request: Request) -> Any:
        if not authorised(request):
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        body = await request.json()
        log.requests.append(("message", body))
        return reply(await sessions[sid].send(UserTurn(body["text"])))

    @app.post("/sessions/{sid}/tool-results")
    async def results(sid: str, request: Request) -> Any:
        body = await request.json()
        log.requests.append(("tool-results", body))
        items = [ToolResult(r["tool_call_id"], r["name"], r["content"]) for r in body["results"]]
        return reply(await sessions[sid].send(ToolResults(items)))

    @app.delete("/sessions/{sid}")
    async def delete(sid: str) -> Any:
        sessions.pop(sid, None)
        log.deleted.append(sid)
        return JSONResponse(None, status_code=204)

    return app


# -- 3. stateless OpenAI chat completions ---------------------------------------------------


def openai_bot(book: TaskBook, log: Log, policy: str) -> FastAPI:
    """Rebuilds the oracle's position from the history on every call: no server state."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        log.requests.append(("completions", body))
        messages = body["messages"]
        if messages[0] != {"role": "system", "content": policy}:
            return JSONResponse({"error": {"message": "system prompt missing"}}, status_code=400)
        if not body.get("tools"):
            return JSONResponse({"error": {"message": "tools missing"}}, status_code=400)
        problem = _history_problem(messages)
        if problem:
            return JSONResponse({"error": {"message": problem}}, status_code=400)
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        oracle = await new_oracle(book.by_instruction(first_user))
        for _ in [m for m in messages if m["role"] == "assistant"]:
            await oracle.send(_user())
        turn = await oracle.send(_user())
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in turn.tool_calls
            ]
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
        }

    return app


def _history_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the real API would reject: tool calls without results, results without calls."""
    open_ids: list[str] = []
    for m in messages:
        if m["role"] == "assistant":
            if open_ids:
                return f"tool calls {open_ids} have no tool message"
            open_ids = [c["id"] for c in m.get("tool_calls") or []]
        elif m["role"] == "tool":
            if m["tool_call_id"] not in open_ids:
                return f"tool message for unknown call {m['tool_call_id']}"
            open_ids.remove(m["tool_call_id"])
        elif m["role"] == "user" and open_ids:
            return f"tool calls {open_ids} have no tool message"
    return None


# -- 4. replies streamed as server-sent events --------------------------------------------


def sse_bot(book: TaskBook, log: Log) -> FastAPI:
    app = FastAPI()
    conversations: dict[str, OracleAgent] = {}

    def events(turn: AgentTurn) -> list[str]:
        out = []
        for text in turn.messages:
            for i in range(0, len(text), 7):  # stream the text in small deltas
                out.append(json.dumps({"type": "text", "delta": text[i : i + 7]}))
        for c in turn.tool_calls:
            out.append(
                json.dumps(
                    {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
                )
            )
        if turn.end_conversation:
            out.append(json.dumps({"type": "end"}))
        return out

    @app.post("/stream")
    async def stream(request: Request) -> Any:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return JSONResponse({"error": "send Accept: text/event-stream"}, status_code=406)
        body = await request.json()
        log.requests.append(("stream", body))
        sid = body["sid"]
        if sid not in conversations:
            conversations[sid] = await new_oracle(book.get(body["domain"], body["task"]))
        oracle = conversations[sid]
        if body.get("results"):
            items = [
                ToolResult(r["tool_call_id"], r["name"], r["content"]) for r in body["results"]
            ]
            turn = await oracle.send(ToolResults(items))
        else:
            turn = await oracle.send(UserTurn(body["input"]))

        async def gen() -> Any:
            yield ": keep-alive comment\n\n"
            for data in events(turn):
                yield f"event: chunk\ndata: {data}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(gen(), media_type="text/event-stream")

    return app


SSE_CONFIG: dict[str, Any] = {
    "base_url": "BASE",
    "message": {
        "path": "/stream",
        "stream": "sse",
        "body": {
            "sid": "{{ session_id }}",
            "domain": "{{ domain }}",
            "task": "{{ task_id }}",
            "input": "{{ message }}",
            "results": "{{ tool_results }}",
        },
    },
    "response": {
        "messages": "join('', [?type=='text'].delta)",
        "tool_calls": "[?type=='tool_call']",
        "end": "[?type=='end']",
    },
}


# -- 5. Rasa's REST channel -----------------------------------------------------------------


def rasa_bot(book: TaskBook, log: Log) -> FastAPI:
    app = FastAPI()
    conversations: dict[str, OracleAgent] = {}

    @app.post("/webhooks/rest/webhook")
    async def webhook(request: Request) -> Any:
        body = await request.json()
        log.requests.append(("webhook", body))
        sender = body["sender"]
        metadata = body.get("metadata") or {}
        if sender not in conversations:
            tau = metadata["tau"]
            conversations[sender] = await new_oracle(book.get(tau["domain"], tau["task_id"]))
        oracle = conversations[sender]
        if body["message"] == "/tool_results":
            items = [
                ToolResult(r["tool_call_id"], r["name"], r["content"])
                for r in metadata["tool_results"]
            ]
            turn = await oracle.send(ToolResults(items))
        else:
            turn = await oracle.send(UserTurn(body["message"]))
        out: list[dict[str, Any]] = [{"recipient_id": sender, "text": m} for m in turn.messages]
        for c in turn.tool_calls:
            out.append(
                {
                    "recipient_id": sender,
                    "custom": {"tool_call": {"id": c.id, "name": c.name, "arguments": c.arguments}},
                }
            )
        if turn.end_conversation:
            out.append({"recipient_id": sender, "custom": {"end_conversation": True}})
        return out

    return app


# -- 6. server-side tools: the bot calls the harness's tool server itself -----------------


def tool_calling_bot(book: TaskBook, log: Log, *, via: str) -> FastAPI:
    """On the first message, runs every GT action on the tool server (HTTP or MCP)."""
    app = FastAPI()

    @app.post("/converse")
    async def converse(request: Request) -> Any:
        body = await request.json()
        log.requests.append(("converse", body))
        if body.get("turn", 0) > 1:
            return {"say": "Thank you, goodbye.", "bye": True}
        task = book.get(body["domain"], body["task_id"])
        headers = {"Authorization": f"Bearer {body['tools']['token']}"}
        terminal = [a for a in task.actions if a.name == "transfer_to_human_agents"]
        actions = [a for a in task.actions if a.name not in ("respond", "transfer_to_human_agents")]
        observations = []
        if via == "http":
            async with httpx.AsyncClient(headers=headers) as client:
                for a in actions + terminal:
                    r = await client.post(
                        f"{body['tools']['session_url']}/tools/{a.name}", json=a.kwargs
                    )
                    r.raise_for_status()
                    observations.append(r.json()["observation"])
        else:
            observations = await _mcp_calls(body["tools"]["mcp_url"], headers, actions + terminal)
        outputs = "; ".join(task.outputs) if task.outputs else "done"
        log.requests.append(("observations", observations))
        return {"say": f"Here is what you asked for: {outputs}.", "handoff": bool(terminal)}

    return app


async def _mcp_calls(url: str, headers: dict[str, str], actions: list[Any]) -> list[str]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import TextContent

    out = []
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for a in actions:
            result = await client.call_tool(a.name, a.kwargs)
            block = result.content[0]
            assert isinstance(block, TextContent)
            out.append(block.text)
    return out


SERVER_TOOLS_CONFIG: dict[str, Any] = {
    "base_url": "BASE",
    "server_tools": {"enabled": True},
    "message": {
        "path": "/converse",
        "body": {
            "domain": "{{ domain }}",
            "task_id": "{{ task_id }}",
            "turn": "{{ turn }}",
            "text": "{{ message }}",
            "tools": {
                "url": "{{ tool_server_url }}",
                "session_url": "{{ tool_session_url }}",
                "mcp_url": "{{ tool_mcp_url }}",
                "token": "{{ tool_token }}",
            },
        },
    },
    "response": {"messages": "say", "end": "bye", "handoff": "handoff"},
}
