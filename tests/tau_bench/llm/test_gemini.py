"""Bare Gemini model names: Vertex AI with the agent's Google project and credentials,
else the Gemini API key; real litellm calls answered at the HTTP level (respx for
Google's APIs, a loopback OAuth endpoint for google.auth's token exchange)."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from tau_bench.cli.errors import run_cli
from tau_bench.config import RunConfig
from tau_bench.llm import LLMAuthError, LLMConfig, complete
from tau_bench.llm.gemini import GeminiModelError, resolve_gemini
from tests.tau_bench.llm.google_fakes import ACCESS_TOKEN, TokenServer, make_key_file

SEED = shlex.split(
    "--env retail --agent_strategy decibel --agent_id agent-1 --project_id proj "
    "--start_index 0 --end_index -1 --user_model gemini-1.5-pro"
)
VERTEX_URL = (
    "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1"
    "/publishers/google/models/gemini-2.5-pro:generateContent"
)
STUDIO_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)
HELLO = [{"role": "user", "content": "hello"}]


def gemini_answer(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
    }


@pytest.fixture
def no_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "VERTEXAI_PROJECT",
        "VERTEX_PROJECT",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[tuple[TokenServer, Path]]:
    with TokenServer() as server:
        key_file, public_pem = make_key_file(tmp_path, server.url)
        server.public_pem = public_pem
        yield server, key_file


def seed_config(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> RunConfig:
    """The RunConfig `python run.py ARGV` would run (parsed by the real CLI)."""
    from tau_bench.cli import run_cmd

    seen: list[RunConfig] = []
    monkeypatch.setattr(run_cmd, "_execute", lambda cfg, *_: seen.append(cfg))
    assert run_cli(run_cmd.standalone_app(), argv) == 0
    return seen[0]


def with_model(argv: list[str], model: str) -> list[str]:
    return [model if word == "gemini-1.5-pro" else word for word in argv]


def test_the_seed_command_names_the_retired_model_and_current_ones(
    monkeypatch: pytest.MonkeyPatch, no_google_env: None
) -> None:
    config = seed_config(SEED, monkeypatch)
    with pytest.raises(GeminiModelError, match=r"gemini-1\.5-pro is retired.*gemini-2\.5-pro"):
        config.user_options()


def test_a_bare_gemini_name_never_falls_back_to_openai(no_google_env: None) -> None:
    with pytest.raises(GeminiModelError, match="GEMINI_API_KEY"):
        resolve_gemini("gemini-2.5-pro", None, {})
    assert resolve_gemini("gpt-4o", None, {"project_id": "p"}) == {}
    assert resolve_gemini("gemini-2.5-pro", "vertex_ai", {}) == {}


async def test_seed_command_user_goes_to_vertex_with_the_agents_project_and_key(
    monkeypatch: pytest.MonkeyPatch,
    no_google_env: None,
    token_server: tuple[TokenServer, Path],
) -> None:
    server, key_file = token_server
    argv = [*with_model(SEED, "gemini-2.5-pro"), "--gcp-sa-file", str(key_file)]
    options = seed_config(argv, monkeypatch).user_options()
    assert options["provider"] == "vertex_ai"
    config = LLMConfig.from_options(options)
    with respx.mock(assert_all_mocked=True) as router:
        route = router.post(VERTEX_URL).mock(
            return_value=httpx.Response(200, json=gemini_answer("Hi, I need help."))
        )
        completion = await complete(config, HELLO)
    assert completion.content == "Hi, I need help."
    request = route.calls.last.request
    assert request.headers["authorization"] == f"Bearer {ACCESS_TOKEN}"
    body = json.loads(request.content)
    assert body["contents"][0]["parts"][0]["text"] == "hello"
    # google.auth signed the JWT with the key file's key, for the Cloud Platform scope.
    assert server.claims[-1]["iss"] == "tester@proj.iam.gserviceaccount.com"
    assert "cloud-platform" in server.claims[-1]["scope"]


async def test_vertex_location_comes_from_the_agents_location(
    monkeypatch: pytest.MonkeyPatch,
    no_google_env: None,
    token_server: tuple[TokenServer, Path],
) -> None:
    _, key_file = token_server
    argv = [*with_model(SEED, "gemini-2.5-pro"), "--gcp-sa-file", str(key_file)]
    argv += ["--location", "europe-west4"]
    config = LLMConfig.from_options(seed_config(argv, monkeypatch).user_options())
    url = VERTEX_URL.replace("us-central1", "europe-west4")
    with respx.mock(assert_all_mocked=True) as router:
        router.post(url).mock(return_value=httpx.Response(200, json=gemini_answer("ok")))
        assert (await complete(config, HELLO)).content == "ok"


async def test_a_refused_service_account_is_an_auth_error_without_retries(
    monkeypatch: pytest.MonkeyPatch,
    no_google_env: None,
    token_server: tuple[TokenServer, Path],
) -> None:
    server, key_file = token_server
    server.refuse = True
    argv = [*with_model(SEED, "gemini-2.5-pro"), "--gcp-sa-file", str(key_file)]
    config = LLMConfig.from_options(seed_config(argv, monkeypatch).user_options())
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        route = router.post(VERTEX_URL).mock(return_value=httpx.Response(500))
        with pytest.raises(LLMAuthError, match="invalid_grant"):
            await complete(config, HELLO)
    assert not route.called and len(server.claims) == 1


async def test_vertex_permission_denied_is_an_auth_error(
    monkeypatch: pytest.MonkeyPatch,
    no_google_env: None,
    token_server: tuple[TokenServer, Path],
) -> None:
    _, key_file = token_server
    argv = [*with_model(SEED, "gemini-2.5-pro"), "--gcp-sa-file", str(key_file)]
    config = LLMConfig.from_options(seed_config(argv, monkeypatch).user_options())
    denied = {"error": {"code": 403, "message": "Permission denied", "status": "PERMISSION_DENIED"}}
    with respx.mock(assert_all_mocked=True) as router:
        router.post(VERTEX_URL).mock(return_value=httpx.Response(403, json=denied))
        with pytest.raises(LLMAuthError, match="Permission denied"):
            await complete(config, HELLO)


async def test_without_a_project_the_gemini_api_key_is_used(
    monkeypatch: pytest.MonkeyPatch, no_google_env: None
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-key-0123456789")
    config = RunConfig(user_model="gemini-2.5-flash")
    options = config.user_options()
    assert options["provider"] == "gemini"
    with respx.mock(assert_all_mocked=True) as router:
        route = router.post(STUDIO_URL).mock(
            return_value=httpx.Response(200, json=gemini_answer("fine"))
        )
        assert (await complete(LLMConfig.from_options(options), HELLO)).content == "fine"
    assert route.calls.last.request.headers["x-goog-api-key"] == "AIza-test-key-0123456789"


async def test_an_invalid_gemini_api_key_is_an_auth_error_and_stays_secret(
    monkeypatch: pytest.MonkeyPatch, no_google_env: None
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-wrong-key-0123456789")
    options = RunConfig(user_model="gemini-2.5-flash").user_options()
    invalid = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"reason": "API_KEY_INVALID"}],
        }
    }
    with respx.mock(assert_all_mocked=True) as router:
        router.post(STUDIO_URL).mock(return_value=httpx.Response(400, json=invalid))
        with pytest.raises(LLMAuthError) as caught:
            await complete(LLMConfig.from_options(options), HELLO)
    assert "API key not valid" in str(caught.value)
    assert "AIza-wrong-key" not in str(caught.value)


def test_the_loop_is_not_left_running() -> None:
    # pytest-asyncio closes its loops; this guards the module from leaking one by mistake.
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
