"""A τ³ episode whose NL judge fails stays an error (unscored, re-run by `--resume`), but
its record keeps what was done and paid for: the trajectory, the agent's usage and the
failed judge calls' usage, all in the cost.

The installed `tau`, against the fake OpenAI server answering as the agent's model (it
says it is done) and as a judge that answers prose, never a verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau_bench.fakes.nl_judge import expected_outcomes
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.suite.conftest import FIXTURE_PROMPTS

TAU = Path(sys.executable).parent / "tau"
MODEL = "openai/gpt-4o-mini"  # priced by litellm's local cost map
NL_TASK = "2"
"""A retail task scored with NL assertions: the judge is called for it."""


def prose_judge(request: ChatRequest) -> ChatReply:
    """The judge answers prose (no verdict); the agent's model says it is done."""
    if expected_outcomes(request):
        return ChatReply(text="All expectations are met. Great job.")
    return ChatReply(text="Done.")


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(prose_judge) as running:
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


def test_a_failed_judge_keeps_the_trajectory_and_the_usage_in_the_error_record(
    server: OpenAIServer, data_root: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(data_root),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-fake-judge-key-0123456789",
        "OPENAI_BASE_URL": server.base_url,  # the judge's endpoint
        "OPENAI_API_BASE": server.base_url,
    }
    args = [
        "run", "--env", "tau3/retail", "--task-ids", NL_TASK,
        "--agent-strategy", "tau3-llm", "--model", MODEL, "--api-base", server.base_url,
        "--user-strategy", "scripted", "--judge-model", MODEL,
        "--log-dir", str(tmp_path), "--run-name", "judged", "--quiet",
    ]  # fmt: skip
    proc = subprocess.run([str(TAU), *args], capture_output=True, text=True, env=env, timeout=600)
    # A run with an episode in error exits 1 and says how to re-run it.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "tau run --resume" in proc.stderr
    lines = (tmp_path / "judged.jsonl").read_text().splitlines()
    (record,) = [r for r in map(json.loads, lines) if r.get("type") == "episode"]

    # Still an error, never a reward: `--resume` runs it again.
    assert record["reward"] is None and record["reward_info"] is None
    assert record["error"]["class"] == "harness" and record["error"]["source"] == "judge"
    assert record["error"]["kind"] == "judge_error" and record["error"]["retryable"]
    assert "no usable verdict" in record["error"]["message"]
    # ... but what was done and paid for is kept.
    assert record["messages"] and record["turns"] and record["steps"] > 0
    assert record["agent_usage"]["calls"] >= 1
    judge = record["judge_usage"]
    assert judge["model"] == MODEL and judge["calls"] == 3  # asked again, then given up
    assert record["cost"]["judge"] > 0 and record["cost"]["agent"] > 0
