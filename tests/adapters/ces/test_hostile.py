"""A hostile CES service over real gRPC on 127.0.0.1: every resource bounded, every wait
with a deadline, secrets (access tokens, secret session variables) never recorded or
printed, control characters never printed raw, bad input one line."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from typer.testing import CliRunner

from adapters.ces import clients as ces_clients
from adapters.ces.adapter import CesProvider, load_options
from adapters.ces.clients import load_credentials, make_clients
from adapters.ces.harness.cli import app
from adapters.ces.harness.provision import Provisioner
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    SessionContext,
    UserTurn,
)
from tau_adapters.redaction import redact_secrets
from tau_bench.cli.errors import UserError

from .conftest import APP, FAST_RETRIES
from .hostile import HostileCes, TokenEndpoint

ROOT = Path(__file__).resolve().parents[3]
TAU = str(Path(sys.executable).with_name("tau"))
HANG_GUARD = 120.0  # fails a test that would otherwise hang (the old behaviour), never paces it


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileCes]:
    mode, kwargs = request.param if isinstance(request.param, tuple) else (request.param, {})
    with HostileCes(mode, **kwargs) as server:
        yield server


def emulated(server: HostileCes, **options: Any) -> CesProvider:
    opts: dict[str, Any] = {"app_id": APP, "emulator": server.address, **FAST_RETRIES}
    opts.update(options)
    return CesProvider(load_options(opts))


async def say(provider: CesProvider, text: str = "hi") -> Any:
    adapter = provider.new_adapter()
    await adapter.start(SessionContext(session_id="s-1", domain="retail", tools=[]))
    try:
        return await asyncio.wait_for(adapter.send(UserTurn(text)), HANG_GUARD)
    finally:
        await adapter.close()


# ------------------------------------------------------------ TLS + credentials, offline
@pytest.fixture
def real_service(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[TokenEndpoint, str]]:
    """A token endpoint and a credentials file using it; TLS roots trust the test
    server's certificate (set per HostileCes below)."""
    with TokenEndpoint() as tokens:
        yield tokens, tokens.credentials_file(tmp_path)


def trust(monkeypatch: pytest.MonkeyPatch, server: HostileCes) -> None:
    assert server.cert is not None
    cert = server.cert
    monkeypatch.setattr(ces_clients, "ssl_credentials", lambda: grpc.ssl_channel_credentials(cert))


def real_options(server: HostileCes, credentials_file: str, **options: Any) -> dict[str, Any]:
    return {
        "app_id": APP,
        "api_endpoint": server.address,
        "credentials_file": credentials_file,
        **FAST_RETRIES,
        **options,
    }


