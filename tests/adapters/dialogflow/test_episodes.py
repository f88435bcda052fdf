"""End to end over real gRPC on 127.0.0.1: adapter -> emulator (oracle brain) -> local DB."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.dialogflow.adapter import DialogflowProvider
from adapters.dialogflow.harness.emulator import Emulator
from tau_adapters.protocol import AgentAdapter
from tau_bench.agents.oracle import OracleAgent
from tau_bench.domains import load_domain
from tau_bench.episode import ScoredEpisode, run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for

FIRST_TASKS = [("airline", i) for i in range(10)] + [("retail", i) for i in range(10)]


async def _episode(env: str, task_id: int, adapter: AgentAdapter) -> ScoredEpisode:
    domain = load_domain(env, DATA_DIR)
    task = domain.tasks("test")[task_id]
    return await run_task(domain, task, task_id, adapter, ScriptedUser())


def same(a: Any, b: Any) -> bool:
    """Equal, with identical types (250 is not 250.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize(("env", "task_id"), FIRST_TASKS, ids=[f"{e}-{i}" for e, i in FIRST_TASKS])
async def test_oracle_through_dialogflow_scores_like_the_oracle(
    provider: DialogflowProvider, env: str, task_id: int
) -> None:
    direct = await _episode(env, task_id, OracleAgent())
    assert direct.result.error is None and direct.reward_value == 1.0
    remote = await _episode(env, task_id, provider.new_adapter())
    assert remote.result.error is None, remote.result.error
    assert remote.reward_value == 1.0, remote.reward.to_dict() if remote.reward else None
    assert remote.env.data_hash() == direct.env.data_hash()
    # Every ground-truth call reached the DB with exactly the ground truth's values and
    # types: integral floats off the Struct wire are ints again.
    gt = [a for a in remote.env.task.actions if a.name != "respond"]  # type: ignore[union-attr]
    done = [a for a in remote.env.actions if a.name != "respond"]
    assert len(done) == len(gt)
    for got, want in zip(done, gt, strict=True):
        assert got.name == want.name and same(got.kwargs, want.kwargs), (got, want)


@pytest.mark.parametrize(("env", "task_id"), [("airline", 13), ("retail", 24), ("retail", 50)])
async def test_tasks_that_score_today(provider: DialogflowProvider, env: str, task_id: int) -> None:
    episode = await _episode(env, task_id, provider.new_adapter())
    assert episode.result.error is None and episode.reward_value == 1.0


async def test_booking_amounts_are_stored_as_ints(provider: DialogflowProvider) -> None:
    # Airline task 0 books with payment amounts; over the Struct wire they are doubles.
    episode = await _episode("airline", 0, provider.new_adapter())
    booking = next(a for a in episode.env.actions if a.name == "book_reservation")
    amounts = [p["amount"] for p in booking.kwargs["payment_methods"]]
    assert amounts and all(type(x) is int for x in amounts)
    assert type(booking.kwargs["total_baggages"]) is int
    # ...and they are stored as such: the payment history of the new reservation.
    user = episode.env.db["users"][booking.kwargs["user_id"]]
    new_id = user["reservations"][-1]
    stored = episode.env.db["reservations"][new_id]["payment_history"]
    assert [type(p["amount"]) for p in stored] == [int] * len(stored)
    assert episode.reward_value == 1.0


async def test_trajectory_keeps_raw_requests_latency_and_trace(emulator: Emulator) -> None:
    provider = provider_for(emulator.address, session_ttl=600, trace="full")
    try:
        episode = await _episode("airline", 2, provider.new_adapter())
    finally:
        await provider.aclose()
    assert episode.reward_value == 1.0
    agent_turns = [t for t in episode.result.turns if t.role == "agent"]
    first = agent_turns[0]
    assert first.extra["requests"] == len(first.raw) == 1
    record = first.raw[0]
    assert record["latency"] > 0 and record["attempts"] == 1
    request = record["request"]
    assert request["session"].startswith("projects/proj/locations/global/agents/agent-1/sessions/")
    assert request["query_input"]["language_code"] == "en"
    params = request["query_params"]["parameters"]
    assert params["env"] == "airline" and params["task_id"] == 2 and params["task_split"] == "test"
    assert request["query_params"]["session_ttl"] == "600s"
    info = first.extra["generative_info"][0]
    assert info["current_playbooks"][0].endswith("/playbooks/00000000-0000-0000-0000-000000000000")
    assert "user_utterance" in info["action_tracing_info"]["actions"][0]
    assert params["tau_session"] is True
    # Later requests carry the parameters again (a recreated session keeps its task),
    # without the first request's marker (so a reset session shows).
    second = agent_turns[1].raw[0]["request"]
    assert second["query_params"]["parameters"]["task_id"] == 2
    assert "tau_session" not in second["query_params"]["parameters"]
    result = second["query_input"]["tool_call_result"]
    assert result["action"] == "update_reservation_flights"
    assert result["tool"].startswith("projects/proj/locations/global/agents/agent-1/tools/")
    assert set(result["output_parameters"]) == {"result"}
    assert json.loads(result["output_parameters"]["result"])["reservation_id"]
    json.dumps([t.to_dict() for t in episode.result.turns])  # the whole trajectory is JSON


async def test_faults_are_retried_within_an_episode(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    emulator.faults.inject("unavailable", 2)
    emulator.faults.inject("resource_exhausted", 1, retry_delay=0.01)
    try:
        episode = await _episode("airline", 13, provider.new_adapter())
    finally:
        await provider.aclose()
    assert episode.result.error is None and episode.reward_value == 1.0
    assert [code for _, code in emulator.faults.served] == [
        "UNAVAILABLE",
        "UNAVAILABLE",
        "RESOURCE_EXHAUSTED",
    ]
    retries = [r for t in episode.result.turns for r in t.extra.get("retries", [])]
    assert [r["code"] for r in retries] == ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED"]
    # the server's delay, plus up to 20 % jitter (never earlier than asked)
    assert 0.01 <= retries[-1]["delay"] <= 0.012 and retries[-1]["server_delay"]


async def test_ambiguous_failure_is_retried_once_then_ends_the_episode(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    emulator.faults.inject("internal", 1)
    try:
        ok = await _episode("airline", 13, provider.new_adapter())
        assert ok.result.error is None
        assert ok.result.turns[1].extra["ambiguous_retries"] == 1
        emulator.faults.inject("deadline_exceeded", 2)
        failed = await _episode("airline", 13, provider.new_adapter())
    finally:
        await provider.aclose()
    assert failed.result.stop_reason == "error" and failed.reward is None
    assert failed.result.error is not None
    assert failed.result.error.kind == "adapter_error" and failed.result.error.retryable
    assert "DEADLINE_EXCEEDED" in failed.result.error.message


async def test_auth_and_argument_errors_are_typed(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    try:
        emulator.faults.inject(
            "permission_denied", 1, message="caller lacks dialogflow.sessions.detectIntent"
        )
        denied = await _episode("airline", 13, provider.new_adapter())
        emulator.faults.inject("invalid_argument", 1, message="Text input too long")
        invalid = await _episode("airline", 13, provider.new_adapter())
    finally:
        await provider.aclose()
    assert denied.result.error is not None and denied.result.error.kind == "auth_error"
    assert "dialogflow.sessions.detectIntent" in denied.result.error.message
    assert invalid.result.error is not None and invalid.result.error.kind == "adapter_error"
    assert "Text input too long" in invalid.result.error.message
    assert "characters; Dialogflow limits text input" in invalid.result.error.message  # hint
    assert not invalid.result.error.retryable
    assert len(emulator.faults.served) == 2  # neither was retried


async def test_rate_limit_is_shared_by_the_providers_adapters(emulator: Emulator) -> None:
    provider = provider_for(emulator.address, rate_limit=1000)
    try:
        first = await _episode("airline", 13, provider.new_adapter())
        bucket = provider._bucket
        second = await _episode("airline", 13, provider.new_adapter())
        assert bucket is not None and provider._bucket is bucket
    finally:
        await provider.aclose()
    assert first.reward_value == second.reward_value == 1.0
    # Task 13 ends on the oracle's first turn (transfer): one DetectIntent per episode.
    assert emulator.calls["DetectIntent"] == 2 and emulator.calls["ListTools"] == 1
