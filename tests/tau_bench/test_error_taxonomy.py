"""The error taxonomy end to end: a real loopback HTTP bot that answers garbage on one
task (agent failure: scored 0), never answers on another (agent unavailable: excluded,
shown under both conventions, re-run by --resume) and answers the third, driven by the
installed `tau` console script through the HTTP adapter."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI, Request

from tau_bench.error_classes import AGENT_FAILURE, AGENT_UNAVAILABLE, HARNESS, classify
from tau_bench.results_log import read_log
from tau_bench.toolserver import BackgroundServer

from ..conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "tau")
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


class FlakyBot:
    """Task 0: garbage. Task 1: no answer until released (or `modes` says otherwise).
    Task 2: a plain closing message."""

    def __init__(self) -> None:
        self.modes = {"0": "garbage", "1": "hang", "2": "ok"}
        self.seen: list[str] = []
        self.release = threading.Event()
        self.app = FastAPI()
        self.app.post("/chat")(self.chat)

    async def chat(self, request: Request) -> Any:
        body = await request.json()
        task = str(body["task"])
        self.seen.append(task)
        mode = self.modes[task]
        if mode == "garbage":
            return {"status": "ok", "payload": [1, 2, 3]}
        if mode == "hang":  # until the test ends: the adapter's read timeout fires first
            await asyncio.to_thread(self.release.wait, 60)
        return {"replies": ["Your request is done. Goodbye."]}


@pytest.fixture
def bot() -> Iterator[tuple[FlakyBot, str]]:
    flaky = FlakyBot()
    server = BackgroundServer(flaky.app)
    url = server.start()
    try:
        yield flaky, url
    finally:
        flaky.release.set()
        server.stop()


def tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=300
    )


def test_garbage_is_scored_zero_and_timeouts_are_reported_apart(
    bot: tuple[FlakyBot, str], tmp_path: Path
) -> None:
    flaky, url = bot
    config = {
        "name": "flaky bot",
        "base_url": url,
        "timeout": {"read": 0.5, "total": 5, "call": 10},
        "retry": {"max_attempts": 1},
        "message": {"path": "/chat", "body": {"task": "{{ task_id }}", "text": "{{ message }}"}},
        "response": {"messages": "replies"},
    }
    cfg = tmp_path / "bot.yaml"
    cfg.write_text(yaml.safe_dump(config))
    proc = tau("run", "--env", "airline", "--agent-strategy", "http", "--http-config", cfg,
               "--user-strategy", "scripted", "--task-ids", "0", "1", "2",
               "--log-dir", tmp_path / "out", "--quiet")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (log,) = (tmp_path / "out").glob("*.jsonl")
    assert log.name.startswith("http-flaky-bot-")  # the config's name is in the run name

    contents = read_log(log)
    records = {k[0]: r for k, r in contents.records.items()}
    assert records[0].error_class == AGENT_FAILURE and records[0].error["class"] == AGENT_FAILURE
    assert records[0].reward == 0.0 and not records[0].is_error  # scored, as a failure
    assert "does not match the response mapping" in records[0].error["message"]
    assert records[1].error_class == AGENT_UNAVAILABLE and records[1].is_error
    assert records[1].reward is None and "timed out" in records[1].error["message"]
    assert records[2].error is None
    assert contents.header["manifest"]["agent"]["name"] == "flaky bot"

    summary = json.loads(log.with_name(log.stem + ".summary.json").read_text())
    assert summary["error_classes"] == {HARNESS: 0, AGENT_FAILURE: 1, AGENT_UNAVAILABLE: 1}
    assert summary["errors"] == 1 and summary["episodes_scored"] == 2
    r2 = records[2].reward or 0.0
    assert summary["avg_reward"] == pytest.approx(r2 / 2)  # unavailable excluded
    alt = summary["unavailable_as_failures"]
    assert alt["avg_reward"] == pytest.approx(r2 / 3) and "counted as failures" in alt["convention"]
    assert "1 agent failure, 1 unavailable" in proc.stdout
    assert "unavailable as failures" in proc.stdout and "unavailable excluded" in proc.stdout

    # compare shows the classes and both conventions
    cmp = tau("compare", log, "--no-matrix")
    assert cmp.returncode == 0, cmp.stderr
    row = next(line for line in cmp.stdout.splitlines() if line.startswith("│ 1 "))
    assert "0/1/1" in row and "errors h/f/u" in cmp.stdout
    assert "unavailable counted as failures" in cmp.stdout and "unavailable excluded" in cmp.stdout

    # --resume re-runs the unavailable episode only; the agent failure is final
    flaky.modes["1"] = "ok"
    before = list(flaky.seen)
    again = tau("run", "--resume", log, "--quiet")
    assert again.returncode == 0, again.stderr
    assert set(flaky.seen[len(before) :]) == {"1"}
    after = {k[0]: r for k, r in read_log(log).records.items()}
    assert after[1].error is None and after[0].error_class == AGENT_FAILURE


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"source": "agent", "kind": "protocol_error", "retryable": False}, AGENT_FAILURE),
        ({"source": "agent", "kind": "adapter_error", "retryable": True}, AGENT_UNAVAILABLE),
        ({"source": "agent", "kind": "rate_limited", "retryable": True}, AGENT_UNAVAILABLE),
        ({"source": "agent", "kind": "ReadTimeout", "retryable": True}, AGENT_UNAVAILABLE),
        ({"source": "agent", "kind": "timeout"}, AGENT_UNAVAILABLE),
        ({"source": "agent", "kind": "adapter_error", "retryable": False}, AGENT_FAILURE),
        ({"source": "agent", "kind": "KeyError", "retryable": True}, HARNESS),
        ({"source": "agent", "kind": "auth_error", "retryable": False}, HARNESS),
        ({"source": "user", "kind": "llm_unavailable", "retryable": True}, HARNESS),
        ({"source": "judge", "kind": "protocol_error"}, HARNESS),
        ({"source": "unknown", "kind": "error"}, HARNESS),
        ({"source": "agent", "kind": "protocol_error", "class": HARNESS}, HARNESS),
    ],
)
def test_classification_rules(error: dict[str, Any], expected: str) -> None:
    assert classify(error) == expected
