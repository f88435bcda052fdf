"""Against the real gRPC emulator: pre-flight (ListTools once, shared), the call deadline,
session expiry (NOT_FOUND, reset), the text-length policy, the compact trace; and every
Google credential type loads offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.dialogflow.clients import load_credentials
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.emulator import Emulator
from adapters.dialogflow.queries import SESSION_MARKER, split_sentences
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterTimeoutError,
    AdapterUnavailableError,
    UserTurn,
)
from tau_bench.domains import load_domain
from tau_bench.episode import run_task, session_for
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for

TASK = 13  # airline: instruction longer than 256 characters


def _task(index: int = TASK):  # type: ignore[no-untyped-def]
    domain = load_domain("airline", DATA_DIR)
    return domain, domain.tasks("test")[index]


async def test_preflight_lists_tools_once_and_every_episode_shares_the_failure(
    emulator: Emulator,
) -> None:
    emulator.faults.inject("unauthenticated", 1, methods={"ListTools"})
    provider = provider_for(emulator.address)
    with pytest.raises(AdapterAuthError, match="ListTools: UNAUTHENTICATED"):
        await provider.preflight()
    domain, task = _task()
    for _ in range(3):
        episode = await run_task(domain, task, TASK, provider.new_adapter(), ScriptedUser())
        assert episode.result.error is not None and episode.result.error.kind == "auth_error"
    assert emulator.calls["ListTools"] == 1
    await provider.aclose()


async def test_preflight_success_is_shared(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    await provider.preflight()
    domain, task = _task()
    episode = await run_task(domain, task, TASK, provider.new_adapter(), ScriptedUser())
    assert episode.reward_value == 1.0
    assert emulator.calls["ListTools"] == 1
    await provider.aclose()


async def test_the_call_deadline_ends_endless_retries_as_an_agent_timeout(
    emulator: Emulator,
) -> None:
    emulator.faults.inject("unavailable", 100, retry_delay=0.2)
    provider = provider_for(emulator.address, call_deadline=0.5, max_attempts=50)
    domain, task = _task()
    episode = await run_task(domain, task, TASK, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    error = episode.result.error
    assert error is not None and error.kind == "agent_timeout", error
    assert "call_deadline" in error.message
    assert episode.result.duration < 3.0


async def _opened(provider, task_index: int = TASK):  # type: ignore[no-untyped-def]
    domain, task = _task(task_index)
    adapter = provider.new_adapter()
    await adapter.start(session_for(domain, task, task_index, 0))
    return adapter, task


async def test_not_found_mid_episode_is_agent_unavailable(emulator: Emulator) -> None:
    provider = provider_for(emulator.address)
    adapter, task = await _opened(provider)
    await adapter.send(UserTurn(task.instruction))
    emulator.faults.inject("not_found", 1, message="session not found")
    with pytest.raises(AdapterUnavailableError, match="session expired or was deleted"):
        await adapter.send(UserTurn("Are you there?"))
    await provider.aclose()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_session_reset_mid_episode_is_agent_unavailable() -> None:
    clock = Clock()
    emu = Emulator(env="airline", idle_ttl=60, clock=clock)
    await emu.start()
    try:
        provider = provider_for(emu.address)
        adapter, task = await _opened(provider)
        await adapter.send(UserTurn(task.instruction))
        clock.now += 3600  # idle past the session's TTL: the service forgets it
        with pytest.raises(AdapterUnavailableError, match="session was reset"):
            await adapter.send(UserTurn("Are you there?"))
        await provider.aclose()
    finally:
        await emu.stop()


async def test_parameters_go_on_every_request_and_the_marker_on_the_first(
    emulator: Emulator,
) -> None:
    provider = provider_for(emulator.address, trace="full")
    adapter, task = await _opened(provider)
    first = await adapter.send(UserTurn(task.instruction))
    sent = first.raw[0]["request"]["query_params"]["parameters"]
    assert sent[SESSION_MARKER] is True and sent["task_id"] == TASK
    second = await adapter.send(UserTurn("Thanks?"))
    sent = second.raw[0]["request"]["query_params"]["parameters"]
    assert SESSION_MARKER not in sent and sent["task_id"] == TASK
    await provider.aclose()


async def test_a_long_user_message_fails_the_episode_as_a_platform_limit(
    emulator: Emulator,
) -> None:
    provider = provider_for(emulator.address, text_limit=256)
    domain, task = _task()
    assert len(task.instruction) > 256
    episode = await run_task(domain, task, TASK, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    error = episode.result.error
    assert error is not None and error.kind == "agent_platform_limit"
    assert f"{len(task.instruction)} characters" in error.message
    assert emulator.calls["DetectIntent"] == 0  # refused before anything was sent


async def test_split_policy_sends_consecutive_messages(emulator: Emulator) -> None:
    provider = provider_for(emulator.address, text_limit=256, long_text="split", trace="full")
    adapter, task = await _opened(provider)
    turn = await adapter.send(UserTurn(task.instruction))
    parts = split_sentences(task.instruction, 256)
    assert turn.extra["text_split_into"] == len(parts) == 3
    texts = [r["request"]["query_input"]["text"]["text"] for r in turn.raw]
    # consecutive messages, in order (the oracle brain ends the call after the second)
    assert len(texts) >= 2 and texts == parts[: len(texts)]
    assert all(len(t) <= 256 for t in parts) and " ".join(parts) == task.instruction.strip()
    await provider.aclose()


def test_split_sentences_cuts_after_sentence_ends() -> None:
    text = "First sentence here. Second one is longer! Third? " + "x" * 30
    assert split_sentences(text, 45) == [
        "First sentence here. Second one is longer!",
        "Third? " + "x" * 30,
    ]
    assert split_sentences("a" * 10, 4) == ["aaaa", "aaaa", "aa"]


async def test_compact_trace_is_the_default_and_much_smaller(emulator: Emulator) -> None:
    domain, task = _task(2)
    sizes = {}
    for trace in ("compact", "full"):
        provider = provider_for(emulator.address, trace=trace)
        episode = await run_task(domain, task, 2, provider.new_adapter(), ScriptedUser())
        await provider.aclose()
        assert episode.reward_value == 1.0
        turns = [t.to_dict() for t in episode.result.turns]
        sizes[trace] = len(json.dumps(turns))
        agent = [t for t in episode.result.turns if t.role == "agent"]
        if trace == "compact":
            assert "request" not in agent[0].raw[0] and "generative_info" not in agent[0].extra
            assert agent[0].raw[0]["input"] == "text" and agent[0].raw[0]["response_id"]
    assert load_config({"agent_id": "a", "project_id": "p"}).trace == "compact"
    assert sizes["compact"] * 3 < sizes["full"], sizes


# -- every Google credential type, loaded offline ----------------------------------------


def _sa_key() -> dict[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": "p",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "sa@p.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


CREDENTIAL_FILES = {
    "service_account": _sa_key,
    "authorized_user": lambda: {
        "type": "authorized_user",
        "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "csecret",
        "refresh_token": "rtoken",
    },
    "external_account": lambda: {
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/1/locations/global/"
        "workloadIdentityPools/pool/providers/prov",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "https://sts.googleapis.com/v1/token",
        "credential_source": {"file": "/var/run/token"},
    },
}


@pytest.mark.parametrize("kind", sorted(CREDENTIAL_FILES))
def test_every_credential_type_loads_without_network(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(CREDENTIAL_FILES[kind]()))
    config = load_config({"agent_id": "a", "project_id": "p", "gcp_sa_file": str(path)})
    credentials = load_credentials(config)
    assert credentials is not None
    assert not credentials.valid  # nothing was fetched: no token yet


async def test_preflight_with_a_key_and_no_network_fails_in_one_call_deadline(
    tmp_path: Path,
) -> None:
    """A real key file, an endpoint that never answers (a closed local port): pre-flight
    fails within the call deadline, once, instead of ~30 s per episode."""
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(_sa_key()))
    provider = provider_for(
        "unused",
        emulator=None,
        gcp_sa_file=str(path),
        api_endpoint="127.0.0.1:9",
        call_deadline=1.0,
        timeout=0.5,
    )
    with pytest.raises((AdapterTimeoutError, AdapterAuthError, Exception)) as info:
        await provider.preflight()
    assert info.type.__module__.startswith("tau_adapters"), info.value
    await provider.aclose()
