"""The tool server over real sockets: auth, per-session isolation, expiry, concurrency,
the OpenAPI document, and MCP clients (the official SDK) completing a ground truth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from tau_bench.domains import Domain, load_domain
from tau_bench.env import Env
from tau_bench.scoring import ground_truth
from tau_bench.toolserver import BackgroundServer, SessionNotFound, SessionStore, create_app

from ...conftest import DATA_DIR
from .conftest import TOY_TASK

TOKEN = "tool-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def toy_server(toy: Domain) -> Iterator[tuple[str, SessionStore, Clock]]:
    clock = Clock()
    store = SessionStore(toy, ttl=60, clock=clock)
    with BackgroundServer(create_app(store, TOKEN)) as server:
        yield server.url, store, clock


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _mcp(url: str, token: str = TOKEN, **kwargs: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), **kwargs)


def test_bearer_token_required_except_health(toy_server) -> None:
    url, _, _ = toy_server
    assert httpx.get(f"{url}/health").json()["status"] == "ok"
    for method, path in [
        ("POST", "/sessions"),
        ("GET", "/openapi.json"),
        ("GET", "/sessions/x"),
        ("POST", "/sessions/x/tools/get_note"),
        ("POST", "/mcp"),
    ]:
        r = httpx.request(method, url + path, json={})
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"] == "Bearer"
        wrong = httpx.request(method, url + path, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401, path


def test_sessions_are_isolated(toy_server) -> None:
    url, _, _ = toy_server
    with httpx.Client(base_url=url, headers=AUTH) as c:
        a = c.post("/sessions", json={}).json()["session_id"]
        b = c.post("/sessions").json()["session_id"]
        assert a != b
        pristine = c.get(f"/sessions/{b}").json()["data_hash"]
        r = c.post(f"/sessions/{a}/tools/set_note", json={"user_id": "u1", "note": "from A"})
        assert r.status_code == 200 and json.loads(r.json()["observation"])["note"] == "from A"
        assert "note" not in json.loads(
            c.post(f"/sessions/{b}/tools/get_note", json={"user_id": "u1"}).json()["observation"]
        )
        info_a, info_b = c.get(f"/sessions/{a}").json(), c.get(f"/sessions/{b}").json()
        assert info_a["data_hash"] != pristine and info_b["data_hash"] == pristine
        assert (info_a["tool_calls"], info_b["tool_calls"]) == (1, 1)


def test_tool_call_errors(toy_server) -> None:
    url, _, _ = toy_server
    with httpx.Client(base_url=url, headers=AUTH) as c:
        sid = c.post("/sessions").json()["session_id"]
        assert c.post(f"/sessions/{sid}/tools/nope", json={}).status_code == 404
        assert c.post("/sessions/missing/tools/get_note", json={}).status_code == 404
        bad = c.post(
            f"/sessions/{sid}/tools/get_note",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert bad.status_code == 400
        # Benchmark semantics: argument errors are observations, not HTTP errors.
        obs = c.post(f"/sessions/{sid}/tools/get_note", json={"wrong": 1}).json()["observation"]
        assert obs.startswith("Error: GetNote.invoke() got an unexpected keyword argument 'wrong'")
        assert c.delete(f"/sessions/{sid}").status_code == 204
        assert c.get(f"/sessions/{sid}").status_code == 404
        assert c.delete(f"/sessions/{sid}").status_code == 404
        assert c.post("/sessions", json={"task_id": 0}).status_code == 400  # toy has no task files


def test_idle_sessions_expire(toy_server) -> None:
    url, store, clock = toy_server
    with httpx.Client(base_url=url, headers=AUTH) as c:
        old = c.post("/sessions").json()["session_id"]
        clock.now += 50
        fresh = c.post("/sessions").json()["session_id"]
        assert c.get(f"/sessions/{old}").status_code == 200  # touching keeps it alive
        clock.now += 61
        assert c.get(f"/sessions/{fresh}").status_code == 404
        assert c.get(f"/sessions/{old}").status_code == 404
    assert len(store) == 0
    with pytest.raises(SessionNotFound):
        store.get(old)


def test_concurrent_sessions_do_not_cross_talk(toy_server) -> None:
    url, store, _ = toy_server

    def worker(i: int) -> tuple[str, str]:
        with httpx.Client(base_url=url, headers=AUTH) as c:
            sid = c.post("/sessions").json()["session_id"]
            for n in range(5):
                c.post(
                    f"/sessions/{sid}/tools/set_note", json={"user_id": "u2", "note": f"{i}-{n}"}
                )
            obs = c.post(f"/sessions/{sid}/tools/get_note", json={"user_id": "u2"}).json()[
                "observation"
            ]
            return sid, json.loads(obs)["note"]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(worker, range(16)))
    assert [note for _, note in results] == [f"{i}-4" for i in range(16)]
    assert len({sid for sid, _ in results}) == 16
    for i, (sid, _) in enumerate(results):
        assert store.get(sid).env.db["users"]["u2"]["note"] == f"{i}-4"


def test_openapi_has_one_operation_per_tool(data_dir) -> None:
    retail = load_domain("retail", DATA_DIR)
    store = SessionStore(retail)
    with BackgroundServer(create_app(store, TOKEN, server_url="https://tools.example")) as server:
        doc = httpx.get(f"{server.url}/openapi.json", headers=AUTH).json()
    assert doc["openapi"].startswith("3.") and doc["servers"] == [{"url": "https://tools.example"}]
    ops = {
        path: spec["post"]
        for path, spec in doc["paths"].items()
        if path.startswith("/sessions/{session_id}/tools/")
    }
    names = [s["function"]["name"] for s in retail.tool_schemas]
    assert sorted(op["operationId"] for op in ops.values()) == sorted(names)
    for schema in retail.tool_schemas:
        fn = schema["function"]
        op = ops[f"/sessions/{{session_id}}/tools/{fn['name']}"]
        assert op["requestBody"]["content"]["application/json"]["schema"] == fn["parameters"]
        assert op["parameters"][0]["name"] == "session_id"
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert doc["paths"]["/health"]["get"]["security"] == []
    op_ids = [
        op["operationId"] for p in doc["paths"].values() for k, op in p.items() if k != "parameters"
    ]
    assert len(op_ids) == len(set(op_ids))


async def test_mcp_client_completes_a_ground_truth(toy_server, toy) -> None:
    """A session registered with an episode's Env, driven over MCP, scores 1.0."""
    url, store, _ = toy_server
    env = Env(toy, TOY_TASK)
    session = store.register(env, env.domain, task_id=0)
    async with _mcp(f"{url}/mcp?session={session.id}") as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == {
            "get_note",
            "set_note",
            "transfer_to_human_agents",
        }
        schema = next(t for t in listed.tools if t.name == "set_note").input_schema
        assert schema["required"] == ["user_id", "note"]
        for action in TOY_TASK.actions:
            result = await client.call_tool(action.name, action.kwargs)
            assert not result.is_error, result.content
        bad = await client.call_tool("get_note", {"user_id": "nobody"})
        assert bad.is_error and _text(bad) == "Error: user not found"
    assert (
        env.data_hash()
        == ground_truth(toy, TOY_TASK).data_hash
        != toy.base_db.episode().data_hash()
    )
    env.respond("Here it is: blue.")
    assert env.reward().reward == 1.0


