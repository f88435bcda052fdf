"""End to end over real sockets: adapter -> reference A2A agent (oracle brain) -> local DB.

Every test-split task of airline and retail must reach reward 1.0, with the client-tools
extension over SSE and with the τ³ text convention; the agent learns its task only from
the first message's metadata.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.a2a.adapter import A2AProvider
from adapters.a2a.harness.server import LoopbackServer
from tau_bench.domains import load_domain
from tau_bench.episode import ScoredEpisode, run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for, reference_app

CONCURRENCY = 8


async def play_all(provider: A2AProvider, env: str, ids: list[int] | None = None) -> list[Any]:
    domain = load_domain(env, DATA_DIR)
    tasks = domain.tasks("test")
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> ScoredEpisode:
        async with gate:
            return await run_task(domain, tasks[i], i, provider.new_adapter(), ScriptedUser())

    return list(await asyncio.gather(*(one(i) for i in (ids or range(len(tasks))))))


def failures(episodes: list[ScoredEpisode]) -> list[Any]:
    return [
        (e.task_id, e.result.error, e.reward_value)
        for e in episodes
        if e.result.error is not None or e.reward_value != 1.0
    ]


@pytest.mark.parametrize("env", ["airline", "retail"])
@pytest.mark.parametrize("mode", ["extension", "text"])
async def test_every_test_task_scores_one(reference_url: str, env: str, mode: str) -> None:
    provider = provider_for(reference_url, tool_mode=mode)
    started = time.perf_counter()
    try:
        await provider.preflight()
        episodes = await play_all(provider, env)
    finally:
        await provider.aclose()
    assert len(episodes) == {"airline": 50, "retail": 115}[env]
    assert failures(episodes) == []
    assert time.perf_counter() - started < 120  # a few seconds on an idle machine


async def test_trajectory_records_context_task_and_the_wire(reference_url: str) -> None:
    provider = provider_for(reference_url)
    try:
        (episode,) = await play_all(provider, "airline", [0])
    finally:
        await provider.aclose()
    turns = [t for t in episode.result.turns if t.role == "agent"]
    contexts = {t.extra["context_id"] for t in turns}
    assert len(contexts) == 1  # one context per episode
    assert {t.extra["task_state"] for t in turns} == {"input-required"}
    assert len({t.extra["task_id"] for t in turns}) == 1  # the task continues
    first = turns[0].raw[0]["request"]
    assert first["metadata"] == {"env": "airline", "task_id": "0", "task_split": "test"}
    kinds = [p.get("data", {}).get("type") for p in first["parts"]]
    assert kinds == [None, "tool_schemas"] and first["extensions"]
    second = turns[1].raw[0]["request"]
    assert "metadata" not in second and second["taskId"] == turns[0].extra["task_id"]
    assert second["parts"][0]["data"]["type"] == "tool_result"
    # Payment amounts travel as doubles; they are ints again when they reach the DB.
    booking = next(a for a in episode.env.actions if a.name == "book_reservation")
    assert all(type(p["amount"]) is int for p in booking.kwargs["payment_methods"])
    assert episode.reward_value == 1.0


@pytest.mark.parametrize("auth", ["bearer", "api_key"])
async def test_card_auth_schemes_are_filled_from_options(serve: Any, auth: str) -> None:
    url = serve(lambda u: reference_app(u, auth=auth, secret="s3cret-value", streaming=False))  # type: ignore[arg-type]
    option = {"bearer": "bearer_token", "api_key": "api_key"}[auth]
    provider = provider_for(url, **{option: "s3cret-value"})
    try:
        await provider.preflight()
        episodes = await play_all(provider, "retail", [0, 1])
    finally:
        await provider.aclose()
    assert failures(episodes) == []
    text = repr([t.raw for e in episodes for t in e.result.turns])
    assert "s3cret-value" not in text


async def test_non_streaming_agent(serve: Any) -> None:
    url = serve(lambda u: reference_app(u, streaming=False))
    provider = provider_for(url)
    try:
        episodes = await play_all(provider, "airline", [1, 2, 3])
    finally:
        await provider.aclose()
    assert failures(episodes) == []


def test_server_reports_its_real_port() -> None:
    with LoopbackServer(reference_app) as server:
        assert not server.url.endswith(":0")


async def test_the_sdks_double_close_warning_is_not_printed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """a2a-sdk 1.3.0 closes a finished task's event queue twice and warns on the second
    close, once per episode of a run: ~180 identical lines in `make demo`'s output about
    nothing that went wrong. The run here is `make demo`'s A2A target, three tasks."""
    from adapters.a2a.harness.demo import demo
    from tau_bench.config import RunConfig
    from tau_bench.runner import run

    with caplog.at_level(logging.WARNING):
        async with demo.serve(tmp_path) as options:
            config = RunConfig(
                env="airline",
                agent_strategy="a2a",
                user_strategy="scripted",
                task_ids=[0, 1, 2],
                max_concurrency=3,
                log_dir=str(tmp_path),
                data_dir=str(DATA_DIR),
                agent_options=options,
                quiet=True,
            )
            outcome = await run(config)
    assert outcome.summary["episodes_done"] == 3 and outcome.summary["avg_reward"] == 1.0
    assert [r.getMessage() for r in caplog.records if r.name.startswith("a2a.")] == []
