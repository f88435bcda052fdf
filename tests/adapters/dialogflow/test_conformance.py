"""The adapter against tau_adapters' conformance kit, plus its own lifecycle rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.dialogflow.adapter import DialogflowProvider
from adapters.dialogflow.clients import load_credentials, make_client, make_clients
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.emulator import Emulator
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterConfigError,
    AdapterProtocolError,
    AgentAdapter,
    ToolResult,
    ToolResults,
    UserTurn,
)
from tau_adapters.testing import check_adapter
from tau_bench.domains import load_domain
from tau_bench.episode import session_for

from ...conftest import DATA_DIR

SECRET = "-----BEGIN PRIVATE KEY-----SECRET-MARKER"


async def test_conformance_kit(emulator: Emulator, provider: DialogflowProvider) -> None:
    domain = load_domain("airline", DATA_DIR)
    # Airline task 2: the oracle brain makes five tool calls, so the kit's error round runs.
    session = session_for(domain, domain.tasks("test")[2], 2, 0)
    report = await check_adapter(provider.new_adapter, session=session, require_tool_call=True)
    assert report.ok, report.summary()
    assert "tool results round trip" in report.passed


async def test_lifecycle(provider: DialogflowProvider) -> None:
    domain = load_domain("airline", DATA_DIR)
    adapter: AgentAdapter = provider.new_adapter()
    assert isinstance(adapter, AgentAdapter)
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
    # The same adapter may start a new conversation (a new Dialogflow session).
    await adapter.start(session_for(domain, domain.tasks("test")[13], 13, 0, session_id="life-2"))
    assert adapter.session_path.endswith("/sessions/life-2")  # type: ignore[attr-defined]
    assert (await adapter.send(UserTurn("hi"))).tool_calls[0].name == "transfer_to_human_agents"
    await adapter.close()


def test_bad_service_account_file_never_leaks_its_content(tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": SECRET}))
    config = load_config({"agent_id": "a", "project_id": "p", "gcp_sa_file": str(key)})
    with pytest.raises(AdapterConfigError) as info:
        load_credentials(config)
    assert "not a usable Google credentials file" in str(info.value)
    assert "SECRET" not in str(info.value)


async def test_missing_adc_is_an_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth
    from google.auth import exceptions

    def no_adc(**_: object) -> None:
        raise exceptions.DefaultCredentialsError("none here")

    monkeypatch.setattr(google.auth, "default", no_adc)
    monkeypatch.delenv("DIALOGFLOW_CX_EMULATOR_HOST", raising=False)
    with pytest.raises(AdapterAuthError, match="gcloud auth application-default login"):
        await make_clients(load_config({"agent_id": "a", "project_id": "p"}))


async def test_real_endpoint_clients_use_the_regional_host() -> None:
    from google.auth.credentials import AnonymousCredentials

    config = load_config({"agent_id": "projects/p/locations/europe-west1/agents/a"})
    client = make_client("sessions", config, AnonymousCredentials())
    try:
        assert client.transport._host == "europe-west1-dialogflow.googleapis.com:443"
    finally:
        await client.transport.close()


async def test_trajectory_holds_no_credentials(emulator: Emulator, tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": SECRET}))
    provider = DialogflowProvider(
        load_config(
            {
                "agent_id": "a",
                "project_id": "p",
                "emulator": emulator.address,
                "gcp_sa_file": str(key),
            }
        )
    )
    domain = load_domain("airline", DATA_DIR)
    adapter = provider.new_adapter()
    try:
        await adapter.start(session_for(domain, domain.tasks("test")[13], 13, 0))
        turn = await adapter.send(UserTurn("hi"))
    finally:
        await provider.aclose()
    dumped = json.dumps([turn.raw, turn.extra])
    assert "SECRET" not in dumped and str(key) not in dumped
