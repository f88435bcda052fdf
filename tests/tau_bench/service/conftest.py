"""Fixtures for `tau serve`: an app on a temp state dir, clients, and a gated agent.

The gated agent is the oracle, except that on the tasks it is told to block it stops at
the start of the episode until the test releases it: the test then knows a run is in
the middle (one episode done, the next in flight) without any sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tau_adapters import registry
from tau_adapters.protocol import AdapterConfigError, SessionContext
from tau_adapters.registry import AgentProvider, SimpleProvider
from tau_bench.agents.oracle import OracleAgent
from tau_bench.service.api import create_app
from tau_bench.service.settings import ServiceSettings
from tests.conftest import DATA_DIR, TAU3_DATA_DIR
from tests.tau_bench.agents.fake_llm import fake_llm, llm_env

__all__ = ["fake_llm", "llm_env"]

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 60.0  # upper bound of a long poll; runs of the oracle finish in well under a second
ORACLE = {"env": "airline", "agent_strategy": "oracle", "user_strategy": "scripted"}


class Gate:
    """Blocks the gated agent at the start of the listed tasks until `release` is set."""

    def __init__(self, block: set[int | str]) -> None:
        self.block = block
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        self.started: list[int | str | None] = []


class GatedOracle(OracleAgent):
    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self._gate = gate

    async def start(self, session: SessionContext) -> None:
        await super().start(session)
        self._gate.started.append(session.task_id)
        if session.task_id in self._gate.block and not self._gate.release.is_set():
            self._gate.reached.set()
            await self._gate.release.wait()


@pytest.fixture
def register() -> Iterator[Any]:
    """`register(name, builder)` for this test only."""
    names: list[str] = []

    def _register(name: str, builder: Any) -> None:
        registry.register(name, builder)
        names.append(name)

    yield _register
    for name in names:
        registry._extra.pop(name, None)


@pytest.fixture
def gate(register: Any) -> Gate:
    """A gate blocking task 0, behind the agent strategy `gated`."""
    g = Gate({0})
    register("gated", lambda options: SimpleProvider(lambda: GatedOracle(g)))
    return g


@pytest.fixture
def failing(register: Any) -> None:
    """Agent strategy `failing`: its builder rejects the options, quoting the api key."""

    def build(options: Mapping[str, Any]) -> AgentProvider:
        raise AdapterConfigError(f"the endpoint refused api key {options.get('api_key')}")

    register("failing", build)


def make_settings(state_dir: Path, **kw: Any) -> ServiceSettings:
    base: dict[str, Any] = {
        "state_dir": state_dir,
        "token": TOKEN,
        "data_dir": str(DATA_DIR),
        "tau3_data_dir": str(TAU3_DATA_DIR),
    }
    base.update(kw)
    return ServiceSettings(**base)


@asynccontextmanager
async def running_app(settings: ServiceSettings) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan (startup resumes, shutdown stops runs) and a client
    that sends the token."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://service", headers=AUTH
        ) as client:
            yield client


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(make_settings(tmp_path / "state")) as c:
        yield c


async def submit(client: httpx.AsyncClient, **body: Any) -> str:
    response = await client.post("/runs", json={**ORACLE, **body})
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


async def finished(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The run once it has finished (long poll: the server answers when it is done)."""
    response = await client.get(f"/runs/{run_id}", params={"wait": WAIT})
    assert response.status_code == 200, response.text
    view: dict[str, Any] = response.json()
    assert view["status"] in ("completed", "failed", "cancelled"), view
    return view


async def reached(gate: Gate) -> None:
    await asyncio.wait_for(gate.reached.wait(), WAIT)
