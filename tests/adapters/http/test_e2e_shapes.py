"""End to end over real sockets: one oracle bot per session shape, scripted user, reward 1.0.

Each test runs real tasks (and a toy task whose tools write to its DB today) through
`tau_bench.episode.run_task` with the HTTP adapter talking to a bot on 127.0.0.1.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.http.adapter import HttpProvider
from adapters.http.config_load import load_config
from tau_bench.agents.oracle import outputs_message
from tau_bench.domains import Domain
from tau_bench.episode import ScoredEpisode, run_task
from tau_bench.toolserver import BackgroundServer
from tau_bench.toolserver.host import ToolServerHost
from tau_bench.users.scripted import ScriptedUser

from . import bots
from .conftest import REAL_TASKS, TOY_TASK, domain_of

TASKS = [pytest.param("toy", 0, id="toy-0")] + [
    pytest.param(d, t, id=f"{d}-{t}") for d, t in REAL_TASKS
]


@pytest.fixture(scope="module")
def _servers() -> Iterator[dict[str, tuple[BackgroundServer, bots.Log]]]:
    started: dict[str, tuple[BackgroundServer, bots.Log]] = {}
    yield started
    for server, _ in started.values():
        server.stop()


@pytest.fixture
def bot(_servers) -> Callable[[str, Callable[[bots.Log], Any]], tuple[str, bots.Log]]:
    """A bot server per kind, started once per module; its log is fresh for each test."""

    def get(kind: str, factory: Callable[[bots.Log], Any]) -> tuple[str, bots.Log]:
        if kind not in _servers:
            log = bots.Log()
            server = BackgroundServer(factory(log))
            server.start()
            _servers[kind] = (server, log)
        server, log = _servers[kind]
        log.requests.clear()
        log.deleted.clear()
        return server.url, log

    return get


def _config(template: dict[str, Any], base_url: str, **extra: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(template)
    cfg["base_url"] = base_url
    cfg.update(extra)
    return cfg


async def play(
    config: dict[str, Any] | str,
    domain: Domain,
    task_id: Any,
    *,
    environ: dict[str, str] | None = None,
) -> ScoredEpisode:
    provider = HttpProvider(load_config(config, environ=environ or {}))
    task = TOY_TASK if domain.name == "toy" else domain.tasks("test")[task_id]
    host = ToolServerHost.for_provider(provider)
    if host is not None:
        host.start()
    try:
        return await run_task(
            domain, task, task_id, provider.new_adapter(), ScriptedUser(), tool_host=host
        )
    finally:
        await provider.aclose()
        if host is not None:
            host.stop()


def assert_solved(scored: ScoredEpisode) -> None:
    result = scored.result
    assert result.error is None, result.error
    assert scored.reward is not None
    assert scored.reward.reward == 1.0, scored.reward.to_dict()
    task = scored.env.task
    assert task is not None
    gt = [(a.name, a.kwargs) for a in task.actions if a.name != "respond"]
    ran = [(a.name, a.kwargs) for a in scored.env.actions if a.name != "respond"]
    assert ran == gt  # every ground-truth call reached the local DB, in order
    agent_turns = [t for t in result.turns if t.role == "agent"]
    assert agent_turns and all(t.raw for t in agent_turns)
    assert all(t.extra["http"][0]["latency"] > 0 for t in agent_turns)


@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_client_session_shape(bot, book, toy, domain_name, task_id) -> None:
    url, log = bot("client", lambda log: bots.client_session_bot(book, log))
    scored = await play(
        _config(bots.CLIENT_SESSION_CONFIG, url), domain_of(domain_name, toy), task_id
    )
    assert_solved(scored)
    chats = [b for kind, b in log.requests if kind == "chat"]
    assert chats[0]["conversation_id"].startswith("conv-")
    assert chats[0]["context"]["task_id"] == task_id  # an int stays an int
    assert {b["conversation_id"] for b in chats} == {chats[0]["conversation_id"]}
    results = [b for kind, b in log.requests if kind == "tool-result"]
    expected = len([a for a in scored.env.actions if a.name not in ("respond",)])
    if scored.result.stop_reason == "terminate_tool":
        expected -= 1  # the terminate tool's result is never sent back
    assert len(results) == expected


@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_server_session_shape_generic_preset(bot, book, toy, domain_name, task_id) -> None:
    url, log = bot(
        "server", lambda log: bots.server_session_bot(book, log, token="s3cret-bot-token")
    )
    config = {"preset": "generic-json"}
    env = {"BOT_URL": url, "BOT_TOKEN": "s3cret-bot-token"}
    scored = await play(config, domain_of(domain_name, toy), task_id, environ=env)
    assert_solved(scored)
    starts = [b for kind, b in log.requests if kind == "start"]
    assert len(starts) == 1 and starts[0]["domain"] == domain_name
    assert len(log.deleted) == 1  # close() ended the server session
    # The start call's record is kept, with the token redacted.
    first = scored.result.turns[1]
    assert first.raw[0]["request"]["url"].endswith("/sessions")
    assert "s3cret-bot-token" not in repr(scored.result.turns)
    assert first.raw[0]["request"]["headers"]["Authorization"] == "***"


@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_stateless_openai_shape(bot, book, toy, domain_name, task_id) -> None:
    domain = domain_of(domain_name, toy)
    url, log = bot(f"openai-{domain_name}", lambda log: bots.openai_bot(book, log, domain.policy))
    env = {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-test-key-123456"}
    scored = await play({"preset": "openai-chat"}, domain, task_id, environ=env)
    assert_solved(scored)
    calls = [b for kind, b in log.requests if kind == "completions"]
    assert calls[0]["model"] == "gpt-4o-mini"
    assert calls[0]["tools"] == domain.tool_schemas
    # Full history every turn: each call's messages extend the previous call's.
    for before, after in itertools.pairwise(calls):
        assert after["messages"][: len(before["messages"])] == before["messages"]
    assert scored.result.agent_usage.prompt_tokens == 100 * len(calls)
    assert "sk-test-key-123456" not in repr(scored.result.turns)


@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_sse_shape(bot, book, toy, domain_name, task_id) -> None:
    url, log = bot("sse", lambda log: bots.sse_bot(book, log))
    scored = await play(_config(bots.SSE_CONFIG, url), domain_of(domain_name, toy), task_id)
    assert_solved(scored)
    first = log.requests[0][1]
    assert first["input"] == scored.result.messages[1]["content"] and first["results"] is None
    final = [m for m in scored.result.messages if m["role"] == "assistant" and m["content"]]
    assert scored.env.task is not None
    assert final[-1]["content"] == outputs_message(scored.env.task.outputs)  # deltas joined


@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_rasa_rest_preset(bot, book, toy, domain_name, task_id) -> None:
    url, log = bot("rasa", lambda log: bots.rasa_bot(book, log))
    scored = await play(
        {"preset": "rasa-rest"}, domain_of(domain_name, toy), task_id, environ={"RASA_URL": url}
    )
    assert_solved(scored)
    senders = {b["sender"] for _, b in log.requests}
    assert len(senders) == 1 and next(iter(senders)).startswith("tau-")
    tool_msgs = [b for _, b in log.requests if b["message"] == "/tool_results"]
    for body in tool_msgs:
        assert body["metadata"]["tool_results"][0]["tool_call_id"].startswith("gt_")


@pytest.mark.parametrize("via", ["http", "mcp"])
@pytest.mark.parametrize(("domain_name", "task_id"), TASKS)
async def test_server_side_tools(bot, book, toy, domain_name, task_id, via) -> None:
    """The bot calls the in-process tool server itself; the episode is scored on its DB."""
    url, log = bot(f"tools-{via}", lambda log: bots.tool_calling_bot(book, log, via=via))
    scored = await play(
        _config(bots.SERVER_TOOLS_CONFIG, url), domain_of(domain_name, toy), task_id
    )
    assert_solved(scored)
    # No tool call went through the loop: all of them came over the network.
    assert not [m for m in scored.result.messages if m["role"] == "tool"]
    body = next(b for kind, b in log.requests if kind == "converse")
    assert body["tools"]["mcp_url"].endswith(
        f"/mcp?session={body['tools']['session_url'].rsplit('/', 1)[1]}"
    )
    # The trajectory never holds the tool server's token.
    assert body["tools"]["token"] not in repr(scored.result.turns)


async def test_server_side_tools_concurrent_episodes_share_one_tool_server(bot, book, toy) -> None:
    import asyncio

    url, log = bot("tools-http", lambda log: bots.tool_calling_bot(book, log, via="http"))
    provider = HttpProvider(load_config(_config(bots.SERVER_TOOLS_CONFIG, url), environ={}))
    host = ToolServerHost.for_provider(provider)
    assert host is not None
    host.start()
    airline = domain_of("airline", toy)
    runs = [(toy, TOY_TASK, 0)] * 3 + [(airline, airline.tasks("test")[1], 1)]
    try:
        scored = await asyncio.gather(
            *(
                run_task(d, t, i, provider.new_adapter(), ScriptedUser(), tool_host=host)
                for d, t, i in runs
            )
        )
        assert len(host.store) == 0  # every session released
    finally:
        await provider.aclose()
        host.stop()
    for episode in scored:
        assert_solved(episode)
    bodies = [b for kind, b in log.requests if kind == "converse"]
    assert len({b["tools"]["url"] for b in bodies}) == 1  # one server for the run
    assert len({b["tools"]["session_url"] for b in bodies}) == 4  # one DB per episode


async def test_real_socket_429_then_401(bot, book, toy) -> None:
    """Over a socket: a 429 with Retry-After is waited out; a wrong token ends the
    episode with an auth error that says so (and does not leak the token)."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    calls = {"n": 0}
    app = FastAPI()

    @app.post("/chat")
    async def chat() -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return JSONResponse(
                {"error": "slow down"}, status_code=429, headers={"Retry-After": "0"}
            )
        return {"reply": "Bye now.", "done": True}

    url, _ = bot("flaky", lambda log: app)
    waits: list[float] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)

    cfg = {
        "base_url": url,
        "message": {"path": "/chat", "body": {"t": "{{ message }}"}},
        "response": {"messages": "reply", "end": "done"},
    }
    provider = HttpProvider(load_config(cfg, environ={}), sleep=sleep)
    scored = await run_task(toy, TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    assert scored.result.error is None and scored.result.stop_reason == "agent_end"
    assert waits == [0.0] and calls["n"] == 2
    assert scored.result.turns[1].extra["http"][0]["attempts"] == 2

    server_url, _ = bot(
        "server", lambda log: bots.server_session_bot(book, log, token="right-token")
    )
    env = {"BOT_URL": server_url, "BOT_TOKEN": "wrong-token-xyz"}
    scored = await play({"preset": "generic-json"}, toy, 0, environ=env)
    error = scored.result.error
    assert error is not None and error.kind == "auth_error" and scored.reward is None
    assert error.message.startswith("HTTP bot refused our credentials: 401 Unauthorized from POST")
    assert "wrong-token-xyz" not in error.message
