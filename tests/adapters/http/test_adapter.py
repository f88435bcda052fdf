"""The adapter: build() options, history and tool-result plumbing, errors that end one
episode (and not the run), the SDK conformance kit. HTTP mocked with respx."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import yaml

from adapters.http.adapter import HttpConfigError, HttpProvider, build
from adapters.http.config_load import load_config
from tau_adapters.protocol import (
    AdapterConfigError,
    SessionContext,
    ToolResult,
    ToolResults,
    UserTurn,
)
from tau_adapters.registry import build_provider
from tau_adapters.testing import check_adapter
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from .conftest import TOY_TASK

OPENAI_LIKE: dict[str, Any] = {
    "base_url": "http://bot.test",
    "session": {"mode": "stateless"},
    "message": {"path": "/chat", "body": {"messages": "{{ messages }}", "tools": "{{ tools }}"}},
    "response": {
        "messages": "choices[0].message.content",
        "tool_calls": "choices[0].message.tool_calls",
        "tool_call": {"id": "id", "name": "function.name", "arguments": "function.arguments"},
    },
}


def _completion(
    content: str | None = None, calls: Sequence[tuple[str, str, dict[str, Any]]] = ()
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    return {"choices": [{"message": message}]}


def _session(**over: Any) -> SessionContext:
    base: dict[str, Any] = {
        "session_id": "sess-1",
        "domain": "toy",
        "tools": [{"type": "function", "function": {"name": "get_note"}}],
        "policy": "Be nice.",
        "task_id": 0,
        "user_id": "u1",
    }
    base.update(over)
    return SessionContext(**base)


def test_build_reads_the_config_from_options(tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(OPENAI_LIKE))
    assert isinstance(build({"http_config": str(path)}), HttpProvider)
    assert isinstance(build({"agent_options": {"http_config": str(path)}}), HttpProvider)
    assert isinstance(build({"http_config": OPENAI_LIKE}), HttpProvider)
    assert isinstance(build_provider("http", {"http_config": str(path)}), HttpProvider)


def test_build_errors_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(HttpConfigError, match="needs a bot config: pass --http-config"):
        build({})
    path = tmp_path / "bot.yaml"
    path.write_text("base_url: http://x\nmessage: {}\nresponse: {}\n")
    with pytest.raises(HttpConfigError, match=r"bot.yaml: response: set at least one") as info:
        build({"http_config": str(path)})
    assert isinstance(info.value, AdapterConfigError)


@respx.mock
async def test_history_drops_tool_calls_the_loop_did_not_run() -> None:
    """With max_tool_calls_per_turn the loop answers a prefix: the rest never happened."""
    bodies: list[dict[str, Any]] = []
    replies = [
        _completion(
            calls=[("c1", "get_note", {"user_id": "u1"}), ("c2", "get_note", {"user_id": "u2"})]
        ),
        _completion("Done."),
    ]

    def respond(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=replies[len(bodies) - 1])

    respx.post("http://bot.test/chat").mock(side_effect=respond)
    provider = HttpProvider(load_config(OPENAI_LIKE, environ={}))
    adapter = provider.new_adapter()
    await adapter.start(_session())
    turn = await adapter.send(UserTurn("hi"))
    assert [c.id for c in turn.tool_calls] == ["c1", "c2"]
    turn = await adapter.send(ToolResults([ToolResult("c1", "get_note", '{"name": "Ann"}')]))
    assert turn.text == "Done."
    sent = bodies[1]["messages"]
    assert sent[0] == {"role": "system", "content": "Be nice."}
    assert sent[2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_note", "arguments": '{"user_id": "u1"}'},
        }
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"name": "Ann"}'}
    assert len(sent) == 4
    await adapter.close()
    await provider.aclose()


@respx.mock
async def test_mismatching_reply_ends_the_episode_and_the_run_goes_on() -> None:
    bad = {"choices": [{"message": {"role": "assistant", "refusal": "nope" * 200}}]}
    good_then_stop = [
        _completion(calls=[("c1", "get_note", {"user_id": "u1"})]),
        _completion(calls=[("c2", "set_note", {"user_id": "u1", "note": "blue"})]),
        _completion("Here is what you asked for: blue."),
    ]
    state = {"n": 0}

    def respond(request: httpx.Request) -> httpx.Response:
        state["n"] += 1
        if state["n"] == 1:
            return httpx.Response(200, json=bad)
        return httpx.Response(200, json=good_then_stop[state["n"] - 2])

    respx.post("http://bot.test/chat").mock(side_effect=respond)
    from .conftest import make_toy_domain

    toy = make_toy_domain()
    provider = HttpProvider(load_config(OPENAI_LIKE, environ={}))
    first = await run_task(toy, TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    assert first.result.error is not None and first.reward is None
    assert first.result.error.kind == "protocol_error"
    message = first.result.error.message
    assert "does not match the response mapping" in message and '"refusal": "nopenope' in message
    assert "more chars]" in message and len(message) < 1000
    second = await run_task(toy, TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    assert second.result.error is None and second.reward_value == 1.0
    await provider.aclose()


@respx.mock
async def test_401_ends_the_episode_with_an_auth_error() -> None:
    respx.post("http://bot.test/chat").respond(401, json={"error": "invalid api key"})
    cfg = {**OPENAI_LIKE, "headers": {"Authorization": "Bearer ${K}"}}
    provider = HttpProvider(load_config(cfg, environ={"K": "sk-live-abcdef"}))
    from .conftest import make_toy_domain

    scored = await run_task(make_toy_domain(), TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    error = scored.result.error
    assert error is not None and error.kind == "auth_error" and not error.retryable
    assert "refused our credentials: 401" in error.message and "sk-live-abcdef" not in error.message
    await provider.aclose()


@respx.mock
async def test_server_session_without_id_is_a_protocol_error() -> None:
    cfg = {
        **OPENAI_LIKE,
        "session": {"mode": "server", "start": {"path": "/start"}, "id_path": "session.id"},
    }
    respx.post("http://bot.test/start").respond(200, json={"session": {"token": "x"}})
    provider = HttpProvider(load_config(cfg, environ={}))
    adapter = provider.new_adapter()
    with pytest.raises(
        Exception, match=r"no session id at session.id_path \('session.id'\); payload: .*token"
    ):
        await adapter.start(_session())
    await provider.aclose()


@respx.mock
async def test_server_tools_without_an_endpoint_is_a_config_error() -> None:
    cfg = {**OPENAI_LIKE, "server_tools": {"enabled": True}}
    provider = HttpProvider(load_config(cfg, environ={}))
    assert provider.tool_server is not None and provider.tool_server.host == "127.0.0.1"
    with pytest.raises(AdapterConfigError, match="no tool endpoint"):
        await provider.new_adapter().start(_session())
    await provider.aclose()


@respx.mock
async def test_each_mode_sends_results_one_by_one_and_merges_replies() -> None:
    cfg = {
        "base_url": "http://bot.test",
        "message": {"path": "/m", "body": {"t": "{{ message }}"}},
        "tool_results": {
            "mode": "each",
            "path": "/r",
            "body": {"id": "{{ tool_result.tool_call_id }}"},
        },
        "response": {"messages": "say", "tool_calls": "calls"},
    }
    respx.post("http://bot.test/m").respond(
        200, json={"calls": [{"id": "a", "name": "x"}, {"id": "b", "name": "y"}]}
    )
    r = respx.post("http://bot.test/r").mock(
        side_effect=[httpx.Response(200, json={}), httpx.Response(200, json={"say": "both done"})]
    )
    provider = HttpProvider(load_config(cfg, environ={}))
    adapter = provider.new_adapter()
    await adapter.start(_session())
    await adapter.send(UserTurn("go"))
    turn = await adapter.send(ToolResults([ToolResult("a", "x", "1"), ToolResult("b", "y", "2")]))
    assert [json.loads(c.request.content)["id"] for c in r.calls] == ["a", "b"]
    assert turn.messages == ["both done"] and len(turn.raw) == 2 and len(turn.extra["http"]) == 2
    await provider.aclose()


@respx.mock
async def test_conformance_kit() -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        last = messages[-1]
        if last["role"] == "user":
            return httpx.Response(
                200, json=_completion(calls=[(f"c{len(messages)}", "echo", {"text": "ping"})])
            )
        return httpx.Response(200, json=_completion(f"echoed: {last['content']}"))

    respx.post("http://bot.test/chat").mock(side_effect=respond)
    provider = HttpProvider(load_config(OPENAI_LIKE, environ={}))
    report = await check_adapter(provider.new_adapter, require_tool_call=True, timeout=10)
    assert report.ok, report.summary()
    await provider.aclose()
