"""The emulator and the adapter on unusual conversations, driven by a scripted brain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import dialogflowcx_v3beta1 as cx

from adapters.dialogflow.adapter import DialogflowProvider
from adapters.dialogflow.clients import make_client
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.emulator import Emulator
from adapters.dialogflow.harness.emulator.faults import FaultPlan, FaultSpecError
from adapters.dialogflow.queries import NOT_EXECUTED
from tau_adapters.protocol import (
    AdapterError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResults,
    UserTurn,
)
from tau_adapters.registry import SimpleProvider
from tau_bench.domains import load_domain
from tau_bench.episode import run_task, session_for
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for

AGENT = "projects/proj/locations/global/agents/agent-1"
USER = "mia_li_3668"


class ScriptBrain:
    """Plays a fixed list of turns and records what it was sent."""

    def __init__(self, script: list[AgentTurn], log: list[Any]) -> None:
        self.script = list(script)
        self.log = log

    async def start(self, session: SessionContext) -> None:
        self.log.append(("start", session))

    async def send(self, turn: AgentInput) -> AgentTurn:
        self.log.append(turn)
        if not self.script:
            return AgentTurn(messages=["(script over)"], end_conversation=True)
        return self.script.pop(0)

    async def close(self) -> None:
        self.log.append("close")


async def _scripted(script: list[AgentTurn], **kwargs: Any) -> tuple[Emulator, list[Any]]:
    log: list[Any] = []
    emu = Emulator(
        env="airline", provider=SimpleProvider(lambda: ScriptBrain(script, log)), **kwargs
    )
    await emu.start()
    return emu, log


@pytest.fixture
async def airline_session() -> SessionContext:
    domain = load_domain("airline", DATA_DIR)
    return session_for(domain, domain.tasks("test")[0], 0, 0)


async def _run(emu: Emulator, provider: DialogflowProvider | None = None, **kwargs: Any) -> Any:
    provider = provider or provider_for(emu.address, trace="full")
    domain = load_domain("airline", DATA_DIR)
    try:
        return await run_task(
            domain, domain.tasks("test")[0], 0, provider.new_adapter(), ScriptedUser(), **kwargs
        )
    finally:
        await provider.aclose()


async def test_several_messages_and_tool_calls_in_one_response() -> None:
    messages = [
        {"payload": {"card": "welcome"}},
        {"text": {"text": ["Let me look."]}},
        {"tool_call": {"action": "get_user_details", "input_parameters": {"user_id": USER}}},
        {"knowledge_info_card": {}},
        {"tool_call": {"action": "get_user_details", "input_parameters": {"user_id": "nobody"}}},
        {"text": {"text": ["One moment."]}},
    ]
    emu, log = await _scripted(
        [AgentTurn(extra={"emulator_messages": messages}), AgentTurn(messages=["Anything else?"])]
    )
    try:
        episode = await _run(emu)
    finally:
        await emu.stop()
    result = episode.result
    assert result.error is None
    first = result.turns[1]
    assert first.extra["other_messages"] == ["payload", "knowledge_info_card"]
    assert first.raw[0]["response"]["query_result"]["response_messages"][0]["payload"] == {
        "card": "welcome"
    }
    assistant = result.messages[2]
    assert assistant["content"] == "Let me look.\nOne moment."
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["get_user_details"] * 2
    # Both observations went back (one request each) and reached the brain together.
    results = log[2]
    assert isinstance(results, ToolResults) and len(results.results) == 2
    ok, err = results.results
    assert not ok.is_error and '"name": {"first_name": "Mia"' in ok.content
    assert err.is_error and err.content == "Error: user not found"
    second = result.turns[2]
    assert second.extra["requests"] == 2
    assert second.raw[0]["response"]["query_result"].get("response_messages") is None  # empty
    sent = [r["request"]["query_input"]["tool_call_result"] for r in second.raw]
    assert "output_parameters" in sent[0] and sent[1]["error"] == {
        "message": "Error: user not found"
    }
    assert {"role": "assistant", "content": "Anything else?"} in result.messages


async def test_answers_to_intermediate_results_are_accumulated() -> None:
    # per_result: the brain answers each result at once, with text and a new tool call.
    calls = [
        ToolCall("a", "get_user_details", {"user_id": USER}),
        ToolCall("b", "get_reservation_details", {"reservation_id": "NO6JO3"}),
    ]
    script = [
        AgentTurn(tool_calls=calls),
        AgentTurn(messages=["Found you."], tool_calls=[ToolCall("c", "think", {"thought": "hm"})]),
        AgentTurn(messages=["And the booking."]),
        AgentTurn(messages=["All done."]),
    ]
    emu, log = await _scripted(script, per_result=True)
    try:
        episode = await _run(emu)
    finally:
        await emu.stop()
    result = episode.result
    assert result.error is None
    merged = result.messages[5]  # system, user, calls, two observations, then this
    assert merged["content"] == "Found you.\nAnd the booking."
    assert [c["function"]["name"] for c in merged["tool_calls"]] == ["think"]
    assert [type(x).__name__ for x in log[1:5]] == [
        "UserTurn",
        "ToolResults",
        "ToolResults",
        "ToolResults",
    ]
    assert {"role": "assistant", "content": "All done."} in result.messages


async def test_unknown_tool_gets_an_error_result() -> None:
    emu, log = await _scripted(
        [
            AgentTurn(tool_calls=[ToolCall("x", "launch_rocket", {"count": 3})]),
            AgentTurn(messages=["Sorry."]),
        ]
    )
    try:
        episode = await _run(emu)
    finally:
        await emu.stop()
    call = episode.result.messages[2]["tool_calls"][0]["function"]
    assert call == {"name": "launch_rocket", "arguments": '{"count": 3}'}
    observation = log[2].results[0]
    assert observation.is_error and observation.content == "Unknown action launch_rocket"
    sent = episode.result.turns[2].raw[0]["request"]["query_input"]["tool_call_result"]
    assert sent["tool"] == f"{AGENT}/tools/unregistered-launch_rocket"
    assert sent["error"]["message"] == "Unknown action launch_rocket"


@pytest.mark.parametrize(
    ("flag", "reason"), [("end_conversation", "agent_end"), ("handoff", "agent_handoff")]
)
async def test_end_interaction_and_handoff_end_the_episode(flag: str, reason: str) -> None:
    final = AgentTurn(messages=["Bye?"])
    setattr(final, flag, True)
    emu, log = await _scripted([final])
    try:
        episode = await _run(emu)
        assert not emu.sessions  # the emulated session is gone too
    finally:
        await emu.stop()
    assert episode.result.stop_reason == reason
    assert episode.result.messages[-1] == {"role": "assistant", "content": "Bye?"}
    assert log[-1] == "close"


async def test_dropped_calls_are_answered_as_not_executed() -> None:
    calls = [ToolCall(str(i), "think", {"thought": str(i)}) for i in range(3)]
    emu, log = await _scripted([AgentTurn(tool_calls=calls), AgentTurn(messages=["ok"])])
    try:
        episode = await _run(emu, max_tool_calls_per_turn=1)
    finally:
        await emu.stop()
    assert episode.result.dropped_tool_calls == 2
    results = log[2].results
    assert [r.is_error for r in results] == [False, True, True]
    assert results[1].content == NOT_EXECUTED
    assert episode.result.turns[2].extra["calls_not_executed"] == 2


async def test_tool_names_come_from_all_pages_of_list_tools() -> None:
    emu = Emulator(env="airline", max_page_size=4)
    await emu.start()
    provider = provider_for(emu.address)
    try:
        names = await provider.tool_names()
        assert sorted(names.values()) == sorted(
            t["function"]["name"] for t in load_domain("airline", DATA_DIR).tool_schemas
        )
        assert emu.calls["ListTools"] == 4  # 14 tools, 4 per page
        await provider.tool_names()
        assert emu.calls["ListTools"] == 4  # cached for the run
    finally:
        await provider.aclose()
        await emu.stop()


async def test_oracle_brain_without_task_is_a_clear_error(emulator: Emulator) -> None:
    provider = provider_for(emulator.address, task_params=False)
    adapter = provider.new_adapter()
    try:
        await adapter.start(SessionContext(session_id="s-1", domain="airline", tools=[]))
        with pytest.raises(AdapterError, match=r"FAILED_PRECONDITION.*task_id"):
            await adapter.send(UserTurn("hello"))
    finally:
        await provider.aclose()


async def test_protocol_violations_are_refused(emulator: Emulator) -> None:
    client = make_client(
        "sessions",
        load_config({"agent_id": "agent-1", "project_id": "proj", "emulator": emulator.address}),
    )
    session = f"{AGENT}/sessions/raw-1"
    try:
        with pytest.raises(gexc.InvalidArgument, match="language_code"):
            await client.detect_intent(
                request=cx.DetectIntentRequest(
                    session=session, query_input=cx.QueryInput(text=cx.TextInput(text="hi"))
                ),
                retry=None,
            )
        with pytest.raises(gexc.InvalidArgument, match="malformed session"):
            await client.detect_intent(
                request=cx.DetectIntentRequest(
                    session="projects/p/agents/a/sessions/s",
                    query_input=cx.QueryInput(text=cx.TextInput(text="hi"), language_code="en"),
                ),
                retry=None,
            )
        stray = cx.ToolCallResult(
            tool="t", action="get_user_details", output_parameters={"result": "x"}
        )
        with pytest.raises(gexc.InvalidArgument, match="no pending tool call"):
            await client.detect_intent(
                request=cx.DetectIntentRequest(
                    session=session,
                    query_params=cx.QueryParameters(parameters={"task_id": 13}),
                    query_input=cx.QueryInput(tool_call_result=stray, language_code="en"),
                ),
                retry=None,
            )
    finally:
        await client.transport.close()


async def test_streaming_variants(emulator: Emulator) -> None:
    client = make_client(
        "sessions",
        load_config({"agent_id": "agent-1", "project_id": "proj", "emulator": emulator.address}),
    )
    params = cx.QueryParameters(parameters={"task_id": 13, "env": "airline"})
    query = cx.QueryInput(text=cx.TextInput(text="hi"), language_code="en")
    try:
        stream = await client.server_streaming_detect_intent(
            request=cx.DetectIntentRequest(
                session=f"{AGENT}/sessions/st-1", query_params=params, query_input=query
            )
        )
        responses = [r async for r in stream]
        assert [r.response_type for r in responses] == [cx.DetectIntentResponse.ResponseType.FINAL]
        calls = [
            m.tool_call.action
            for m in responses[0].query_result.response_messages
            if "tool_call" in m
        ]
        assert calls == ["transfer_to_human_agents"]

        async def requests() -> AsyncIterator[cx.StreamingDetectIntentRequest]:
            yield cx.StreamingDetectIntentRequest(
                session=f"{AGENT}/sessions/st-2", query_params=params, query_input=query
            )

        bidi = await client.streaming_detect_intent(requests=requests())
        answers = [r async for r in bidi]
        assert len(answers) == 1
        texts = [
            m.text.text[0]
            for m in answers[0].detect_intent_response.query_result.response_messages
            if "text" in m
        ]
        assert texts == ["Your request has been handled."]
    finally:
        await client.transport.close()


async def test_idle_sessions_expire_and_ttl_is_honoured() -> None:
    now = [0.0]
    emu = Emulator(env="airline", clock=lambda: now[0], idle_ttl=100)
    await emu.start()
    provider = provider_for(emu.address, session_ttl=30)
    domain = load_domain("airline", DATA_DIR)
    try:
        adapter = provider.new_adapter()
        await adapter.start(
            session_for(domain, domain.tasks("test")[13], 13, 0, session_id="ttl-1")
        )
        await adapter.send(UserTurn("hi"))
        (session,) = emu.sessions.values()
        assert session.ttl == 30 and session.brain is not None
        now[0] = 29
        assert await emu.expire_idle() == 0
        now[0] = 31
        assert await emu.expire_idle() == 1 and not emu.sessions
        assert session.brain is None  # the brain was closed
    finally:
        await provider.aclose()
        await emu.stop()


def test_fault_specs() -> None:
    plan = FaultPlan()
    plan.load("unavailable:2, resource_exhausted@0.5,internal:1")
    assert plan.pending() == 4
    assert plan.take("ListTools") is None  # session methods only by default
    first = plan.take("DetectIntent")
    assert first is not None and first.code == grpc.StatusCode.UNAVAILABLE
    plan.take("DetectIntent")
    third = plan.take("StreamingDetectIntent")
    assert third is not None and third.retry_delay == 0.5
    plan.inject("unauthenticated", methods={"*"})
    assert plan.take("ListTools") is not None
    for bad in ("nonsense", "unavailable:x", "unavailable@soon"):
        with pytest.raises(FaultSpecError):
            FaultPlan().load(bad)


async def test_faults_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_DF_EMULATOR_FAULTS", "resource_exhausted:3@1")
    emu = Emulator(env="retail")
    assert emu.faults.pending() == 3
    await emu.stop()
