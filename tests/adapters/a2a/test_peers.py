"""Hostile and broken A2A peers on real loopback servers: every failure is typed, one
line, within its deadline; refusals are retried, honouring Retry-After."""

from __future__ import annotations

import asyncio
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

from .peers import FLOOD_CAP, Http, Peer, Raw, Sse, result, task

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
    with pytest.raises(AdapterConfigError, match=r"requires authentication.*--api-key") as info:
        await provider(url).preflight()
    assert "tau run --a2a-api-key, tau a2a check --api-key" in str(info.value)
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


# --------------------------------------------------------------- secrets the agent echoes

TOKEN = "tok-echoed-QWERTY987"
BEARER = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}


async def test_an_echoed_token_is_masked_in_the_turn_and_its_record(serve: Any) -> None:
    said = f"I got your token: Bearer {TOKEN} / raw {TOKEN}"
    call = tool_call_payload("c1", "echo", {"text": "hi"})
    peer = Peer([task("TASK_STATE_INPUT_REQUIRED", [text(said), data(call)])], security=BEARER)
    prov = provider(serve(peer.app), bearer_token=TOKEN)
    try:
        adapter = prov.new_adapter()
        await adapter.start(session())
        turn = await adapter.send(UserTurn("hello"))
    finally:
        await prov.aclose()
    assert peer.headers[0]["authorization"] == f"Bearer {TOKEN}"  # it was sent...
    assert turn.messages == ["I got your token: Bearer *** / raw ***"]  # ...and is masked
    assert TOKEN not in repr(turn.raw) and TOKEN not in repr(turn.extra)
    assert "Bearer ***" in repr(turn.raw)
    assert prov.secrets == [TOKEN]  # the runner masks every record with these too


@pytest.mark.parametrize("state", ["TASK_STATE_FAILED", "TASK_STATE_AUTH_REQUIRED"])
async def test_an_echoed_key_is_masked_in_a_failed_tasks_error(serve: Any, state: str) -> None:
    security = {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}}
    peer = Peer([task(state, [text(f"failed; key {TOKEN}")])], security=security)
    with pytest.raises(AdapterError) as info:
        await first_turn(serve(peer.app), api_key=TOKEN)
    assert peer.headers[0]["x-key"] == TOKEN
    assert str(info.value).endswith("failed; key ***")


async def test_a_run_records_no_echoed_token(serve: Any, tmp_path: Any) -> None:
    """Through the runner, as `tau run --a2a-token` does: results, trajectories, errors."""
    from tau_bench.config import RunConfig
    from tau_bench.runner import run

    from ...conftest import DATA_DIR

    echo = text(f"I got your token: Bearer {TOKEN}")
    failed = task("TASK_STATE_FAILED", [text(f"failed; token {TOKEN}")])
    peer = Peer([task("TASK_STATE_INPUT_REQUIRED", [echo]), failed, failed], security=BEARER)
    config = RunConfig(
        env="retail",
        agent_strategy="a2a",
        user_strategy="scripted",
        task_ids=[0, 1],  # the scripted user may stop after the first turn
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        agent_options={"agent_url": serve(peer.app), "bearer_token": TOKEN, "timeout": 5},
        quiet=True,
        skip_preflight=True,
    )
    outcome = await run(config)
    errors = [r.error for r in outcome.records if r.error]
    assert errors and errors[-1]["kind"] == "agent_task_failed"
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "I got your token: Bearer ***" in written and "failed; token ***" in written
    assert TOKEN not in written and TOKEN not in repr(outcome.records)


async def test_control_characters_of_the_agent_are_escaped(serve: Any) -> None:
    url = serve(Peer([task("TASK_STATE_INPUT_REQUIRED", [text("hi \x1b]0;PWNED\x07\x1b[2J")])]).app)
    turn = await first_turn(url)
    assert turn.messages == ["hi \\x1b]0;PWNED\\x07\\x1b[2J"]


# ------------------------------------------------------------------------- size bounds

SMALL = 64 * 1024  # max_response_bytes of these tests


def big_message(size: int) -> dict[str, Any]:
    return {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [text("a" * size)]}}


