"""Answers gRPC cannot use, from a real server on 127.0.0.1: bytes that are no protobuf
message (grpc.aio hands the caller None for them, without an error) and a status whose
message is over gRPC's metadata limit. Both mean the request ran: each is one final
`AdapterProtocolError` (one `error:` line from the CLI), never an AttributeError, and
never sent again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.ces.adapter import CesProvider, load_options
from tau_adapters.protocol import AdapterError, AdapterProtocolError, SessionContext, UserTurn

from .conftest import APP, FAST_RETRIES
from .hostile import HostileCes

ROOT = Path(__file__).resolve().parents[3]
TAU = str(Path(sys.executable).with_name("tau"))
HANG_GUARD = 120.0


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileCes]:
    with HostileCes(request.param) as server:
        yield server


def provider(server: HostileCes, **options: Any) -> CesProvider:
    return CesProvider(
        load_options({"app_id": APP, "emulator": server.address, **FAST_RETRIES, **options})
    )


async def say(provider: CesProvider) -> Any:
    import asyncio

    adapter = provider.new_adapter()
    await adapter.start(SessionContext(session_id="s-1", domain="retail", tools=[]))
    try:
        return await asyncio.wait_for(adapter.send(UserTurn("hi")), HANG_GUARD)
    finally:
        await adapter.close()


@pytest.mark.parametrize(
    ("hostile", "streaming", "method"),
    [
        ("garbage_run_session", False, "RunSession"),
        ("garbage_bidi", True, "BidiRunSession"),
    ],
    indirect=["hostile"],
)
async def test_an_undecodable_turn_answer_is_a_final_protocol_error(
    hostile: HostileCes, streaming: bool, method: str
) -> None:
    p = provider(hostile, streaming=streaming)
    try:
        with pytest.raises(AdapterProtocolError, match=f"not a valid {method} response"):
            await say(p)
    finally:
        await p.aclose()
    assert hostile.calls[method] == 1


@pytest.mark.parametrize("hostile", ["garbage_list_tools"], indirect=True)
async def test_an_undecodable_tool_list_is_a_protocol_error(hostile: HostileCes) -> None:
    p = provider(hostile)
    try:
        with pytest.raises(AdapterProtocolError, match="not a valid ListTools response"):
            await p.tool_names()
    finally:
        await p.aclose()


@pytest.mark.parametrize("hostile", ["big_metadata"], indirect=True)
async def test_a_status_over_the_metadata_limit_is_final(hostile: HostileCes) -> None:
    p = provider(hostile)
    try:
        with pytest.raises(AdapterProtocolError, match="metadata size exceeds"):
            await say(p)
    finally:
        await p.aclose()
    assert hostile.calls["RunSession"] == 1  # it ran: not sent again


@pytest.mark.parametrize(
    ("hostile", "method"),
    [("garbage_get_app", "GetApp"), ("garbage_list_tools", "ListTools")],
    indirect=["hostile"],
)
def test_check_reports_an_undecodable_answer_in_one_line(hostile: HostileCes, method: str) -> None:
    proc = subprocess.run(
        [TAU, "ces", "check", "--app-id", APP, "--emulator", hostile.address],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr
        == f"error: ces {method}: the answer is not a valid {method} response (undecodable protobuf)\n"
    )


@pytest.mark.parametrize("hostile", ["garbage_details", "mismatched_details"], indirect=True)
async def test_a_status_with_unreadable_details_keeps_its_code(hostile: HostileCes) -> None:
    # api_core raises the details parser's DecodeError / ValueError instead of the
    # status; the adapter still sees UNAVAILABLE: retried, then one AdapterError.
    p = provider(hostile, max_attempts=3)
    try:
        with pytest.raises(AdapterError, match="UNAVAILABLE: try later") as caught:
            await say(p)
    finally:
        await p.aclose()
    assert caught.value.retryable
    assert hostile.calls["RunSession"] == 3
