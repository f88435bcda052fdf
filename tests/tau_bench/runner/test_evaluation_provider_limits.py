"""`--provider-limit` in `tau eval` holds for the whole eval, on both backends: its user
models' runs go on at once against the same agent and providers, so `openai=1` is one
model call at a time in all of them together, and a limit named after the agent
strategy (`tool-calling=1`) one live episode in all of them, not one per user model.

The models (agent and users) are the fake OpenAI server in this process, counting the
requests it holds at once; an episode's calls are sequential, so one live episode is at
most one request at a time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.config import eval_config_from_mapping
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tau_bench.runner import prepare_eval, run_eval
from tests.conftest import DATA_DIR

TASKS = 3


class Counting:
    """The scripted model, holding each request 50 ms and noting the most held at once."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    async def __call__(self, request: ChatRequest) -> ChatReply:
        self.live += 1
        self.peak = max(self.peak, self.live)
        try:
            await asyncio.sleep(0.05)  # the model's time, during which the slot is held
            return scripted_model(request)
        finally:
            self.live -= 1


@pytest.mark.parametrize("backend", [{}, {"workers": 2}], ids=["local", "ray"])
@pytest.mark.parametrize("limit", ["openai", "tool-calling"])
async def test_a_provider_limit_holds_for_the_whole_eval(
    tmp_path: Path, backend: dict[str, Any], limit: str
) -> None:
    model = Counting()
    with OpenAIServer(model, latency=0.0) as server:
        cfg = eval_config_from_mapping(
            {
                "name": "capped",
                "env": "airline",
                "agent-strategy": "tool-calling",
                "model": "openai/gpt-4o-mini",
                "api-base": server.base_url,
                "user-strategy": "llm",
                "user-api-base": server.base_url,
                "user-models": ["openai/user-a", "openai/user-b"],
                "task-ids": f"0-{TASKS - 1}",
                "max-concurrency": 8,
                "provider-limit": {limit: 1},
                "skip-preflight": True,  # its one call per model and run is not capped
                "data-dir": str(DATA_DIR),
                "log-dir": str(tmp_path),
                **backend,
            }
        )
        outcome = await run_eval(cfg, prepare_eval(cfg))
    runs = outcome.outcomes.values()
    assert [len(run.records) for run in runs] == [TASKS, TASKS]
    assert all(run.summary["errors"] == 0 for run in runs)
    assert model.peak == 1  # a cap per run would let the two runs' calls overlap
