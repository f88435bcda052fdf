"""What a client may ask of a session, over HTTP and MCP alike: only the tools it serves,
a task index that is one, a split that exists (by default the domain's, as `tau run`), and
no session id of its own choosing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from tau_bench.domains import Domain
from tau_bench.env import Env
from tau_bench.suites import load_domain
from tau_bench.toolserver import BackgroundServer, SessionStore, create_app

from ...conftest import DATA_DIR, TAU3_DATA_DIR
from .conftest import TOY_TASK

TOKEN = "tool-token-checks"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _mcp(url: str, *, headers: dict[str, str] | None = None, **kwargs: Any) -> Client:
    http = httpx2.AsyncClient(headers={**AUTH, **(headers or {})})
    return Client(streamable_http_client(url, http_client=http), **kwargs)


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def toy_server(toy: Domain) -> Iterator[tuple[str, SessionStore]]:
    store = SessionStore(toy, ttl=60)
    with BackgroundServer(create_app(store, TOKEN)) as server:
        yield server.url, store


@pytest.fixture(scope="module")
def retail_server() -> Iterator[tuple[str, SessionStore]]:
    store = SessionStore(load_domain("retail", DATA_DIR))
    with BackgroundServer(create_app(store, TOKEN)) as server:
        yield server.url, store


async def test_mcp_refuses_a_tool_the_session_does_not_serve(toy_server, toy: Domain) -> None:
    """`respond` is the harness's action, not a tool: over MCP it must not reach the log,
    where it would count toward the score (the task's outputs)."""
    url, store = toy_server
    env = Env(toy, TOY_TASK)
    session = store.register(env, toy, task_id=0)
    async with _mcp(f"{url}/mcp?session={session.id}") as client:
        assert "respond" not in {t.name for t in (await client.list_tools()).tools}
        for action in TOY_TASK.actions:
            assert not (await client.call_tool(action.name, action.kwargs)).is_error
        hidden = await client.call_tool("respond", {"content": "blue"})
    assert hidden.is_error and _text(hidden) == "Error: unknown tool 'respond'"
    assert [a.name for a in env.actions] == [a.name for a in TOY_TASK.actions]
    assert env.reward().reward == 0.0  # the outputs were never said
    assert store.get(session.id).calls == len(TOY_TASK.actions)


@pytest.mark.parametrize("task_id", ["²", "٣", "1" * 5000, "", " 1", "-1", "1.0", 10**12])
def test_a_task_id_that_is_no_index_is_a_clean_400(toy_server, task_id: object) -> None:
    url, _ = toy_server
    made = httpx.post(f"{url}/sessions", json={"task_id": task_id}, headers=AUTH)
    assert made.status_code == 400, made.text
    detail = made.json()["detail"]
    assert detail.startswith("task_id must be a task index (an integer from 0), got ")
    assert len(detail) < 120  # a 5,000-digit id is not echoed whole


async def test_a_bad_task_id_over_mcp_is_a_tool_error_without_a_traceback(
    toy_server, caplog: pytest.LogCaptureFixture
) -> None:
    url, store = toy_server
    caplog.set_level(logging.WARNING)
    async with _mcp(f"{url}/mcp?task_id=%C2%B2", mode="legacy") as client:
        listed = await client.list_tools()  # the served domain's tools, still
        assert "get_note" in {t.name for t in listed.tools}
        result = await client.call_tool("get_note", {"user_id": "u1"})
    assert result.is_error
    assert _text(result) == "Error: task_id must be a task index (an integer from 0), got '²'"
    assert len(store) == 0
    assert not [r for r in caplog.records if r.exc_info], caplog.text


async def test_a_stateless_request_cannot_choose_its_session_id(toy_server) -> None:
    url, store = toy_server
    headers = {"Mcp-Session-Id": "my/chosen id"}
    async with _mcp(f"{url}/mcp", headers=headers, mode="2026-07-28") as client:
        result = await client.call_tool("set_note", {"user_id": "u1", "note": "mine"})
    assert result.is_error and "add ?session=<tool session id>" in _text(result)
    assert len(store) == 0


async def test_a_handshake_session_still_gets_its_own_db(toy_server) -> None:
    url, store = toy_server
    async with _mcp(f"{url}/mcp", mode="legacy") as client:
        assert not (await client.call_tool("get_note", {"user_id": "u1"})).is_error
    [sid] = list(store._sessions)
    assert store.get(sid).origin == "mcp"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"split": {"a": 1}}, "split must be the name of a task split, got {'a': 1}"),
        ({"split": "../x"}, "unknown task split '../x' for retail (available: test, train, dev)"),
        ({"split": ""}, "split must be the name of a task split, got ''"),
        ({"split": 3, "task_id": 0}, "split must be the name of a task split, got 3"),
    ],
)
def test_a_split_is_checked_even_without_a_task(retail_server, body: dict, detail: str) -> None:
    url, _ = retail_server
    made = httpx.post(f"{url}/sessions", json=body, headers=AUTH)
    assert made.status_code == 400 and made.json() == {"detail": detail}


def test_task_id_comes_back_as_the_integer_the_openapi_promises(retail_server) -> None:
    url, store = retail_server
    made = httpx.post(f"{url}/sessions", json={"task_id": "007"}, headers=AUTH).json()
    assert made["task_id"] == 7 and made["split"] == "test"
    assert store.get(made["session_id"]).task_id == 7
    info = httpx.get(f"{url}/sessions/{made['session_id']}", headers=AUTH).json()
    assert info["task_id"] == 7 and info["split"] == "test"
    doc = httpx.get(f"{url}/openapi.json", headers=AUTH).json()
    schema = doc["paths"]["/sessions"]["post"]["requestBody"]["content"]["application/json"]
    assert schema["schema"]["properties"]["split"]["default"] == "test"


@pytest.fixture(scope="module")
def tau3_mock_server() -> Iterator[tuple[str, SessionStore]]:
    domain = load_domain("tau3/mock", TAU3_DATA_DIR)
    store = SessionStore(domain)
    with BackgroundServer(create_app(store, TOKEN)) as server:
        yield server.url, store


async def test_tau3_over_mcp_picks_the_task_of_the_suites_default_split(tau3_mock_server) -> None:
    """τ³'s default split is `base` (as `tau run`), not v1's `test`, which tau3/mock lacks."""
    url, store = tau3_mock_server
    before = set(store._sessions)
    async with _mcp(f"{url}/mcp?task_id=1", mode="legacy") as client:
        result = await client.call_tool("get_users", {})
    assert not result.is_error, _text(result)
    [sid] = set(store._sessions) - before
    session = store.get(sid)
    assert (session.task_id, session.split) == (1, "base")
    assert (
        session.env.data_hash() == store.domain.new_env(store.domain.tasks("base")[1]).data_hash()
    )  # type: ignore[union-attr]
    async with _mcp(f"{url}/mcp?task_id=1&split=test", mode="legacy") as client:
        wrong = await client.call_tool("get_users", {})
    assert wrong.is_error and "unknown task split 'test' for tau3/mock" in _text(wrong)
    made = httpx.post(f"{url}/sessions", json={"task_id": 1}, headers=AUTH).json()
    assert made["split"] == "base"
