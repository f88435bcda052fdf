"""Against a misbehaving service (real gRPC servers on 127.0.0.1, `hostile.py`): bearer
tokens echoed back are masked, secret session parameters are redacted in the full
trace, answers are bounded, listings end, service text reaches the terminal escaped,
non-finite payload numbers are recorded, and bad input is one line at load."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from typer.testing import CliRunner

from adapters.dialogflow import clients as clients_module
from adapters.dialogflow.adapter import DialogflowProvider
from adapters.dialogflow.clients import load_credentials, make_clients
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.cli import app
from adapters.dialogflow.harness.emulator import Emulator
from adapters.dialogflow.harness.emulator.faults import FaultPlan, FaultSpecError
from adapters.dialogflow.provision import Provisioner
from tau_adapters.options import check_key_templates
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    SessionContext,
    UserTurn,
)
from tau_adapters.redaction import fingerprint
from tau_bench.domains import load_domain
from tau_bench.episode import session_for
from tau_bench.runner.types import provider_secrets

from ...conftest import DATA_DIR
from .conftest import FAST_RETRIES, provider_for
from .hostile import (
    CONTROL,
    HostileService,
    TokenEndpoint,
    service_account_file,
    write_certificate,
)

REPO = Path(__file__).resolve().parents[3]
AGENT = ["--agent-id", "a", "--project-id", "p"]
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def _session() -> SessionContext:
    return SessionContext(session_id="s-1", domain="airline", tools=[])


# ------------------------------------------------------------------ 1. bearer tokens


@pytest.mark.parametrize("mode", ["echo_text", "echo_error"])
def test_check_never_prints_the_bearer_token_the_agent_echoes(tmp_path: Path, mode: str) -> None:
    """The real-service path (TLS + a service-account key) in a fresh process: the
    token the agent repeats, in a reply or in an error, is masked in `check`'s output."""
    cert = write_certificate(tmp_path)
    key = service_account_file(tmp_path / "key.json")
    with HostileService(mode, security="tls", cert_dir=tmp_path) as service:
        env = {**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert)}
        env.pop("DIALOGFLOW_CX_EMULATOR_HOST", None)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from adapters.dialogflow.harness.cli import app; app()",
                "check",
                *AGENT,
                "--api-endpoint",
                service.address,
                "--gcp-sa-file",
                str(key),
                "--say",
                "hi",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    output = done.stdout + done.stderr
    assert service.calls.get("DetectIntent") == 1, output
    assert service.tokens_seen, output  # the credentials path was really taken
    for token in service.tokens_seen:
        assert token not in output
    if mode == "echo_error":
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("error: ") and "you sent Bearer ***" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["reply"]["messages"] == ["your token is Bearer ***"]


