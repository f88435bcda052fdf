"""`endpoints.endpoint`: where this process sends a model's calls, as a Ray driver
compares it with its workers' (their node's environment may name another endpoint,
proxy or account). Passwords never show."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_bench.llm import LLMConfig, endpoints
from tau_bench.llm.endpoints import endpoint, endpoint_settings, litellm_settings

ENV = (
    *("OPENAI_BASE_URL", "OPENAI_API_BASE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"),
    *("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID"),
    *("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL", "VERTEXAI_PROJECT", "VERTEXAI_LOCATION"),
    *("VERTEX_PROJECT", "VERTEX_LOCATION", "VERTEXAI_API_BASE", "VERTEX_API_BASE"),
    *("AWS_BEDROCK_RUNTIME_ENDPOINT", "AWS_REGION_NAME", "AWS_REGION", "AWS_DEFAULT_REGION"),
    *("VERTEX_AI_API_BASE", "VERTEX_AI_BASE_URL", "BEDROCK_API_BASE", "BEDROCK_BASE_URL"),
    *("HF_API_BASE", "HUGGINGFACE_API_BASE", "HUGGINGFACE_BASE_URL", "WATSONX_URL", "WX_URL"),
    *("WATSONX_API_BASE", "WATSONX_BASE_URL", "AZURE_API_BASE", "HOSTED_VLLM_API_BASE"),
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
        "litellm's vertex_ai endpoint (VERTEXAI_LOCATION=europe-west4, VERTEXAI_PROJECT=team-eval)"
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


def test_settings_litellm_reads_under_other_names_are_found_in_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The installed litellm's own names (not a pattern): huggingface's HF_API_BASE."""
    hugging = LLMConfig("huggingface/meta-llama/Llama-3.1-8B-Instruct")
    assert endpoint(hugging) == "litellm's huggingface endpoint"
    monkeypatch.setenv("HF_API_BASE", "http://10.0.0.3:8080")
    assert endpoint(hugging) == "litellm's huggingface endpoint (HF_API_BASE=http://10.0.0.3:8080)"
    # watsonx's code reads WATSONX_URL and WX_URL, and falls back to other providers'
    # endpoints, which are theirs
    watsonx = litellm_settings("watsonx")
    assert {"WATSONX_URL", "WX_URL"} <= set(watsonx)
    assert not {"AZURE_API_BASE", "HOSTED_VLLM_API_BASE"} & set(watsonx)
    monkeypatch.setenv("WX_URL", "https://eu-de.ml.cloud.ibm.com")
    monkeypatch.setenv("AZURE_API_BASE", "https://team.openai.azure.com")
    assert endpoint_settings("watsonx") == [("WX_URL", "https://eu-de.ml.cloud.ibm.com")]
    # and the shared code's branch for a provider: friendliai's FRIENDLI_API_BASE
    assert "FRIENDLI_API_BASE" in litellm_settings("friendliai")


def test_the_settings_of_a_provider_s_code_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    llms = tmp_path / "litellm" / "llms"
    for folder in ("acme/chat", "other", "ai21"):
        (llms / folder).mkdir(parents=True)
    (llms / "acme" / "chat" / "handler.py").write_text(
        'base = get_secret("ACME_URL") or os.environ.get("OTHER_API_BASE")\n'
        "region = get_secret('ACME_REGION'); key = get_secret('ACME_API_KEY')\n"
    )
    (llms.parent / "main.py").write_text(
        'if custom_llm_provider == "acme":\n    v = get_secret("ACME_API_VERSION")\n'
        'elif model in x or custom_llm_provider in ("ai21_chat", "solo"):\n'
        '    base = get_secret("AI21_API_BASE") or get_secret("SOLO_HOST")\n'
        'else:\n    base = get_secret("ELSEWHERE_URL")\n'
    )
    monkeypatch.setattr(endpoints, "litellm_llms_dir", lambda: llms)
    litellm_settings.cache_clear()
    try:
        # an API key is not an endpoint; OTHER_API_BASE is the other provider's
        assert litellm_settings("acme") == ("ACME_API_VERSION", "ACME_REGION", "ACME_URL")
        # a branch of the shared code for the provider (not its else); a variant of
        # ai21 keeps ai21's endpoint
        assert litellm_settings("solo") == ("SOLO_HOST",)
        assert litellm_settings("ai21_chat") == ("AI21_API_BASE", "SOLO_HOST")
        assert litellm_settings("nobody") == () and litellm_settings("../acme") == ()
    finally:
        litellm_settings.cache_clear()
