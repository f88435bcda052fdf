"""`GET /scores?model=&subset=&taskID=`: the MT-bench service's endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tau_adapters.registry import SimpleProvider
from tau_bench.agents.oracle import OracleAgent
from tau_bench.service.scores_compat import split_model
from tests.tau_bench.agents.fake_llm import FakeLLM
from tests.tau_bench.agents.scenarios import Task13
from tests.tau_bench.service.conftest import make_settings, running_app


async def test_scores_runs_the_model_waits_and_returns_the_scores(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, scores_settings={"agent_strategy": "oracle", "user_strategy": "scripted"}
    )
    async with running_app(settings) as client:
        response = await client.get(
            "/scores", params={"model": "acme/bot-1", "subset": "airline", "taskID": 13}
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.text.splitlines()]
        assert [(s["task-id"], s["score"]) for s in lines] == [("task-13", 1.0)]
        assert list(lines[0]) == ["task-id", "prompt", "result", "truth", "score", "duration"]
        assert lines[0]["truth"].startswith("transfer_to_human_agents(")

        runs = (await client.get("/runs")).json()["runs"]
        assert len(runs) == 1
        run = runs[0]
        assert (run["origin"], run["status"]) == ("scores", "completed")
        assert run["config"]["model"] == "acme/bot-1" and run["config"]["env"] == "airline"
        assert run["config"]["task_ids"] == [13]
        # The same scores stay available from the run.
        again = await client.get(f"/runs/{run['run_id']}/scores")
        assert again.text == response.text


async def test_default_scores_settings_use_the_tool_calling_agent_and_an_llm_user(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.brain = Task13()
    async with running_app(make_settings(tmp_path)) as client:
        response = await client.get(
            "/scores", params={"model": "openai/gpt-4o-mini", "subset": "airline", "taskID": "13"}
        )
        assert response.status_code == 200, response.text
        (score,) = [json.loads(line) for line in response.text.splitlines()]
        assert score["task-id"] == "task-13" and score["score"] == 1.0, score
        assert score["result"].startswith("get_user_details(")
        run = (await client.get("/runs")).json()["runs"][0]
        assert run["config"]["agent_strategy"] == "tool-calling"
        assert (run["config"]["user_strategy"], run["config"]["user_model"]) == ("llm", "gpt-4o")
    # The agent asked with the requested model, the user simulator with the server's.
    models = {r.model for r in fake_llm.requests}
    assert models == {"gpt-4o-mini", "gpt-4o"}, models


async def test_a_run_that_fails_is_a_502_with_the_reason(tmp_path: Path, failing: None) -> None:
    settings = make_settings(
        tmp_path,
        scores_settings={
            "agent_strategy": "failing",
            "user_strategy": "scripted",
            "agent_options": {"api_key": "sk-do-not-show-0123"},
        },
    )
    async with running_app(settings) as client:
        response = await client.get(
            "/scores", params={"model": "m", "subset": "airline", "taskID": 13}
        )
        assert response.status_code == 502
        detail = response.json()["detail"]
        assert "failed: " in detail and "refused api key ***" in detail
        assert "sk-do-not-show" not in response.text


async def test_the_seeds_provider_model_spelling_names_provider_and_model(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.brain = Task13()
    async with running_app(make_settings(tmp_path)) as client:
        response = await client.get(
            "/scores", params={"model": "openai_gpt-4o", "subset": "airline", "taskID": 13}
        )
        assert response.status_code == 200, response.text
        run = (await client.get("/runs")).json()["runs"][0]
        assert (run["config"]["model_provider"], run["config"]["model"]) == ("openai", "gpt-4o")
    assert {r.model for r in fake_llm.requests} == {"gpt-4o"}


class _Crashing(OracleAgent):
    async def send(self, turn: Any) -> Any:
        raise RuntimeError("bot backend down, token sk-hidden-4567")


async def test_a_run_whose_episodes_errored_is_a_502_not_a_score_of_0(
    tmp_path: Path, register: Any
) -> None:
    register("crashing", lambda options: SimpleProvider(_Crashing))
    settings = make_settings(
        tmp_path,
        scores_settings={
            "agent_strategy": "crashing",
            "user_strategy": "scripted",
            "agent_options": {"api_key": "sk-hidden-4567"},
        },
    )
    async with running_app(settings) as client:
        response = await client.get(
            "/scores", params={"model": "m", "subset": "airline", "taskID": 13}
        )
        assert response.status_code == 502, response.text
        detail = response.json()["detail"]
        assert "1 of 1 episode(s) errored" in detail and "bot backend down" in detail, detail
        assert "sk-hidden-4567" not in response.text


def test_split_model_spellings() -> None:
    providers = ["openai", "vertex_ai", "vertex"]
    assert split_model("openai_gpt-4o", providers) == ("openai", "gpt-4o")
    assert split_model("vertex_ai_gemini-1.5-pro", sorted(providers, key=len, reverse=True)) == (
        "vertex_ai",
        "gemini-1.5-pro",
    )
    assert split_model("openai/gpt-4o", providers) == (None, "openai/gpt-4o")
    assert split_model("my_bot", providers) == (None, "my_bot")
    assert split_model("openai_", providers) == (None, "openai_")
    # litellm's own list knows the seed's providers.
    assert split_model("anthropic_claude-3-5-sonnet") == ("anthropic", "claude-3-5-sonnet")
