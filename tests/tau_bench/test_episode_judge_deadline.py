"""A τ³ episode whose NL judge is cut off by `--episode-timeout` is recorded as a failed
judge is: an unscored harness error that `--resume` runs again, whose record keeps what
was done and paid for (the trajectory, the agent's usage), and says that the episode's
deadline expired while judging. The judge's own spend is unknown, never $0.

The installed `tau`, against the fake OpenAI server answering as the agent's model (it
says it is done) and as a judge that never answers (until told to, for the resume).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_bench.fakes.nl_judge import all_met, expected_outcomes
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.suite.conftest import FIXTURE_PROMPTS

TAU = Path(sys.executable).parent / "tau"
MODEL = "openai/gpt-4o-mini"  # priced by litellm's local cost map
NL_TASK = "2"
"""A retail task scored with NL assertions: the judge is called for it."""


class Judge:
    """The agent's model says it is done; the judge hangs while `hangs`, else all met."""

    def __init__(self) -> None:
        self.hangs = True
        self.asked = threading.Event()

    async def __call__(self, request: ChatRequest) -> ChatReply:
        if not expected_outcomes(request):
            return ChatReply(text="Done.")
        self.asked.set()
        if self.hangs:
            await asyncio.Event().wait()  # no verdict, ever (the server's stop ends it)
        return all_met(request)


@pytest.fixture
def judge() -> Judge:
    return Judge()


@pytest.fixture
def server(judge: Judge) -> Iterator[OpenAIServer]:
    with OpenAIServer(judge) as running:
        yield running


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared τ³ data plus (fixture) prompts: what a judge and a τ³ agent need."""
    root = tmp_path_factory.mktemp("tau3data")
    for child in require_data().iterdir():
        (root / child.name).symlink_to(child)
    (root / "prompts").mkdir()
    for name, text in FIXTURE_PROMPTS.items():
        (root / "prompts" / f"{name}.txt").write_text(text, encoding="utf-8")
    return root


def tau(server: OpenAIServer, data_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(data_root),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-fake-judge-key-0123456789",
        "OPENAI_BASE_URL": server.base_url,  # the judge's endpoint
        "OPENAI_API_BASE": server.base_url,
    }
    return subprocess.run(
        [str(TAU), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


def episodes(log: Path) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("type") == "episode"]


def test_a_judge_cut_off_by_the_episode_deadline_keeps_the_trajectory_and_resumes(
    judge: Judge, server: OpenAIServer, data_root: Path, tmp_path: Path
) -> None:
    args = [
        "run", "--env", "tau3/retail", "--task-ids", NL_TASK,
        "--agent-strategy", "tau3-llm", "--model", MODEL, "--api-base", server.base_url,
        "--user-strategy", "scripted", "--judge-model", MODEL, "--episode-timeout", "8",
        "--log-dir", str(tmp_path), "--run-name", "judged", "--quiet",
    ]  # fmt: skip
    proc = tau(server, data_root, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "tau run --resume" in proc.stderr
    assert judge.asked.is_set()  # the conversation ended; the judge was asked
    (record,) = episodes(tmp_path / "judged.jsonl")

    # An unscored harness error that says what happened; `--resume` runs it again.
    assert record["reward"] is None and record["reward_info"] is None
    error = record["error"]
    assert error["class"] == "harness" and error["source"] == "judge" and error["retryable"]
    assert error["kind"] == "judge_timeout"
    assert error["message"].startswith("the episode deadline expired while judging")
    assert "8 s (--episode-timeout)" in error["message"]
    # ... with what was done and paid for.
    assert record["messages"] and record["turns"] and record["steps"] > 0
    assert record["agent_usage"]["calls"] >= 1 and record["cost"]["agent"] > 0
    assert record["judge_usage"]["model"] == MODEL
    assert record["cost"]["judge"] is None  # a call was under way: unknown, not $0

    judge.hangs = False
    resumed = tau(server, data_root, "run", "--resume", str(tmp_path / "judged.jsonl"), "--quiet")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    first, again = episodes(tmp_path / "judged.jsonl")
    assert first == record  # kept in the log; the new attempt is scored
    assert again["error"] is None and again["reward"] is not None and again["reward_info"]