@pytest.fixture
def local_security(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real-service channel over gRPC local credentials (no certificate needed)."""
    monkeypatch.setattr(
        clients_module,
        "_channel_security",
        lambda: grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP),
        raising=False,
    )
    monkeypatch.delenv("DIALOGFLOW_CX_EMULATOR_HOST", raising=False)


def _adc(monkeypatch: pytest.MonkeyPatch, tokens: TokenEndpoint) -> None:
    """Application Default Credentials: user credentials refreshing at `tokens`."""
    import google.auth

    monkeypatch.setattr(google.auth, "default", lambda **_: (tokens.credentials(), "p"))


async def test_every_refreshed_token_is_declared_and_masked(
    monkeypatch: pytest.MonkeyPatch, local_security: None
) -> None:
    """Tokens refresh (here before every call): each one sent is in `secrets`, which the
    runner reads for every record, and none is left in what the adapter returns."""
    with (
        TokenEndpoint(expires_in=1) as tokens,
        HostileService("echo_text", security="local") as service,
    ):
        _adc(monkeypatch, tokens)
        provider = DialogflowProvider(
            load_config(
                {
                    "agent_id": "a",
                    "project_id": "p",
                    "api_endpoint": service.address,
                    "trace": "full",
                }
            )
        )
        try:
            adapter = provider.new_adapter()
            await adapter.start(_session())
            turns = [await adapter.send(UserTurn("hi")) for _ in range(2)]
        finally:
            await provider.aclose()
    assert len(service.tokens_seen) >= 3  # ListTools and two DetectIntents, each a new token
    assert set(service.tokens_seen) <= set(tokens.issued)
    declared = provider_secrets(provider)
    assert set(service.tokens_seen) <= set(declared)
    dumped = json.dumps([[t.messages, t.raw, t.extra] for t in turns])
    for token in service.tokens_seen:
        assert token not in dumped
    assert turns[1].messages == ["your token is Bearer ***"]


async def test_a_token_echoed_in_an_error_is_masked(
    monkeypatch: pytest.MonkeyPatch, local_security: None
) -> None:
    with TokenEndpoint() as tokens, HostileService("echo_error", security="local") as service:
        _adc(monkeypatch, tokens)
        provider = DialogflowProvider(
            load_config({"agent_id": "a", "project_id": "p", "api_endpoint": service.address})
        )
        try:
            adapter = provider.new_adapter()
            await adapter.start(_session())
            with pytest.raises(AdapterError) as info:
                await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    assert service.tokens_seen and service.tokens_seen[0] not in str(info.value)
    assert "you sent Bearer ***" in str(info.value)


# ------------------------------------------------------------------ 2. secret session params


async def test_secret_session_params_are_redacted_in_the_full_trace(emulator: Emulator) -> None:
    secret = "s3cr3t-param-value"
    provider = provider_for(
        emulator.address, session_param=[f"api_token={secret}", "plain=visible"], trace="full"
    )
    try:
        domain = load_domain("airline", DATA_DIR)
        adapter = provider.new_adapter()
        await adapter.start(session_for(domain, domain.tasks("test")[13], 13, 0))
        turn = await adapter.send(UserTurn("hi"))
    finally:
        await provider.aclose()
    dumped = json.dumps([turn.raw, turn.extra])
    assert secret not in dumped
    request = turn.raw[0]["request"]["query_params"]["parameters"]
    # the run header's redaction (`redact_secrets`): the same fingerprint
    assert request["api_token"] == fingerprint(secret) and request["plain"] == "visible"
    assert secret in provider_secrets(provider)


# ------------------------------------------------------------------ 3. response size


async def test_an_answer_over_max_response_mb_is_final_not_resent() -> None:
    with HostileService("huge") as service:
        provider = provider_for(service.address, max_response_mb=1, max_attempts=5)
        try:
            adapter = provider.new_adapter()
            await adapter.start(_session())
            with pytest.raises(AdapterProtocolError, match="max_response_mb"):
                await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    assert service.calls["DetectIntent"] == 1  # the applied turn was not sent again


def test_max_response_mb_is_validated() -> None:
    base = {"agent_id": "a", "project_id": "p"}
    assert load_config(base).max_response_bytes == 32 << 20
    for bad in ("0", "nan", "100000"):
        with pytest.raises(AdapterConfigError, match="max_response_mb"):
            load_config({**base, "max_response_mb": bad})


# ------------------------------------------------------------------ 4. endless pages


async def test_provision_listing_stops_when_the_service_paginates_forever() -> None:
    with HostileService("endless_pages") as service:
        config = load_config({"agent_id": "a", "project_id": "p", "emulator": service.address})
        clients = await make_clients(config)
        try:
            async with asyncio.timeout(120):  # a safety net for the old endless loop
                with pytest.raises(AdapterProtocolError, match="next page"):
                    await Provisioner(clients, config).run("airline", [], "policy")
        finally:
            await clients.close()
    from adapters.dialogflow.provision import MAX_LIST_PAGES

    assert service.calls["ListTools"] == MAX_LIST_PAGES


def test_provision_command_reports_endless_pages_in_one_line() -> None:
    with HostileService("endless_pages") as service:
        out = CliRunner().invoke(
            app, ["provision", "--env", "airline", *AGENT, "--emulator", service.address]
        )
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
    assert "next page" in out.stderr


# ------------------------------------------------------------------ 5. credentials files


@pytest.mark.parametrize(
    "content",
    [
        "[]",
        '"str"',
        json.dumps({"type": "external_account", "credential_source": "file"}),
        json.dumps(
            {
                "type": "impersonated_service_account",
                "service_account_impersonation_url": "https://x/y:generateAccessToken",
                "source_credentials": "str",
            }
        ),
        "huge",
    ],
    ids=["list", "string", "external-string-source", "impersonated-string-source", "huge"],
)
def test_a_malformed_credentials_file_is_one_line_naming_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "creds.json"
    if content == "huge":  # a usable key, but over the 1 MiB bound
        service_account_file(path)
        path.write_text(path.read_text() + " " * (1 << 20))
    else:
        path.write_text(content)
    config = load_config({"agent_id": "a", "project_id": "p", "gcp_sa_file": str(path)})
    with pytest.raises(AdapterConfigError) as info:
        load_credentials(config)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    out = CliRunner().invoke(app, ["check", *AGENT, "--gcp-sa-file", str(path)])
    assert out.exit_code == 2 and out.stderr.startswith("error: "), out.output
    assert out.stderr.count("\n") == 1 and str(path) in out.stderr


# ------------------------------------------------------------------ 6. control characters


@pytest.mark.parametrize("mode", ["control_error", "control_text", "control_names"])
def test_service_text_reaches_the_terminal_escaped(mode: str) -> None:
    with HostileService(mode) as service:
        out = CliRunner().invoke(
            app, ["check", *AGENT, "--emulator", service.address, "--say", "hi"]
        )
    for char in RAW_CONTROLS:
        assert char not in out.stdout and char not in out.stderr
    if mode == "control_error":
        assert out.exit_code == 2 and out.stderr.count("\n") == 1
        assert "\\x1b[31mRED" in out.stderr
    else:
        assert out.exit_code == 0, out.output
        result = json.loads(out.stdout)  # still JSON, the text intact once decoded
        if mode == "control_text":
            assert result["reply"]["messages"] == [CONTROL]
        else:
            assert list(result["function_tools"].values()) == [CONTROL]


def test_provision_log_lines_escape_control_characters() -> None:
    lines: list[str] = []
    config = load_config({"agent_id": "a", "project_id": "p", "emulator": "127.0.0.1:1"})
    Provisioner(None, config, log=lines.append).log(f"updated playbook {CONTROL}")  # type: ignore[arg-type]
    assert lines and not any(char in lines[0] for char in RAW_CONTROLS)


# ------------------------------------------------------------------ 7. non-finite payloads


async def test_a_nan_in_a_payload_never_breaks_the_episode() -> None:
    with HostileService("nan_payload") as service:
        provider = provider_for(service.address, trace="full")
        try:
            adapter = provider.new_adapter()
            await adapter.start(_session())
            turn = await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    assert turn.messages == ["hello"]
    assert turn.extra["other_messages"] == ["payload"]
    payload = turn.raw[0]["response"]["query_result"]["response_messages"][1]["payload"]
    assert payload == {"v": "NaN", "w": ["Infinity"]}
    json.dumps(turn.raw, allow_nan=False)  # plain JSON


async def test_a_nan_in_tool_call_arguments_reaches_the_tool() -> None:
    """As a model's JSON arguments decode (and as the CES adapter reads them): the tool
    answers the odd value, and the recorded response stays plain JSON."""
    with HostileService("nan_args") as service:
        provider = provider_for(service.address, trace="full")
        try:
            adapter = provider.new_adapter()
            await adapter.start(_session())
            turn = await adapter.send(UserTurn("hi"))
        finally:
            await provider.aclose()
    (call,) = turn.tool_calls
    assert call.name == "calculate" and math.isnan(call.arguments["expression"])
    json.dumps(turn.raw, allow_nan=False)


# ------------------------------------------------------------------ 8. host:port


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:-1", "nohost"])
def test_a_bad_emulator_address_is_refused(address: str) -> None:
    with pytest.raises(AdapterConfigError, match="--emulator"):
        load_config({"agent_id": "a", "project_id": "p", "emulator": address})
    out = CliRunner().invoke(app, ["check", *AGENT, "--emulator", address])
    assert out.exit_code == 2 and out.stderr.count("\n") == 1, out.output


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_emulate_refuses_a_port_out_of_range(port: str) -> None:
    out = CliRunner().invoke(app, ["emulate", "--port", port, "--no-preload-tools"])
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: --port") and out.stderr.count("\n") == 1


# ------------------------------------------------------------------ 9. templates


@pytest.mark.parametrize(
    "template",
    ["{task_id!x}", "{task_id!r}", "{task_id:>999999999}", "{trial:>99999999999999999999}"],
)
def test_session_param_templates_allow_only_plain_placeholders(template: str) -> None:
    with pytest.raises(ValueError, match="only plain placeholders"):
        check_key_templates([f"x={template}"])
    with pytest.raises(AdapterConfigError, match="only plain placeholders"):
        load_config({"agent_id": "a", "project_id": "p", "session_param": [f"x={template}"]})
    out = CliRunner().invoke(
        app, ["check", *AGENT, "--emulator", "127.0.0.1:1", "--session-param", f"x={template}"]
    )
    assert out.exit_code == 2 and out.stderr.count("\n") == 1, out.output
    assert check_key_templates(["x={task_id}-{trial}", "y=plain"]) == [
        "x={task_id}-{trial}",
        "y=plain",
    ]


# ------------------------------------------------------------------ 10. the rest


def test_a_huge_fault_count_is_a_counter() -> None:
    plan = FaultPlan()
    plan.load("unavailable:999999999999")
    assert plan.pending() == 999999999999
    fault = plan.take("DetectIntent")
    assert fault is not None and fault.code == grpc.StatusCode.UNAVAILABLE
    assert plan.pending() == 999999999998
    plan.inject("internal", 2, methods={"ListTools"})
    assert [plan.take("ListTools") is not None for _ in range(3)] == [True, True, False]
    for bad in ("unavailable:-1", "unavailable@nan", "unavailable@-1"):
        with pytest.raises(FaultSpecError):
            FaultPlan().load(bad)


@pytest.mark.parametrize("key", ["timeout", "call_deadline", "retry_initial", "rate_limit"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_refused(key: str, value: str) -> None:
    with pytest.raises(AdapterConfigError, match=key):
        load_config({"agent_id": "a", "project_id": "p", key: value})
    assert math.isfinite(load_config({"agent_id": "a", "project_id": "p", **FAST_RETRIES}).timeout)


@pytest.mark.parametrize(
    "name",
    [
        "projects/p/locations/global/agents/x y\x1b]0;T\x07",
        "projects/p q/locations/global/agents/a",
        "projects/p/locations/glo\u202ebal/agents/a",
    ],
)
def test_every_part_of_a_full_agent_name_is_validated(name: str) -> None:
    with pytest.raises(AdapterConfigError, match="bad") as info:
        load_config({"agent_id": name})
    assert not any(char in str(info.value) for char in RAW_CONTROLS)
