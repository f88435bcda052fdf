"""`TauBenchEnv(llm_path=...)`: the env's own model calls (its user's) take its path,
as a run's take `--llm-path`; envs with different paths share one loop, and the
process's path is left as it was. Told apart at the model server by the client that
called it (litellm's own HTTP client, or the openai SDK's)."""

from __future__ import annotations

import asyncio

import pytest

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.gym.env import TauBenchEnv
from tau_bench.llm import llm_path
from tests.conftest import DATA_DIR
from tests.tau_bench.llm.clients_seen import clients

DEADLINE = 120.0  # seconds an episode's first two turns may take


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gym-path")


def make_env(server: OpenAIServer, path: str | None) -> TauBenchEnv:
    return TauBenchEnv(
        domain="airline",
        user_model="openai/gpt-4o-mini",  # auto would take the direct path
        user_api_base=server.base_url,
        task_ids=[0],
        data_dir=str(DATA_DIR),
        llm_path=path,
    )


async def two_turns(env: TauBenchEnv) -> None:
    try:
        await env.async_reset(seed=1)
        await env.async_step("How can I help you today?")
    finally:
        env.close()


@pytest.mark.parametrize("path", ["litellm", "direct"])
def test_the_users_calls_take_the_envs_path(path: str) -> None:
    with OpenAIServer(scripted_model) as server:
        env = make_env(server, path)
        try:
            env.reset(seed=1)
            env.step("How can I help you today?")
        finally:
            env.close()
        assert len(server.requests) == 2 and clients(server) == {path}
    assert llm_path() == "auto"


async def test_envs_with_different_paths_on_one_loop_keep_theirs() -> None:
    with OpenAIServer(scripted_model) as first, OpenAIServer(scripted_model) as second:
        envs = [make_env(first, "litellm"), make_env(second, "direct")]
        await asyncio.wait_for(asyncio.gather(*(two_turns(e) for e in envs)), DEADLINE)
        assert (clients(first), clients(second)) == ({"litellm"}, {"direct"})
    assert llm_path() == "auto"


def test_without_a_path_the_env_takes_the_processs() -> None:
    with OpenAIServer(scripted_model) as server:
        env = make_env(server, None)
        try:
            env.reset(seed=1)
        finally:
            env.close()
        assert clients(server) == {"direct"}  # auto: direct where exact


def test_an_unknown_path_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"unknown llm path 'fast' \(choose from auto, "):
        TauBenchEnv(domain="airline", data_dir=str(DATA_DIR), llm_path="fast")
