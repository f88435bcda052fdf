"""Every path sends the same OpenAI account headers (`OpenAI-Organization`,
`OpenAI-Project`) from the same settings: a key that belongs to several organizations or
projects is billed to the one the user named, whichever path `auto` picks for a model.
litellm's HTTP handler, which the litellm path uses, would send none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tau_bench.llm import Completion, LLMConfig, aclose_clients, complete, set_llm_path
from tau_bench.llm.runtime import litellm
from tests.tau_bench.llm.call_paths import PATHS, call_once, choose_path, no_wait_policy
from tests.tau_bench.llm.raw_server import RawServer, as_json, chat

ACCOUNT_ENV = ("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test on the litellm path and on both transports of the direct path, with no
    account setting but the test's own."""
    for name in ACCOUNT_ENV:
        monkeypatch.delenv(name, raising=False)
    choose_path(str(request.param), monkeypatch)
    yield str(request.param)
    set_llm_path("auto")


def sent(**config: Any) -> dict[str, str]:
    """The account headers one call sends (names as sent, values)."""
    with RawServer(lambda: as_json(chat(content="ok"))) as server:
        result = asyncio.run(
            call_once(server.base_url, no_wait_policy(1), extra={"api_key": "sk-1", **config})
        )
    assert isinstance(result, Completion), result
    (headers,) = server.headers
    return {
        name.lower(): value
        for name, value in headers.items()
        if name.lower() in ("openai-organization", "openai-project")
    }


def test_the_openai_sdk_s_variables_are_sent(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-sdk")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_sdk")
    assert sent() == {"openai-organization": "org-sdk", "openai-project": "proj_sdk"}


def test_litellm_s_variables_are_sent_and_win_over_the_sdk_s(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-litellm")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-sdk")
    monkeypatch.setenv("OPENAI_PROJECT", "proj_litellm")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_sdk")
    assert sent() == {"openai-organization": "org-litellm", "openai-project": "proj_litellm"}


def test_litellm_s_module_settings_are_sent(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-sdk")
    monkeypatch.setattr(litellm(), "organization", "org-module")
    monkeypatch.setattr(litellm(), "project", "proj_module")
    assert sent() == {"openai-organization": "org-module", "openai-project": "proj_module"}


def test_none_are_sent_when_nothing_names_an_account(path: str) -> None:
    assert sent() == {}


def test_a_caller_s_own_headers_win(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-sdk")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_sdk")
    headers = sent(extra_headers={"OpenAI-Organization": "org-caller"})
    assert headers == {"openai-organization": "org-caller", "openai-project": "proj_sdk"}


def test_a_changed_setting_reaches_the_next_call_on_the_same_loop(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct path pools its clients per endpoint: a pooled client must not keep
    sending the organization the environment named when it was made."""

    async def two_calls(base_url: str) -> None:
        for organization in ("org-first", "org-second"):
            monkeypatch.setenv("OPENAI_ORG_ID", organization)
            config = LLMConfig(
                "openai/gpt-4o-mini",
                api_base=base_url,
                retry=no_wait_policy(1),
                extra={"api_key": "sk-1"},
            )
            await complete(config, [{"role": "user", "content": "hi"}])
        await aclose_clients()

    with RawServer(lambda: as_json(chat(content="ok"))) as server:
        asyncio.run(asyncio.wait_for(two_calls(server.base_url), 60))
    seen = [
        {name.lower(): value for name, value in headers.items()}.get("openai-organization")
        for headers in server.headers
    ]
    assert seen == ["org-first", "org-second"]
