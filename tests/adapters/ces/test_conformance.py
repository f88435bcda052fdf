"""The adapter against tau_adapters' conformance kit (both transports), plus lifecycle."""

from __future__ import annotations

import pytest

from adapters.ces.adapter import CesProvider
from tau_adapters.protocol import AdapterProtocolError, ToolResult, ToolResults, UserTurn
from tau_adapters.testing import assert_adapter_conforms
from tau_bench.domains import load_domain
from tau_bench.episode import session_for

from ...conftest import DATA_DIR
from .conftest import ThreadedEmulator, provider_for


@pytest.mark.parametrize("streaming", [False, True], ids=["run-session", "bidi"])
def test_conformance_kit(streaming: bool) -> None:
    domain = load_domain("airline", DATA_DIR)
    # Airline task 2: the oracle brain makes five tool calls, so the error round runs.
    session = session_for(domain, domain.tasks("test")[2], 2, 0)
    with ThreadedEmulator(env="airline") as emu:
        provider = provider_for(emu.address, streaming=streaming)
        report = assert_adapter_conforms(
            provider.new_adapter, session=session, require_tool_call=True
        )
    assert "tool results round trip" in report.passed


async def test_lifecycle_and_prefix_of_results(provider: CesProvider) -> None:
    domain = load_domain("airline", DATA_DIR)
    adapter = provider.new_adapter()
    with pytest.raises(AdapterProtocolError, match="new conversation"):
        await adapter.send(UserTurn("hi"))
    await adapter.start(session_for(domain, domain.tasks("test")[2], 2, 0, session_id="life-1"))
    turn = await adapter.send(UserTurn("hi"))
    assert len(turn.tool_calls) == 1
    with pytest.raises(AdapterProtocolError, match="unknown tool call"):
        await adapter.send(ToolResults([ToolResult("nope", "x", "y")]))
    await adapter.close()
    await adapter.close()
    with pytest.raises(AdapterProtocolError, match="closed conversation"):
        await adapter.send(UserTurn("again"))
    # A prefix of the calls answered (here: none): the rest go back as not executed.
    await adapter.start(session_for(domain, domain.tasks("test")[2], 2, 0, session_id="life-2"))
    first = await adapter.send(UserTurn("hi"))
    nxt = await adapter.send(ToolResults([]))
    assert nxt.extra["calls_not_executed"] == 1
    sent = nxt.raw[0]["request"]["inputs"][0]["tool_responses"]["tool_responses"][0]
    assert sent["response"]["error"].startswith("Error: tool call not executed")
    assert sent["id"] == first.tool_calls[0].raw["id"]
    await adapter.close()
