"""`missing_keys`: the models of a run whose API key this process's environment lacks,
with no call made (a Ray worker asks it at setup, where the environment is its node's,
not the driver's)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tau_bench.config import RunConfig
from tau_bench.runner.preflight import missing_keys

MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE")


@pytest.fixture(autouse=True)
def no_openai_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MODEL_ENV:
        monkeypatch.delenv(name, raising=False)


def _config(**fields: object) -> RunConfig:
    base: dict[str, object] = {
        "env": "airline",
        "agent_strategy": "tool-calling",
        "model": "openai/gpt-4o-mini",
        "user_strategy": "llm",
        "user_model": "openai/gpt-4o-mini",
    }
    return RunConfig(**{**base, **fields})


def test_every_model_without_its_key_is_one_line() -> None:
    assert missing_keys(_config(), object()) == [
        "agent tool-calling model openai/gpt-4o-mini: no API key: set OPENAI_API_KEY",
        "user model openai/gpt-4o-mini (openai): no API key: set OPENAI_API_KEY",
    ]


@pytest.mark.parametrize("setting", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_a_key_or_an_endpoint_in_the_environment_is_enough(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(setting, "http://127.0.0.1:9/v1" if "URL" in setting else "sk-k-123456")
    assert missing_keys(_config(), object()) == []


def test_models_that_need_no_key_or_call_no_model_are_not_listed() -> None:
    config = _config(api_base="http://127.0.0.1:9/v1", user_strategy="scripted")
    assert missing_keys(config, object()) == []
    assert missing_keys(_config(agent_strategy="oracle", user_strategy="scripted"), object()) == []


def test_the_judge_is_listed_only_when_a_task_of_the_run_needs_it() -> None:
    config = _config(env="tau3/retail", agent_strategy="oracle", user_strategy="scripted")
    judged, unjudged = SimpleNamespace(needs_judge=True), SimpleNamespace(needs_judge=False)
    assert missing_keys(config, object(), [judged, unjudged]) == [
        "judge model gpt-4.1-2025-04-14: no API key: set OPENAI_API_KEY"
    ]
    assert missing_keys(config, object(), [unjudged]) == []
