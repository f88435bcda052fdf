"""`endpoints.endpoint`: where this process sends a model's calls, as a Ray driver
compares it with its workers' (their node's environment may name another endpoint,
proxy or account). Passwords never show."""

from __future__ import annotations

import pytest

from tau_bench.llm import LLMConfig
from tau_bench.llm.endpoints import endpoint, endpoint_settings

ENV = (
    *("OPENAI_BASE_URL", "OPENAI_API_BASE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"),
    *("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID"),
    *("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL", "VERTEXAI_PROJECT", "VERTEXAI_LOCATION"),
    *("VERTEX_PROJECT", "VERTEX_LOCATION", "VERTEXAI_API_BASE", "VERTEX_API_BASE"),
    *("AWS_BEDROCK_RUNTIME_ENDPOINT", "AWS_REGION_NAME", "AWS_REGION", "AWS_DEFAULT_REGION"),
    *("VERTEX_AI_API_BASE", "VERTEX_AI_BASE_URL", "BEDROCK_API_BASE", "BEDROCK_BASE_URL"),
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


def test_another_provider_s_endpoint_as_its_settings_move_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    claude = LLMConfig("anthropic/claude-3-5-haiku-latest")
    assert endpoint(claude) == "litellm's anthropic endpoint"
    monkeypatch.setenv("ANTHROPIC_API_BASE", "http://ops:s3cret-pass@10.0.0.1:8000")
    assert endpoint(claude) == (
        "litellm's anthropic endpoint (ANTHROPIC_API_BASE=http://ops:***@10.0.0.1:8000)"
    )
    monkeypatch.setenv("VERTEXAI_PROJECT", "team-eval")
    monkeypatch.setenv("VERTEXAI_LOCATION", "europe-west4")
    assert endpoint(LLMConfig("vertex_ai/gemini-2.0-flash")) == (
        "litellm's vertex_ai endpoint (VERTEXAI_PROJECT=team-eval, VERTEXAI_LOCATION=europe-west4)"
    )
    assert endpoint_settings("bedrock") == []
    monkeypatch.setenv("AWS_REGION_NAME", "us-west-2")
    assert endpoint_settings("bedrock") == [("AWS_REGION_NAME", "us-west-2")]


def test_another_provider_s_proxy_is_named_with_what_may_exempt_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://team:pr0xy-pass@proxy.corp:3128")
    claude = LLMConfig("anthropic/claude-3-5-haiku-latest")
    assert endpoint(claude) == (
        "litellm's anthropic endpoint through the proxy http://team:***@proxy.corp:3128"
    )
    monkeypatch.setenv("NO_PROXY", "api.anthropic.com")
    assert endpoint(claude) == (
        "litellm's anthropic endpoint through the proxy http://team:***@proxy.corp:3128"
        " unless NO_PROXY api.anthropic.com exempts it"
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")  # host known
    assert endpoint(claude) == (
        "litellm's anthropic endpoint (ANTHROPIC_BASE_URL=https://api.anthropic.com)"
    )


def test_a_config_s_api_base_is_another_provider_s_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_BASE", "http://10.0.0.1:8000")  # the config's wins
    given = LLMConfig("anthropic/claude-3-5-haiku-latest", api_base="http://10.0.0.9:4000")
    assert endpoint(given) == "http://10.0.0.9:4000"
