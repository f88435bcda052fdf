"""End to end over real gRPC on 127.0.0.1: adapter -> CES emulator (oracle brain) -> local DB.

Every test-split task of airline (50) and retail (115) must score 1.0 through RunSession
and through BidiRunSession, with the database ending exactly as the ground truth's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.ces.adapter import CesProvider
from adapters.ces.harness.emulator import Emulator
from tau_bench.domains import load_domain
from tau_bench.episode import ScoredEpisode, run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import APP, provider_for

EXPECTED_TASKS = {"airline": 50, "retail": 115}


async def episode(env: str, task_id: int, provider: CesProvider) -> ScoredEpisode:
    domain = load_domain(env, DATA_DIR)
    task = domain.tasks("test")[task_id]
    return await run_task(domain, task, task_id, provider.new_adapter(), ScriptedUser())


def same(a: Any, b: Any) -> bool:
    """Equal with identical types (250 is not 250.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("streaming", [False, True], ids=["run-session", "bidi"])
@pytest.mark.parametrize("env", ["airline", "retail"])
async def test_every_test_task_scores_one(emulator: Emulator, env: str, streaming: bool) -> None:
    provider = provider_for(emulator.address, streaming=streaming)
    domain = load_domain(env, DATA_DIR)
    tasks = domain.tasks("test")
    assert len(tasks) == EXPECTED_TASKS[env]
    failures = []
    try:
        for task_id, task in enumerate(tasks):
            result = await episode(env, task_id, provider)
            env_state: Any = result.env
            gt = [a for a in task.actions if a.name != "respond"]
            done = [a for a in env_state.actions if a.name != "respond"]
            exact = len(gt) == len(done) and all(
                g.name == d.name and same(d.kwargs, g.kwargs) for g, d in zip(gt, done, strict=True)
            )
            if result.result.error is not None or result.reward_value != 1.0 or not exact:
                failures.append((task_id, result.result.error, result.reward_value))
    finally:
        await provider.aclose()
    assert not failures, failures[:5]
    method = "BidiRunSession" if streaming else "RunSession"
    assert emulator.calls[method] > 0 and emulator.calls["ListTools"] == 1


async def test_amounts_arrive_as_ints(provider: CesProvider) -> None:
    # Airline task 0 books with payment amounts; over the Struct wire they are doubles.
    result = await episode("airline", 0, provider)
    env_state: Any = result.env
    booking = next(a for a in env_state.actions if a.name == "book_reservation")
    amounts = [p["amount"] for p in booking.kwargs["payment_methods"]]
    assert amounts and all(type(x) is int for x in amounts)
    assert type(booking.kwargs["total_baggages"]) is int
    assert result.reward_value == 1.0


async def test_trajectory_keeps_raw_requests_and_responses(provider: CesProvider) -> None:
    result = await episode("airline", 2, provider)
    assert result.reward_value == 1.0
    agent_turns = [t for t in result.result.turns if t.role == "agent"]
    first = agent_turns[0].raw[0]
    assert first["attempts"] == 1 and first["latency"] > 0
    config = first["request"]["config"]
    assert config["session"].startswith(f"{APP}/sessions/")
    inputs = first["request"]["inputs"]
    assert inputs[0]["variables"] == {
        "env": "airline",
        "task_split": "test",
        "trial": 0,
        "task_id": 2,
        "user_id": str(load_domain("airline", DATA_DIR).tasks("test")[2].user_id),
    }
    assert "text" in inputs[1]
    call = first["response"]["outputs"][-1]["tool_calls"]["tool_calls"][0]
    assert call["tool"].startswith(f"{APP}/tools/") and call["id"]
    # The next request answers that call by id and tool, as `output`.
    second = agent_turns[1].raw[0]["request"]
    assert "variables" not in json.dumps(second["inputs"])
    response = second["inputs"][0]["tool_responses"]["tool_responses"][0]
    assert response["id"] == call["id"] and response["tool"] == call["tool"]
    assert json.loads(response["response"]["output"])["reservation_id"]
    json.dumps([t.to_dict() for t in result.result.turns])  # the trajectory is JSON


async def test_the_turn_count_matches_the_loop(provider: CesProvider, emulator: Emulator) -> None:
    # Retail task 0: one RunSession per agent turn, the tool names resolved once per run.
    before = emulator.calls["RunSession"]
    result = await episode("retail", 0, provider)
    agent_turns = [t for t in result.result.turns if t.role == "agent"]
    assert emulator.calls["RunSession"] - before == len(agent_turns)