async def test_a_reply_larger_than_the_bound_is_a_protocol_error(serve: Any) -> None:
    url = serve(Peer([result(big_message(SMALL))]).app)
    with pytest.raises(AdapterProtocolError, match="larger than the 65536 bytes allowed"):
        await first_turn(url, max_response_bytes=SMALL)
    ok = serve(Peer([result(big_message(SMALL // 2))]).app)
    assert len((await first_turn(ok, max_response_bytes=SMALL)).messages[0]) == SMALL // 2


async def test_a_reply_without_content_length_is_cut_at_the_bound(serve: Any) -> None:
    async def chunks() -> Any:
        yield b'{"jsonrpc": "2.0", "id": "1", "result": {"message": {"parts": [{"text": "'
        for _ in range(FLOOD_CAP // 65536):  # "never" ends: only the bound stops the client
            yield b"a" * 65536
            await asyncio.sleep(0)  # so that the server can cancel it when the client leaves

    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from .peers import card

    def app(url: str) -> Starlette:
        async def rpc(request: Any) -> Any:
            return StreamingResponse(chunks(), media_type="application/json")

        async def card_route(request: Any) -> Any:
            from starlette.responses import JSONResponse

            return JSONResponse(card(url))

        return Starlette(
            routes=[
                Route("/.well-known/agent-card.json", card_route),
                Route("/", rpc, methods=["POST"]),
            ]
        )

    with pytest.raises(AdapterProtocolError, match="max_response_bytes"):
        await first_turn(serve(app), max_response_bytes=SMALL, timeout=30)


async def test_a_card_larger_than_the_bound_is_a_protocol_error(serve: Any) -> None:
    url = serve(Peer([], pad_card=SMALL).app)
    prov = provider(url, max_response_bytes=SMALL)
    with pytest.raises(AdapterProtocolError, match=r"agent-card\.json is larger than"):
        await prov.preflight()
    await prov.aclose()


async def test_a_gzip_bomb_is_cut_at_the_bound_decompressed(serve: Any) -> None:
    import gzip
    import json

    body = json.dumps(result(big_message(50 * SMALL))).encode()
    bomb = Raw(
        gzip.compress(body), {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    )
    assert len(bomb.body) < SMALL // 4  # small on the wire
    with pytest.raises(AdapterProtocolError, match="max_response_bytes"):
        await first_turn(serve(Peer([bomb]).app), max_response_bytes=SMALL)
    fine = json.dumps(result(big_message(100))).encode()
    zipped = Raw(
        gzip.compress(fine), {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    )
    turn = await first_turn(serve(Peer([zipped]).app), max_response_bytes=SMALL)
    assert turn.messages == ["a" * 100]


async def test_an_sse_stream_that_floods_fails_at_the_bound_not_the_deadline(serve: Any) -> None:
    working = {
        "statusUpdate": {
            "taskId": "t1",
            "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING", "message": {"parts": [text("w" * 2000)]}},
        }
    }
    url = serve(Peer([Sse([working], flood=True)], streaming=True).app)
    with pytest.raises(AdapterProtocolError, match="max_response_bytes"):  # not the deadline's
        await first_turn(url, max_response_bytes=SMALL, timeout=60)


async def test_an_sse_line_that_never_ends_fails_at_the_bound(serve: Any) -> None:
    url = serve(Peer([Sse([], endless_line=True)], streaming=True).app)
    with pytest.raises(AdapterProtocolError, match="max_response_bytes"):
        await first_turn(url, max_response_bytes=SMALL, timeout=60)


async def test_too_many_stream_events_is_a_protocol_error(serve: Any) -> None:
    working = {
        "statusUpdate": {
            "taskId": "t1",
            "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING"},
        }
    }
    url = serve(Peer([Sse([working] * 20, hang=True)], streaming=True).app)
    with pytest.raises(AdapterProtocolError, match=r"more than 10 events .*max_events"):
        await first_turn(url, max_events=10, timeout=60)


async def test_polls_keep_only_the_latest_snapshot(serve: Any) -> None:
    working = task("TASK_STATE_WORKING", [text("w" * 1000)])
    peer = Peer([working] * 5 + [task("TASK_STATE_INPUT_REQUIRED", [text("Which order?")])])
    turn = await first_turn(serve(peer.app))
    assert turn.messages == ["Which order?"] and turn.extra["polls"] == 5
    assert len(turn.raw[0]["events"]) == 2  # the reply and the last poll


# ----------------------------------------------------------------------------- Retry-After


async def test_an_unreadable_retry_after_is_retried_with_backoff(serve: Any) -> None:
    peer = Peer(
        [
            Http(503, {"error": "busy"}, {"Retry-After": "soon"}),
            Http(429, {"error": "busy"}, {"Retry-After": "Mon, 99 Foo 2015 99:99:99 GMT"}),
            task("TASK_STATE_INPUT_REQUIRED", [text("hi")]),
        ]
    )
    turn = await first_turn(serve(peer.app))
    assert turn.messages == ["hi"] and turn.extra["attempts"] == 3
    assert [r["server_delay"] for r in turn.extra["retries"]] == [None, None]
