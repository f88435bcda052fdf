"""The four LLM strategies are found through the `tau_adapters` entry points."""

from __future__ import annotations

import pytest

from tau_adapters.protocol import AdapterConfigError, AgentAdapter
from tau_adapters.registry import available, build_provider
from tau_bench.agents.act import ActAgent
from tau_bench.agents.few_shot import FewShotAgent
from tau_bench.agents.react import ReactAgent
from tau_bench.agents.tool_calling import ToolCallingAgent

STRATEGIES = {
    "tool-calling": ToolCallingAgent,
    "act": ActAgent,
    "react": ReactAgent,
    "few-shot": FewShotAgent,
}

RUN_OPTIONS = {
    "model": "gpt-4o",
    "model_provider": "openai",
    "temperature": 0.5,
    "api_base": "http://127.0.0.1:8000/v1",
    "seed": 10,
    "few_shot_displays_path": None,
    "data_dir": None,
    "env": "retail",
    "user_strategy": "llm",
    "max_concurrency": 4,
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_registered_and_built_from_run_options(name: str) -> None:
    assert name in available()
    adapter = build_provider(name, RUN_OPTIONS).new_adapter()
    assert isinstance(adapter, AgentAdapter)
    assert type(adapter) is STRATEGIES[name]
    config = adapter.config  # type: ignore[attr-defined]
    assert (config.model, config.provider, config.api_base) == (
        "gpt-4o",
        "openai",
        "http://127.0.0.1:8000/v1",
    )
    assert (config.temperature, config.seed) == (0.5, 10)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_model_is_required(name: str) -> None:
    with pytest.raises(AdapterConfigError, match="no model"):
        build_provider(name, {"model": None, "env": "airline"})


async def test_the_runners_own_options_reach_the_provider(fake_llm) -> None:  # type: ignore[no-untyped-def]
    """RunConfig turns `--model gemini/...` into model_provider "gemini" as well: both given."""
    from tau_adapters.protocol import SessionContext, UserTurn
    from tau_bench.config import RunConfig
    from tau_bench.users import build_user
    from tests.tau_bench.agents.fake_llm import Reply

    fake_llm.brain = lambda request: Reply(text=f"{request.provider}:{request.model}")
    config = RunConfig(
        env="airline",
        model="gemini/gemini-2.5-flash",
        user_model="anthropic/claude-sonnet-4-5",
        temperature=0.2,
        seed=4,
    )
    agent = build_provider("tool-calling", config.adapter_options()).new_adapter()
    await agent.start(SessionContext("s", "airline", [], policy="P"))
    turn = await agent.send(UserTurn("hi"))
    assert turn.text == "gemini:gemini-2.5-flash"
    assert fake_llm.requests[-1].body["generationConfig"]["temperature"] == 0.2

    user = build_user(config.user_strategy, **config.user_options())
    assert await user.start("Your user id is x.") == "anthropic:claude-sonnet-4-5"
    assert fake_llm.requests[-1].body["temperature"] == 0.0


def test_string_options_from_the_command_line() -> None:
    adapter = build_provider(
        "few-shot",
        {
            "model": "m",
            "env": "airline",
            "max_attempts": "8",
            "timeout": "60",
            "num_few_shots": "3",
        },
    ).new_adapter()
    config = adapter.config  # type: ignore[attr-defined]
    assert (config.max_attempts, config.timeout) == (8, 60.0)
    with pytest.raises(
        AdapterConfigError, match="'max_attempts' must be a whole number from 1 to 100, got 'many'"
    ):
        build_provider("act", {"model": "m", "max_attempts": "many"})
    with pytest.raises(AdapterConfigError, match="llm_extra"):
        build_provider("react", {"model": "m", "llm_extra": "max_tokens=5"})
