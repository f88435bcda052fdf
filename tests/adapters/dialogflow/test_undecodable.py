"""Answers gRPC cannot use, from a real server on 127.0.0.1: bytes that are no protobuf
message (grpc.aio hands the caller None for them, without an error) and a status whose
message is over gRPC's metadata limit. Both mean the request ran: each is one final
`AdapterProtocolError` (one `error:` line from the CLI), never an AttributeError, and
never sent again."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from adapters.dialogflow.harness.cli import app
from tau_adapters.protocol import AdapterError, AdapterProtocolError, SessionContext, UserTurn

from .conftest import provider_for
from .hostile import HostileService

SESSION = SessionContext(session_id="s-1", domain="airline", tools=[])


@pytest.mark.parametrize(
    ("mode", "match"),
    [
        ("garbage_detect", "not a valid DetectIntent response"),
        ("big_metadata", "metadata size exceeds"),
    ],
)
async def test_an_unusable_turn_answer_is_final_not_resent(mode: str, match: str) -> None:
    with HostileService(mode) as service:
        provider = provider_for(service.address, max_attempts=5)
        try:
            adapter = provider.new_adapter()
            await adapter.start(SESSION)
            with pytest.raises(AdapterProtocolError, match=match):
                await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    assert service.calls["DetectIntent"] == 1  # the applied turn was not sent again


async def test_an_undecodable_tool_list_is_a_protocol_error() -> None:
    with HostileService("garbage") as service:
        provider = provider_for(service.address)
        try:
            with pytest.raises(AdapterProtocolError, match="not a valid ListTools response"):
                await provider.preflight()
        finally:
            await provider.aclose()


@pytest.mark.parametrize(
    ("command", "method"),
    [(["check"], "ListTools"), (["provision", "--env", "airline", "--dry-run"], "GetAgent")],
)
def test_the_cli_reports_an_undecodable_answer_in_one_line(command: list[str], method: str) -> None:
    with HostileService("garbage") as service:
        out = CliRunner().invoke(
            app,
            [*command, "--project-id", "p", "--agent-id", "a", "--emulator", service.address],
        )
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith(f"error: dialogflow {method}: the answer is not a valid")
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize("mode", ["garbage_details", "mismatched_details"])
async def test_a_status_with_unreadable_details_keeps_its_code(mode: str) -> None:
    # api_core raises the details parser's DecodeError / ValueError instead of the
    # status; the adapter still sees UNAVAILABLE: retried, then one AdapterError.
    with HostileService(mode) as service:
        provider = provider_for(service.address, max_attempts=3)
        try:
            adapter = provider.new_adapter()
            await adapter.start(SESSION)
            with pytest.raises(AdapterError, match="UNAVAILABLE: try later") as caught:
                await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    assert caught.value.retryable
    assert service.calls["DetectIntent"] == 3
