"""`direct.endpoint`: where this process sends an OpenAI-format call, as a Ray driver
compares it with its workers' (their node's environment may name another endpoint,
proxy or account). Passwords never show."""

from __future__ import annotations

import pytest

from tau_bench.llm import LLMConfig
from tau_bench.llm.direct import endpoint

ENV = (
    *("OPENAI_BASE_URL", "OPENAI_API_BASE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"),
    *("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID"),
)


@pytest.fixture(autouse=True)
def no_endpoint_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_openai_s_own_endpoint_when_nothing_names_another() -> None:
    assert endpoint(LLMConfig("openai/gpt-4o-mini")) == "https://api.openai.com/v1"


def test_the_environment_s_endpoint_and_the_config_s_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway:8000/v1")
    assert endpoint(LLMConfig("openai/gpt-4o-mini")) == "http://gateway:8000/v1"
    given = LLMConfig("openai/my-model", api_base="http://10.0.0.7:8000/v1")
    assert endpoint(given) == "http://10.0.0.7:8000/v1"


def test_the_proxy_is_named_with_its_password_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://team:pr0xy-pass@proxy.corp:3128")
    where = endpoint(LLMConfig("openai/gpt-4o-mini"))
    assert where == "https://api.openai.com/v1 through the proxy http://team:***@proxy.corp:3128"
    monkeypatch.setenv("NO_PROXY", "api.openai.com")
    assert endpoint(LLMConfig("openai/gpt-4o-mini")) == "https://api.openai.com/v1"


def test_an_endpoint_s_password_is_masked() -> None:
    given = LLMConfig("openai/m", api_base="https://user:s3cret-pass@gw.example/v1")
    assert endpoint(given) == "https://user:***@gw.example/v1"


def test_the_account_billed_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-team")
    assert endpoint(LLMConfig("openai/gpt-4o-mini")) == (
        "https://api.openai.com/v1 (organization org-team)"
    )
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_eval")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert endpoint(LLMConfig("openai/gpt-4o-mini")) == (
        "https://api.openai.com/v1 through the proxy http://proxy.corp:3128"
        " (organization org-team, project proj_eval)"
    )


def test_other_providers_have_none() -> None:
    assert endpoint(LLMConfig("anthropic/claude-3-5-haiku-latest")) is None
