"""Failures over real gRPC: auth, retries honouring RetryInfo, ambiguous errors, malformed
agent output, escalation, preflight."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.ces.harness.emulator import Emulator
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterConfigError,
    AdapterProtocolError,
    AgentInput,
    AgentTurn,
    SessionContext,
    UserTurn,
)
from tau_adapters.registry import SimpleProvider
from tau_bench.domains import load_domain
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for
from .test_episodes import episode


class ScriptedBrain:
    """A brain that answers every input with the next scripted AgentTurn."""

    def __init__(self, turns: list[AgentTurn]) -> None:
        self.turns = list(turns)

    async def start(self, session: SessionContext) -> None:
        return None

    async def send(self, turn: AgentInput) -> AgentTurn:
        return self.turns.pop(0)

    async def close(self) -> None:
        return None


async def scripted_emulator(turns: list[AgentTurn]) -> Emulator:
    emu = Emulator(
        env="retail", data_dir=DATA_DIR, provider=SimpleProvider(lambda: ScriptedBrain(turns))
    )
    await emu.start()
    return emu


@pytest.fixture
async def scripted() -> AsyncIterator[list[Emulator]]:
    made: list[Emulator] = []
    yield made
    for emu in made:
        await emu.stop()


async def test_unauthenticated_is_an_auth_error_and_not_retried(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    emulator.faults.inject(
        "unauthenticated", 1, message="Request had invalid credentials.", method="RunSession"
    )
    try:
        result = await episode("airline", 13, provider)
    finally:
        await provider.aclose()
    error = result.result.error
    assert error is not None and error.kind == "auth_error" and not error.retryable
    assert "UNAUTHENTICATED" in error.message and "invalid credentials" in error.message
    assert result.reward is None
    assert [code for _, code in emulator.faults.served] == ["UNAUTHENTICATED"]


async def test_preflight_proves_the_app_and_types_failures(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    try:
        await provider.preflight()
        assert emulator.calls["GetApp"] == 1
        emulator.faults.inject("unauthenticated", 1, method="GetApp")
        with pytest.raises(AdapterAuthError, match="GetApp: UNAUTHENTICATED"):
            await provider.preflight()
    finally:
        await provider.aclose()


async def test_preflight_names_a_missing_app() -> None:
    emu = Emulator(env="retail", data_dir=DATA_DIR, auto_apps=False)
    await emu.start()
    provider = provider_for(emu.address)
    try:
        with pytest.raises(AdapterConfigError, match=r"app .*app-1 not found"):
            await provider.preflight()
    finally:
        await provider.aclose()
        await emu.stop()


@pytest.mark.parametrize("streaming", [False, True], ids=["run-session", "bidi"])
async def test_unavailable_is_retried_honouring_retry_info(
    emulator: Emulator, streaming: bool
) -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    provider = provider_for(emulator.address, streaming=streaming)
    provider.sleep = sleep
    method = "BidiRunSession" if streaming else "RunSession"
    emulator.faults.inject("unavailable", 2, retry_delay=0.25, method=method)
    emulator.faults.inject("resource_exhausted", 1, method=method)
    try:
        result = await episode("airline", 13, provider)
    finally:
        await provider.aclose()
    assert result.result.error is None and result.reward_value == 1.0
    retries = result.result.turns[1].extra["retries"]
    assert [r["code"] for r in retries] == ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED"]
    assert [r["server_delay"] for r in retries] == [True, True, False]
    # The server's 250 ms twice, then our own backoff for the third retry: 1 ms * 2**2,
    # jittered by ± 20 %.
    assert slept[:2] == [pytest.approx(0.25), pytest.approx(0.25)]
    assert 0.0032 <= slept[2] <= 0.0048
    assert result.result.turns[1].raw[0]["attempts"] == 4


async def test_unavailable_gives_up_after_max_attempts(emulator: Emulator) -> None:
    provider = provider_for(emulator.address, max_attempts=3)
    emulator.faults.inject("unavailable", 5)
    try:
        result = await episode("airline", 13, provider)
    finally:
        await provider.aclose()
    error = result.result.error
    assert error is not None and error.kind == "adapter_error" and error.retryable
    assert "UNAVAILABLE" in error.message and "after 3 attempts" in error.message
    assert len(emulator.faults.served) == 3


async def test_ambiguous_failures_are_retried_at_most_once(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    try:
        emulator.faults.inject("internal", 1, method="RunSession")
        ok = await episode("airline", 13, provider)
        assert ok.result.error is None and ok.result.turns[1].extra["ambiguous_retries"] == 1
        emulator.faults.inject("deadline_exceeded", 2, method="RunSession")
        failed = await episode("airline", 13, provider)
    finally:
        await provider.aclose()
    assert failed.result.error is not None and failed.result.error.retryable
    assert "DEADLINE_EXCEEDED" in failed.result.error.message
    assert len(emulator.faults.served) == 3


@pytest.mark.parametrize(
    "outputs",
    [
        [{"tool_calls": {"tool_calls": [{"id": "x1", "args": {"a": 1}}]}}],
        [{"citations": {"cited_chunks": [{"uri": "https://example.com"}]}}],
    ],
    ids=["tool-call-without-tool", "nothing-usable"],
)
async def test_malformed_agent_output_is_a_protocol_error(
    scripted: list[Emulator], outputs: list[dict[str, Any]]
) -> None:
    emu = await scripted_emulator([AgentTurn(messages=["x"], extra={"emulator_outputs": outputs})])
    scripted.append(emu)
    provider = provider_for(emu.address)
    adapter = provider.new_adapter()
    domain = load_domain("retail", DATA_DIR)
    try:
        await adapter.start(
            SessionContext(session_id="bad-1", domain="retail", tools=domain.tool_schemas)
        )
        with pytest.raises(AdapterProtocolError, match="ces: "):
            await adapter.send(UserTurn("hello"))
        await adapter.close()
        # In an episode it is a typed error, not a crash.
        emu.provider = SimpleProvider(
            lambda: ScriptedBrain([AgentTurn(messages=["x"], extra={"emulator_outputs": outputs})])
        )
        result = await run_task(
            domain, domain.tasks("test")[0], 0, provider.new_adapter(), ScriptedUser()
        )
    finally:
        await provider.aclose()
    assert result.result.error is not None and result.result.error.kind == "protocol_error"


@pytest.mark.parametrize("streaming", [False, True], ids=["run-session", "bidi"])
async def test_escalation_ends_the_episode_as_a_handoff(
    scripted: list[Emulator], streaming: bool
) -> None:
    emu = await scripted_emulator(
        [AgentTurn(messages=["Let me get you a human agent."], handoff=True)]
    )
    scripted.append(emu)
    provider = provider_for(emu.address, streaming=streaming)
    domain = load_domain("retail", DATA_DIR)
    try:
        result = await run_task(
            domain, domain.tasks("test")[0], 0, provider.new_adapter(), ScriptedUser()
        )
    finally:
        await provider.aclose()
    assert result.result.error is None and result.result.stop_reason == "agent_handoff"
    turn = next(t for t in result.result.turns if t.role == "agent")
    assert turn.extra["end_session"]["session_escalated"] is True


async def test_end_session_ends_the_conversation(scripted: list[Emulator]) -> None:
    emu = await scripted_emulator([AgentTurn(messages=["Goodbye."], end_conversation=True)])
    scripted.append(emu)
    provider = provider_for(emu.address)
    adapter = provider.new_adapter()
    try:
        await adapter.start(SessionContext(session_id="end-1", domain="retail", tools=[]))
        turn = await adapter.send(UserTurn("bye"))
        assert turn.end_conversation and not turn.handoff and turn.messages == ["Goodbye."]
        with pytest.raises(AdapterProtocolError, match="ended conversation"):
            await adapter.send(UserTurn("again"))
    finally:
        await adapter.close()
        await provider.aclose()