async def test_mcp_real_task_over_http_created_session(data_dir) -> None:
    airline = load_domain("airline", DATA_DIR)
    task = airline.tasks("test")[1]
    store = SessionStore(airline)
    with BackgroundServer(create_app(store, TOKEN)) as server:
        sid = httpx.post(f"{server.url}/sessions", json={"task_id": 1}, headers=AUTH).json()[
            "session_id"
        ]
        async with _mcp(f"{server.url}/mcp?session={sid}") as client:
            for action in task.actions:
                await client.call_tool(action.name, action.kwargs)
        info = httpx.get(f"{server.url}/sessions/{sid}", headers=AUTH).json()
    assert info["data_hash"] == ground_truth(airline, task).data_hash
    assert store.get(sid).env.reward().reward == 1.0


async def test_each_mcp_session_gets_its_own_db(toy_server) -> None:
    url, store, _ = toy_server
    async with _mcp(f"{url}/mcp", mode="legacy") as one, _mcp(f"{url}/mcp", mode="legacy") as two:
        await one.call_tool("set_note", {"user_id": "u1", "note": "one"})
        await two.call_tool("set_note", {"user_id": "u1", "note": "two"})
        seen_one = json.loads(_text(await one.call_tool("get_note", {"user_id": "u1"})))
        seen_two = json.loads(_text(await two.call_tool("get_note", {"user_id": "u1"})))
    assert (seen_one["note"], seen_two["note"]) == ("one", "two")
    mcp_sessions = [store.get(s) for s in list(store._sessions) if store.get(s).origin == "mcp"]
    assert sorted(s.env.db["users"]["u1"]["note"] for s in mcp_sessions) == ["one", "two"]


async def test_stateless_mcp_without_a_session_is_told_how_to_bind(toy_server) -> None:
    url, store, _ = toy_server
    async with _mcp(f"{url}/mcp", mode="2026-07-28") as client:  # no Mcp-Session-Id
        result = await client.call_tool("get_note", {"user_id": "u1"})
    assert result.is_error and "add ?session=<tool session id>" in _text(result)
    assert len(store) == 0


async def test_mcp_needs_the_token(toy_server) -> None:
    url, _, _ = toy_server
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 its own way
        async with _mcp(f"{url}/mcp", token="wrong") as client:
            await client.list_tools()
