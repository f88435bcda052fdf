"""Fixtures: the reference A2A agent (oracle brain) and scripted hostile peers, all on
real sockets at 127.0.0.1 (uvicorn on a background thread, ephemeral port)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.a2a.adapter import A2AProvider, parse_options
from adapters.a2a.harness.reference_agent import ReferenceExecutor
from adapters.a2a.harness.server import Auth, LoopbackServer, a2a_app, agent_card
from tau_bench.agents.oracle import OracleAgent

from ...conftest import DATA_DIR

TASK_METADATA = ["env={env}", "task_id={task_id}", "task_split={task_split}"]


def reference_app(
    url: str, *, streaming: bool = True, auth: Auth = None, secret: str | None = None
) -> Any:
    executor = ReferenceExecutor(OracleAgent, data_dir=DATA_DIR)
    card = agent_card(url, streaming=streaming, auth=auth)
    return a2a_app(executor, card, auth=auth, secret=secret)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str], Any]], str]]:
    """Start an app factory on 127.0.0.1:0; returns its URL; stopped after the test."""
    servers: list[LoopbackServer] = []

    def start(factory: Callable[[str], Any]) -> str:
        server = LoopbackServer(factory)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def reference_url() -> Iterator[str]:
    with LoopbackServer(reference_app) as server:
        yield server.url


def provider_for(url: str, **options: Any) -> A2AProvider:
    return A2AProvider(
        parse_options({"agent_url": url, "message_metadata": TASK_METADATA, **options})
    )
