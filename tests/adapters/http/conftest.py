"""Fixtures for the HTTP adapter tests: a toy domain with a write tool, the task book,
real servers on 127.0.0.1 (uvicorn on a background thread, ephemeral port)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_bench.db import BaseDB, EpisodeDB
from tau_bench.domains import Domain, load_domain
from tau_bench.domains.tool import Tool
from tau_bench.tasks import Action, Task
from tau_bench.toolserver import BackgroundServer

from ...conftest import DATA_DIR
from .bots import TaskBook

# Tasks the end-to-end tests play. The toy task writes to its DB with tools that exist
# today; the real ones run whatever domain tools exist (all of them once implemented).
REAL_TASKS = [("airline", 13), ("airline", 1), ("retail", 70)]


def get_note(db: EpisodeDB, user_id: Any) -> str:
    users = db["users"]
    if user_id not in users:
        return "Error: user not found"
    return json.dumps(users[user_id])


def set_note(db: EpisodeDB, user_id: Any, note: Any) -> str:
    users = db["users"]
    if user_id not in users:
        return "Error: user not found"
    record = users.for_update(user_id)
    record["note"] = note
    return json.dumps(record)


def transfer_to_human_agents(db: EpisodeDB, summary: Any) -> str:
    return "Transfer successful"


def _schema(name: str, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The toy {name} tool.",
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }


def make_toy_domain() -> Domain:
    tools = [
        Tool.of("toy", fn, writes=fn is set_note)
        for fn in (get_note, set_note, transfer_to_human_agents)
    ]
    return Domain(
        name="toy",
        data_dir=Path("/nonexistent-toy"),
        base_db=BaseDB({"users": {"u1": {"name": "Ann"}, "u2": {"name": "Bob"}}}),
        tools={t.name: t for t in tools},
        tool_schemas=[
            _schema("get_note", {"user_id": {"type": "string"}}),
            _schema("set_note", {"user_id": {"type": "string"}, "note": {"type": "string"}}),
            _schema("transfer_to_human_agents", {"summary": {"type": "string"}}),
        ],
        policy="You are the toy agent. Be nice.",
        rules=[],
    )


TOY_TASK = Task(
    user_id="u1",
    instruction="Please set the note of user u1 to 'blue' and tell me the colour.",
    actions=[
        Action(name="get_note", kwargs={"user_id": "u1"}),
        Action(name="set_note", kwargs={"user_id": "u1", "note": "blue"}),
    ],
    outputs=["blue"],
)


@pytest.fixture(scope="session")
def toy() -> Domain:
    return make_toy_domain()


def domain_of(name: str, toy_domain: Domain) -> Domain:
    return toy_domain if name == "toy" else load_domain(name, DATA_DIR)


@pytest.fixture(scope="session")
def book(toy: Domain) -> TaskBook:
    tasks: dict[tuple[str, Any], Task] = {("toy", 0): TOY_TASK}
    for name, task_id in REAL_TASKS:
        tasks[(name, task_id)] = load_domain(name, DATA_DIR).tasks("test")[task_id]
    return TaskBook(tasks)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], str]]:
    """Start an ASGI app on 127.0.0.1 (ephemeral port); returns its base URL."""
    servers: list[BackgroundServer] = []

    def start(app: Any) -> str:
        server = BackgroundServer(app)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
