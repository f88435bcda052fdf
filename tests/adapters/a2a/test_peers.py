"""Hostile and broken A2A peers on real loopback servers: every failure is typed, one
line, within its deadline; refusals are retried, honouring Retry-After."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from adapters.a2a.adapter import A2AProvider, parse_options
from adapters.a2a.convention import tool_call_payload
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    SessionContext,
    ToolResult,
    ToolResults,
    UserTurn,
)
from tau_adapters.testing import ECHO_TOOL

from .peers import Http, Peer, Sse, task

AMOUNT_TOOL = {
    "type": "function",
    "function": {
        "name": "pay",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "number"}, "note": {"type": "string"}},
        },
    },
}


def session() -> SessionContext:
    return SessionContext(
        session_id=str(uuid.uuid4()), domain="toy", tools=[ECHO_TOOL, AMOUNT_TOOL], task_id=1
    )


def provider(url: str, **options: Any) -> A2AProvider:
    base = {"agent_url": url, "retry_initial": 0.01, "timeout": 5.0}
    return A2AProvider(parse_options({**base, **options}))


async def first_turn(url: str, **options: Any) -> Any:
    prov = provider(url, **options)
    try:
        adapter = prov.new_adapter()
        await adapter.start(session())
        return await adapter.send(UserTurn("hello"))
    finally:
        await prov.aclose()


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def data(value: Any) -> dict[str, Any]:
    return {"data": value}


async def test_garbage_part_is_a_protocol_error(serve: Any) -> None:
    url = serve(Peer([task("TASK_STATE_INPUT_REQUIRED", [{"bogus": 1}])]).app)
    with pytest.raises(AdapterProtocolError, match="part with no text, data"):
        await first_turn(url)


async def test_garbage_body_is_a_protocol_error(serve: Any) -> None:
    url = serve(Peer([{"jsonrpc": "2.0", "id": "x", "nothing": True}]).app)
    with pytest.raises(AdapterProtocolError, match="neither 'result' nor 'error'"):
        await first_turn(url)


async def test_malformed_tool_call_is_a_protocol_error(serve: Any) -> None:
    bad = data({"type": "tool_call", "id": "c1", "arguments": {}})
    url = serve(Peer([task("TASK_STATE_INPUT_REQUIRED", [bad])]).app)
    with pytest.raises(AdapterProtocolError, match="tool_call without a name"):
        await first_turn(url)


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        ("TASK_STATE_FAILED", "agent_task_failed"),
        ("TASK_STATE_CANCELED", "agent_task_canceled"),
        ("TASK_STATE_REJECTED", "agent_task_rejected"),
    ],
)
async def test_failed_task_is_a_typed_agent_error(serve: Any, state: str, kind: str) -> None:
    url = serve(Peer([task(state, [text("database is on fire")])]).app)
    with pytest.raises(AdapterError) as info:
        await first_turn(url)
    assert info.value.kind == kind and not info.value.retryable
    assert "database is on fire" in str(info.value) and "\n" not in str(info.value)


async def test_sse_stream_that_never_ends_hits_the_deadline(serve: Any) -> None:
    working = task("TASK_STATE_WORKING", [text("thinking")])
    url = serve(Peer([Sse([{"task": working}], hang=True)], streaming=True).app)
    started = time.perf_counter()
    with pytest.raises(AdapterError) as info:
        await first_turn(url, timeout=1.0)
    assert time.perf_counter() - started < 4
    assert info.value.retryable and "1 s deadline" in str(info.value)


async def test_stream_events_are_folded_into_one_turn(serve: Any) -> None:
    events = [
        {"task": task("TASK_STATE_SUBMITTED", [])},
        {
            "statusUpdate": {
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"},
            }
        },
        {
            "artifactUpdate": {
                "taskId": "t1",
                "contextId": "c1",
                "artifact": {"artifactId": "a1", "parts": [text("Your total is 250.")]},
            }
        },
        {
            "statusUpdate": {
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "TASK_STATE_COMPLETED"},
            }
        },
    ]
    url = serve(Peer([Sse(events)], streaming=True).app)
    turn = await first_turn(url)
    assert turn.messages == ["Your total is 250."]
    assert turn.end_conversation and turn.extra["task_state"] == "completed"


async def test_working_task_is_polled_until_it_waits_for_input(serve: Any) -> None:
    peer = Peer(
        [
            task("TASK_STATE_WORKING", []),
            task("TASK_STATE_WORKING", []),
            task("TASK_STATE_INPUT_REQUIRED", [text("Which order?")]),
        ]
    )
    url = serve(peer.app)
    turn = await first_turn(url)
    assert turn.messages == ["Which order?"]
    assert [r["method"] for r in peer.requests] == ["SendMessage", "GetTask", "GetTask"]


async def test_tool_round_trip_and_integral_floats(serve: Any) -> None:
    call = tool_call_payload("c1", "pay", {"amount": 250, "note": "7"})
    peer = Peer(
        [
            task("TASK_STATE_INPUT_REQUIRED", [text("One moment."), data(call)]),
            task("TASK_STATE_COMPLETED", [text("Paid.")]),
        ]
    )
    url = serve(peer.app)
    prov = provider(url)
    try:
        adapter = prov.new_adapter()
        await adapter.start(session())
        turn = await adapter.send(UserTurn("pay please"))
        (tool_call,) = turn.tool_calls
        assert tool_call.arguments == {"amount": 250, "note": "7"}
        assert type(tool_call.arguments["amount"]) is int
        done = await adapter.send(ToolResults([ToolResult("c1", "pay", "Error: no", True)]))
    finally:
        await prov.aclose()
    assert done.end_conversation and done.messages == ["Paid."]
    sent = peer.requests[1]["params"]["message"]
    assert (
        sent["taskId"] == "t1"
        and sent["contextId"] == peer.requests[0]["params"]["message"]["contextId"]
    )
    assert sent["parts"][0]["data"] == {
        "type": "tool_result",
        "call_id": "c1",
        "name": "pay",
        "content": "Error: no",
        "is_error": True,
    }
    assert "urn:tau-adapters:a2a:client-tools:v1" in peer.headers[0]["a2a-extensions"]


async def test_only_answered_calls_are_reported(serve: Any) -> None:
    calls = [data(tool_call_payload(f"c{i}", "echo", {"text": str(i)})) for i in (1, 2)]
    peer = Peer(
        [task("TASK_STATE_INPUT_REQUIRED", calls), task("TASK_STATE_INPUT_REQUIRED", [text("ok")])]
    )
    url = serve(peer.app)
    prov = provider(url)
    try:
        adapter = prov.new_adapter()
        await adapter.start(session())
        await adapter.send(UserTurn("go"))
        await adapter.send(ToolResults([ToolResult("c1", "echo", "1")]))  # a prefix
    finally:
        await prov.aclose()
    parts = peer.requests[1]["params"]["message"]["parts"]
    assert [p["data"]["call_id"] for p in parts] == ["c1"]


async def test_refusals_are_retried_honouring_retry_after(serve: Any) -> None:
    peer = Peer(
        [
            Http(503, {"error": "busy"}, {"Retry-After": "0"}),
            Http(429, {"error": "slow down"}, {"Retry-After": "0"}),
            task("TASK_STATE_INPUT_REQUIRED", [text("hi")]),
        ]
    )
    url = serve(peer.app)
    turn = await first_turn(url)
    assert turn.messages == ["hi"] and turn.extra["attempts"] == 3
    assert [r["server_delay"] for r in turn.extra["retries"]] == [0.0, 0.0]


async def test_retry_after_longer_than_retry_max_gives_up(serve: Any) -> None:
    url = serve(Peer([Http(429, {}, {"Retry-After": "3600"})]).app)
    with pytest.raises(AdapterError, match="retry after 3600 s") as info:
        await first_turn(url)
    assert info.value.retryable


async def test_server_errors_are_not_resent(serve: Any) -> None:
    peer = Peer([Http(500, {"error": "boom"})])
    url = serve(peer.app)
    with pytest.raises(AdapterError, match="HTTP 500") as info:
        await first_turn(url)
    assert info.value.retryable and len(peer.requests) == 1


async def test_unauthorised_is_an_auth_error_without_the_secret(serve: Any) -> None:
    security = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    peer = Peer([Http(401, {"error": "bad token"})], security=security)
    url = serve(peer.app)
    with pytest.raises(AdapterAuthError) as info:
        await first_turn(url, bearer_token="tok-123-secret")
    assert peer.headers[0]["authorization"] == "Bearer tok-123-secret"
    assert "tok-123-secret" not in str(info.value)


async def test_missing_credentials_fail_fast(serve: Any) -> None:
    security = {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}}
    peer = Peer([], security=security)
    url = serve(peer.app)
    with pytest.raises(AdapterConfigError, match=r"requires authentication.*--api-key"):
        await provider(url).preflight()
    assert peer.requests == []


async def test_extension_mode_needs_the_extension_in_the_card(serve: Any) -> None:
    url = serve(Peer([], extension=False).app)
    with pytest.raises(AdapterConfigError, match="does not declare urn:tau-adapters"):
        await provider(url, tool_mode="extension").preflight()
    assert await provider(url).tool_mode() == "none"  # auto: a plain conversation


async def test_missing_card_is_a_config_error(serve: Any) -> None:
    url = serve(Peer([]).app)
    prov = provider(url, tool_mode="extension", card_path="/nope.json")
    with pytest.raises(AdapterConfigError, match="no agent card"):
        await prov.preflight()
    await prov.aclose()


async def test_unreachable_agent_is_retryable(serve: Any) -> None:
    url = serve(Peer([]).app)
    prov = provider(url.rsplit(":", 1)[0] + ":9", max_attempts=2)
    with pytest.raises(AdapterError, match="cannot connect") as info:
        await prov.preflight()
    assert info.value.retryable
    await prov.aclose()
