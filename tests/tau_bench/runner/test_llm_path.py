"""A run's `--llm-path` holds for every model call it makes, its pre-flight's included,
and only for its own: runs going on at once in one process (`tau serve`) each keep
theirs. Told apart at the model server by the client that called it (litellm's own
HTTP client, or the openai SDK's)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.config import RunConfig
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.llm import llm_path, set_llm_path
from tau_bench.runner import Runner, prepare_run
from tests.conftest import DATA_DIR
from tests.tau_bench.llm.clients_seen import clients

DEADLINE = 120.0  # seconds a run may take


def config(path: str, server: OpenAIServer, log_dir: Path) -> RunConfig:
    return RunConfig(
        env="airline",
        agent_strategy="tool-calling",
        model="openai/gpt-4o-mini",  # auto would take the direct path
        api_base=server.base_url,
        user_strategy="llm",
        user_model="openai/gpt-4o-mini",
        user_api_base=server.base_url,
        task_ids=[0, 1, 2],
        max_concurrency=3,
        llm_path=path,
        data_dir=str(DATA_DIR),
        log_dir=str(log_dir),
        quiet=True,
    )


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-llm-path")


@pytest.mark.parametrize("path", ["litellm", "direct"])
async def test_every_call_of_a_run_takes_its_path_the_pre_flight_s_too(
    path: str, tmp_path: Path
) -> None:
    with OpenAIServer(scripted_model) as server:
        outcome = await asyncio.wait_for(
            Runner(prepare_run(config(path, server, tmp_path))).run(), DEADLINE
        )
        requests = len(server.requests)
    assert len(outcome.records) == 3 and not any(r.is_error for r in outcome.records)
    assert requests > 2  # the pre-flight's two, and the episodes'
    assert clients(server) == {path}
    assert llm_path() == "auto"  # the process's own path is left as it was


async def test_runs_at_once_in_one_process_each_keep_their_path(tmp_path: Path) -> None:
    with OpenAIServer(scripted_model) as first, OpenAIServer(scripted_model) as second:
        runs = [
            Runner(prepare_run(config("litellm", first, tmp_path / "a"))).run(),
            Runner(prepare_run(config("direct", second, tmp_path / "b"))).run(),
        ]
        outcomes = await asyncio.wait_for(asyncio.gather(*runs), DEADLINE)
    assert [len(o.records) for o in outcomes] == [3, 3]
    assert (clients(first), clients(second)) == ({"litellm"}, {"direct"})


async def test_the_process_s_path_holds_outside_runs(tmp_path: Path) -> None:
    set_llm_path("litellm")
    try:
        with OpenAIServer(scripted_model) as server:
            await asyncio.wait_for(
                Runner(prepare_run(config("direct", server, tmp_path))).run(), DEADLINE
            )
        assert llm_path() == "litellm"
    finally:
        set_llm_path("auto")