@pytest.mark.parametrize("hostile", [("echo_auth_text", {"tls": True})], indirect=True)
async def test_echoed_access_tokens_are_masked_in_turns_and_learnt_as_they_change(
    hostile: HostileCes, real_service: tuple[TokenEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens, credentials_file = real_service
    trust(monkeypatch, hostile)
    provider = CesProvider(load_options(real_options(hostile, credentials_file)))
    try:
        first = await say(provider)
        second = await say(provider)
    finally:
        await provider.aclose()
    # Tokens last one second: google.auth refreshed before every call, so the service saw
    # several different ones, and the provider declares every one of them.
    sent = {a.removeprefix("Bearer ") for a in hostile.authorizations}
    assert len(sent) >= 3 and sent <= set(tokens.issued)
    assert sent <= set(provider.secrets)
    for turn in (first, second):
        dumped = json.dumps([turn.messages, turn.raw, turn.extra])
        assert "ya29." not in dumped and "SECRETVALUE" not in dumped
        assert "***" in turn.messages[0]


@pytest.mark.parametrize("hostile", [("echo_auth_error", {"tls": True})], indirect=True)
async def test_echoed_access_token_is_masked_in_errors(
    hostile: HostileCes, real_service: tuple[TokenEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, credentials_file = real_service
    trust(monkeypatch, hostile)
    provider = CesProvider(load_options(real_options(hostile, credentials_file)))
    try:
        with pytest.raises(AdapterError) as info:
            await say(provider)
    finally:
        await provider.aclose()
    assert "you sent Bearer ***" in str(info.value)
    assert "SECRETVALUE" not in str(info.value)


@pytest.mark.parametrize(
    "hostile",
    [("echo_auth_text", {"tls": True}), ("echo_auth_getapp", {"tls": True})],
    indirect=True,
)
def test_check_never_prints_the_access_token(
    hostile: HostileCes, real_service: tuple[TokenEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, credentials_file = real_service
    trust(monkeypatch, hostile)
    result = CliRunner().invoke(
        app,
        [
            "check",
            "--app-id",
            APP,
            "--api-endpoint",
            hostile.address,
            "--gcp-sa-file",
            credentials_file,
            "--say",
            "hi",
        ],
    )
    shown = result.output + str(result.exception or "")
    assert hostile.calls["GetApp"] == 1
    assert "SECRETVALUE" not in shown and "***" in shown


@pytest.mark.parametrize("hostile", [("huge", {"tls": True, "huge_bytes": 9 << 20})], indirect=True)
async def test_real_service_channel_bounds_answers_and_does_not_retry_them(
    hostile: HostileCes, real_service: tuple[TokenEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, credentials_file = real_service
    trust(monkeypatch, hostile)
    provider = CesProvider(load_options(real_options(hostile, credentials_file)))
    try:
        with pytest.raises(AdapterProtocolError, match="max_response_bytes"):
            await say(provider)
    finally:
        await provider.aclose()
    assert hostile.calls["RunSession"] == 1


@pytest.mark.parametrize("hostile", [("huge", {"huge_bytes": 2 << 20})], indirect=True)
async def test_answer_size_bound_is_an_option_and_final(hostile: HostileCes) -> None:
    provider = emulated(hostile, max_response_bytes=1 << 20)
    try:
        with pytest.raises(AdapterProtocolError, match="larger than the client accepts"):
            await say(provider)
    finally:
        await provider.aclose()
    assert hostile.calls["RunSession"] == 1


# ------------------------------------------------------------------------ bounds
@pytest.mark.parametrize(
    ("limits", "match"),
    [({"max_turn_messages": 50}, "50 messages"), ({"max_turn_bytes": 8192}, "8192 bytes")],
    ids=["messages", "bytes"],
)
@pytest.mark.parametrize("hostile", ["endless_stream"], indirect=True)
async def test_a_stream_that_never_completes_the_turn_is_bounded(
    hostile: HostileCes, limits: dict[str, int], match: str
) -> None:
    # timeout: an attempt the bound did not stop fails with DEADLINE_EXCEEDED instead.
    provider = emulated(hostile, streaming=True, timeout=3, ambiguous_retries=0, **limits)
    try:
        with pytest.raises(AdapterProtocolError, match=match):
            await say(provider)
    finally:
        await provider.aclose()
    assert hostile.calls["BidiRunSession"] == 1


@pytest.mark.parametrize("hostile", ["endless_pages"], indirect=True)
async def test_endless_pagination_stops_at_max_pages(hostile: HostileCes) -> None:
    provider = emulated(hostile, max_pages=7)
    try:
        with pytest.raises(AdapterProtocolError, match="still more pages after 7"):
            await asyncio.wait_for(provider.tool_names(), HANG_GUARD)
    finally:
        await provider.aclose()
    assert hostile.calls["ListTools"] == 7


@pytest.mark.parametrize("hostile", ["endless_pages"], indirect=True)
async def test_provision_stops_endless_pagination(hostile: HostileCes) -> None:
    options = load_options({"app_id": APP, "emulator": hostile.address, "max_pages": 3})
    clients = await make_clients(options)
    try:
        with pytest.raises(AdapterError, match="ListTools: still more pages after 3"):
            await asyncio.wait_for(
                Provisioner(clients, options).run("retail", [], "policy"), HANG_GUARD
            )
    finally:
        await clients.close()
    assert hostile.calls["ListTools"] == 3


@pytest.mark.parametrize("hostile", ["endless_pages"], indirect=True)
def test_check_stops_endless_pagination_with_one_line(hostile: HostileCes) -> None:
    proc = subprocess.run(
        [
            TAU,
            "ces",
            "check",
            "--app-id",
            APP,
            "--emulator",
            hostile.address,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ces: ListTools: still more pages after 100")
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------- provisioning
@pytest.mark.parametrize("hostile", ["lro_never"], indirect=True)
async def test_create_app_operation_that_never_finishes_is_an_error(
    hostile: HostileCes,
) -> None:
    options = load_options({"app_id": APP, "emulator": hostile.address, "deadline": 0.5})
    clients = await make_clients(options)
    try:
        with pytest.raises(AdapterError, match="CreateApp: the operation did not finish"):
            await asyncio.wait_for(
                Provisioner(clients, options).run("retail", [], "policy"), HANG_GUARD
            )
    finally:
        await clients.close()


@pytest.mark.parametrize("hostile", ["lro_error"], indirect=True)
def test_create_app_operation_error_is_one_escaped_line(hostile: HostileCes) -> None:
    proc = subprocess.run(
        [
            TAU,
            "ces",
            "provision",
            "--env",
            "retail",
            "--app-id",
            APP,
            "--emulator",
            hostile.address,
        ],
        cwd=ROOT,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: ces CreateApp: the operation failed: INVALID_ARGUMENT: cannot create"
    )
    assert "\\x1b[31mapp" in last and "\x1b" not in proc.stderr
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------- what is shown
@pytest.mark.parametrize("hostile", ["controls"], indirect=True)
def test_check_output_shows_control_characters_escaped(hostile: HostileCes) -> None:
    result = CliRunner().invoke(
        app, ["check", "--app-id", APP, "--emulator", hostile.address, "--say", "hi"]
    )
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\x9b", "\u202e", "\x07"):
        assert raw not in result.stdout
    shown = json.loads(result.stdout)
    assert "\\x9b31m" in shown["reply"]["messages"][0]
    assert "\\u202e" in next(iter(shown["client_functions"].values()))


@pytest.mark.parametrize("streaming", [False, True], ids=["run-session", "bidi"])
@pytest.mark.parametrize("hostile", ["ok"], indirect=True)
async def test_secret_session_variables_are_redacted_in_recorded_requests(
    hostile: HostileCes, streaming: bool
) -> None:
    entries = ["api_token=SESSION-SECRET-42", "customer={user_id}"]
    provider = emulated(hostile, variables=entries, streaming=streaming)
    try:
        turn = await say(provider)
    finally:
        await provider.aclose()
    request = json.dumps(turn.raw[0]["request"])
    assert "SESSION-SECRET-42" not in request
    # The same fingerprint as the run's header shows for the option.
    header = redact_secrets({"variables": entries})["variables"][0]
    assert header.split("=", 1)[1] in request
    assert "SESSION-SECRET-42" in provider.secrets


@pytest.mark.parametrize("hostile", ["nan_payload"], indirect=True)
async def test_non_finite_numbers_in_a_payload_are_kept_as_strings(hostile: HostileCes) -> None:
    provider = emulated(hostile)
    try:
        turn = await say(provider)
    finally:
        await provider.aclose()
    assert turn.messages == ["hello"]
    assert turn.extra["payloads"] == [{"v": "NaN", "w": ["Infinity"], "d": {"x": "-Infinity"}}]
    assert turn.raw[0]["response"]["outputs"][1]["payload"]["v"] == "NaN"


@pytest.mark.parametrize("hostile", ["nan_args"], indirect=True)
async def test_non_finite_numbers_in_tool_call_arguments_reach_the_tool(
    hostile: HostileCes,
) -> None:
    """As a model's JSON arguments decode and as the Dialogflow CX adapter reads them: the
    tool answers the odd value; the episode goes on (it was an AdapterProtocolError)."""
    provider = emulated(hostile)
    try:
        turn = await say(provider)
    finally:
        await provider.aclose()
    (call,) = turn.tool_calls
    assert call.name == "calculate"
    assert math.isnan(call.arguments["expression"])
    assert call.arguments["nested"] == [float("-inf")]


# ------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[]", "a JSON list"),
        ('"str"', "a JSON str"),
        (
            json.dumps(
                {
                    "type": "external_account",
                    "audience": "//iam.googleapis.com/x",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                    "token_url": "https://sts.googleapis.com/v1/token",
                    "credential_source": "a string",
                }
            ),
            "",
        ),
        ("{" + " " * (1 << 20) + "}", "larger than 1 MiB"),
    ],
    ids=["list", "string", "external-account-string-source", "oversized"],
)
def test_malformed_credentials_files_are_one_line_naming_the_file(
    tmp_path: Path, content: str, reason: str
) -> None:
    path = tmp_path / "creds.json"
    path.write_text(content)
    options = load_options({"app_id": APP, "credentials_file": str(path)})
    with pytest.raises(AdapterConfigError) as info:
        load_credentials(options)
    message = str(info.value)
    assert str(path) in message and "not a usable Google credentials file" in message
    assert reason in message and "\n" not in message
    result = CliRunner().invoke(
        app, ["check", "--app-id", APP, "--gcp-sa-file", str(path), "--api-endpoint", "x:1"]
    )
    assert isinstance(result.exception, UserError), result.exception
    assert str(path) in str(result.exception)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"emulator": "127.0.0.1:100000"}, "ces: emulator: bad port '100000'"),
        ({"emulator": "127.0.0.1:0"}, "ces: emulator: bad port '0'"),
        ({"emulator": "127.0.0.1"}, "ces: emulator: expected the emulator address as HOST:PORT"),
        ({"emulator": "bad host:1"}, "ces: emulator: expected"),
        ({"app_id": "projects/p/locations/us/apps/a\x1b[31m"}, "ces: app_id: bad app id"),
        ({"app_id": "projects/p/locations/us/apps/a\n"}, None),
        (
            {"deployment": f"{APP}/deployments/d\x1b[31m"},
            "ces: deployment: bad id 'd\\x1b[31m'",
        ),
        ({"entry_agent": f"{APP}/agents/a\u202e"}, "ces: entry_agent: bad id"),
        ({"project_id": "p\n", "app_id": "a"}, "ces: project_id: bad value"),
    ],
)
def test_addresses_and_resource_names_are_validated(
    options: dict[str, Any], message: str | None
) -> None:
    opts: dict[str, Any] = {"app_id": APP, **options}
    if message is None:  # a trailing newline is stripped, the rest is a plain id
        assert load_options(opts).app_id == "a"
        return
    with pytest.raises(AdapterConfigError) as info:
        load_options(opts)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_emulate_refuses_out_of_range_ports(port: str) -> None:
    proc = subprocess.run(
        [
            TAU,
            "ces",
            "emulate",
            "--port",
            port,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 2
    assert "bad port" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "template", ["x={task_id!x}", "x={task_id:>999999999}", "x={user_id!r}", "x=a{trial:d}"]
)
def test_session_variable_templates_are_plain_placeholders(template: str) -> None:
    # Checked by the SDK's `check_key_templates`, which the CES options use.
    with pytest.raises(AdapterConfigError) as info:
        load_options({"app_id": APP, "variables": [template]})
    message = str(info.value)
    assert message.startswith("ces: variables: bad template") and "\n" not in message
