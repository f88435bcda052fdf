"""`tau run` with an installed adapter that misbehaves (the console script, as users meet
it): the run goes on, every episode is recorded, and the log stays readable by
`tau run --resume`, `tau view` and `tau compare`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import adapter_plugin

TAU = str(Path(sys.executable).parent / "tau")

ADAPTER = """
import asyncio, math, os
from tau_adapters.protocol import AgentTurn, Usage
from tau_adapters.registry import SimpleProvider

MODE = os.environ.get("MISBEHAVE_MODE", "")


class Agent:
    async def start(self, session):
        self.task_id = session.task_id

    async def send(self, turn):
        if MODE == "surrogate" and self.task_id == 12:
            return AgentTurn(messages=["ok \\ud800 lone"], end_conversation=True)
        if MODE == "usage_nan":
            return AgentTurn(messages=["ok"], usage=Usage(prompt_tokens=-5, cost=math.nan))
        if MODE == "usage_inf":
            return AgentTurn(messages=["ok"], usage=Usage(cost=math.inf), end_conversation=True)
        if MODE == "none":
            return None
        return AgentTurn(messages=["bye"], end_conversation=True)

    async def close(self):
        if MODE == "close_hang":
            await asyncio.Event().wait()


def build(options):
    return SimpleProvider(Agent)
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package on PYTHONPATH registering `misbehave` in the `tau_adapters` group."""
    return adapter_plugin(tmp_path_factory.mktemp("plugin"), "misbehave", ADAPTER)


def _tau(plugin: Path, *args: str, mode: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(plugin),
        "TAU_BENCH_DATA": str(DATA_DIR),
        "MISBEHAVE_MODE": mode,
    }
    return subprocess.run(
        [TAU, *args], capture_output=True, text=True, timeout=180, env=env, check=False
    )


def _run(plugin: Path, log_dir: Path, mode: str, *extra: str) -> Path:
    proc = _tau(
        plugin,
        "run",
        "--env",
        "airline",
        "--agent-strategy",
        "misbehave",
        "--user-strategy",
        "scripted",
        "--log-dir",
        str(log_dir),
        *extra,
        mode=mode,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr[-2000:]
    [log] = log_dir.glob("*.jsonl")
    return log


def _episodes(log: Path) -> list[dict[str, Any]]:
    def refuse(token: str) -> float:
        raise AssertionError(f"bare {token} in {log}")

    lines = [json.loads(line, parse_constant=refuse) for line in log.read_bytes().splitlines()]
    return [line for line in lines if line.get("type") == "episode"]


def test_a_lone_surrogate_in_one_reply_does_not_stop_the_run(plugin: Path, tmp_path: Path) -> None:
    ids = ["--task-ids", "10", "11", "12", "13", "--max-concurrency", "1"]
    log = _run(plugin, tmp_path, "surrogate", *ids)
    episodes = {e["task_id"]: e for e in _episodes(log)}
    assert sorted(episodes) == [10, 11, 12, 13]
    said = [m["content"] for m in episodes[12]["messages"] if m["role"] == "assistant"]
    assert said == ["ok \ufffd lone"]


def test_unusable_usage_leaves_a_log_that_resumes_views_and_compares(
    plugin: Path, tmp_path: Path
) -> None:
    nan_log = _run(plugin, tmp_path / "nan", "usage_nan", "--task-ids", "13")
    inf_log = _run(plugin, tmp_path / "inf", "usage_inf", "--task-ids", "13")
    [nan_episode] = _episodes(nan_log)
    assert nan_episode["error"] is None
    assert (
        nan_episode["agent_usage"]["cost"] == 0 and nan_episode["agent_usage"]["prompt_tokens"] == 0
    )
    assert any("cost=nan" in w for w in nan_episode["warnings"])
    for args in (
        ("run", "--resume", str(nan_log)),
        ("view", str(nan_log)),
        ("compare", str(nan_log), str(inf_log)),
    ):
        proc = _tau(plugin, *args)
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        assert "expected a finite number" not in proc.stdout + proc.stderr


def test_a_malformed_turn_is_recorded_as_the_agents_protocol_error(
    plugin: Path, tmp_path: Path
) -> None:
    [episode] = _episodes(_run(plugin, tmp_path, "none", "--task-ids", "13"))
    error = episode["error"]
    assert (error["source"], error["kind"]) == ("agent", "protocol_error")
    assert "send returned NoneType, expected AgentTurn" in error["message"]


def test_a_close_that_hangs_keeps_the_finished_episode(plugin: Path, tmp_path: Path) -> None:
    timeouts = ["--turn-timeout", "2", "--episode-timeout", "20"]
    [episode] = _episodes(_run(plugin, tmp_path, "close_hang", "--task-ids", "13", *timeouts))
    assert episode["error"] is None and episode["reward"] is not None
    assert any("agent close" in w for w in episode["warnings"]), episode["warnings"]
