"""An adapter's close is held to the turn deadline, not the episode's: a close that never
returns, or that outlives what is left of `--episode-timeout`, is a warning on a finished
episode, not an agent timeout of the whole episode."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau_adapters.loop import run_episode
from tau_adapters.protocol import (
    STOP_TOKEN,
    AdapterTimeoutError,
    AgentTurn,
    SessionContext,
    ToolOutput,
    Usage,
)
from tau_bench.runner.deadlines import (
    EpisodeDeadline,
    EpisodeTimeoutError,
    episode_deadline,
    with_turn_deadline,
)
from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import adapter_plugin

TAU = str(Path(sys.executable).parent / "tau")


class CloseHangs:
    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn: Any) -> AgentTurn:
        return AgentTurn(messages=["done"], end_conversation=True)

    async def close(self) -> None:
        await asyncio.Event().wait()


class NoTools:
    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        return ToolOutput("none", is_error=True)

    def is_terminate(self, name: str) -> bool:
        return False

    def respond(self, content: str) -> None:
        pass


class User:
    async def start(self, instruction: str) -> str:
        return "hi"

    async def reply(self, agent_message: str) -> str:
        return STOP_TOKEN

    @property
    def usage(self) -> Usage:
        return Usage()


SESSION = SessionContext(session_id="s", domain="d", tools=[])


async def test_a_close_that_never_returns_times_out_at_the_turn_deadline() -> None:
    adapter = with_turn_deadline(CloseHangs(), 0.05)
    with pytest.raises(AdapterTimeoutError, match="agent close"):
        async with asyncio.timeout(10):  # the test's own bound, were close not held to one
            await adapter.close()


async def test_the_finished_episode_is_kept_with_a_warning() -> None:
    adapter = with_turn_deadline(CloseHangs(), 0.05)
    result = await episode_deadline(run_episode(adapter, NoTools(), User(), SESSION, "go"), 5)
    assert result.error is None
    assert result.stop_reason == "agent_end"
    assert len(result.warnings) == 1 and "agent close" in result.warnings[0]


# -- the episode deadline: a close does not count against it -----------------------------


async def test_a_close_past_the_episode_deadline_is_a_warning_not_the_episodes_timeout() -> None:
    deadline = EpisodeDeadline(0.2)
    adapter = with_turn_deadline(CloseHangs(), 1.0, deadline)
    async with asyncio.timeout(30):  # the test's own bound
        result = await deadline.run(run_episode(adapter, NoTools(), User(), SESSION, "go"))
    assert result.error is None and result.stop_reason == "agent_end"
    assert len(result.warnings) == 1 and "--turn-timeout" in result.warnings[0]
    [late] = deadline.warnings
    assert late.startswith("agent close: took ") and "(--episode-timeout 0.2)" in late


async def test_the_deadline_goes_on_after_a_pause_with_the_time_it_had_left() -> None:
    deadline = EpisodeDeadline(0.2)
    ended = asyncio.Event()

    async def episode() -> None:
        with deadline.paused():  # a slow close: 0.4 s, more than the episode has
            loop = asyncio.get_running_loop()
            loop.call_later(0.4, ended.set)
            await ended.wait()
        assert deadline.warnings  # it outlived the time left, and was not cut off
        await asyncio.Event().wait()  # the scoring hangs: the deadline still ends it

    async with asyncio.timeout(30):
        with pytest.raises(EpisodeTimeoutError, match="--episode-timeout"):
            await deadline.run(episode())


async def test_nothing_is_paused_once_the_deadline_expired() -> None:
    deadline = EpisodeDeadline(0.05)
    closed = asyncio.Event()

    async def episode() -> None:
        try:
            await asyncio.Event().wait()
        finally:  # a close on the way out of an expired episode
            with deadline.paused():
                closed.set()

    with pytest.raises(EpisodeTimeoutError):
        async with asyncio.timeout(30):
            await deadline.run(episode())
    assert closed.is_set() and not deadline.warnings


# -- `tau run`, as users meet it ---------------------------------------------------------

SLOW_CLOSE = """
import asyncio
from tau_adapters.protocol import AgentTurn
from tau_adapters.registry import SimpleProvider


class Agent:
    async def start(self, session):
        pass

    async def send(self, turn):
        return AgentTurn(messages=["done"], end_conversation=True)

    async def close(self):
        await asyncio.Event().wait()  # never returns


def build(options):
    return SimpleProvider(Agent)
"""


def test_tau_run_keeps_the_reward_of_an_episode_whose_close_outlives_its_deadline(
    tmp_path: Path,
) -> None:
    site = adapter_plugin(tmp_path, "slow-close", SLOW_CLOSE)
    args = [
        "run", "--env", "airline", "--agent-strategy", "slow-close",
        "--user-strategy", "scripted", "--task-ids", "13", "--data-dir", str(DATA_DIR),
        "--turn-timeout", "4", "--episode-timeout", "2",
        "--log-dir", str(tmp_path / "out"), "--run-name", "r", "--quiet",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site), "TAU_BENCH_DATA": str(DATA_DIR)}
    proc = subprocess.run([TAU, *args], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (tmp_path / "out" / "r.jsonl").read_text().splitlines()
    [record] = [r for r in map(json.loads, lines) if r.get("type") == "episode"]
    assert record["error"] is None and record["reward"] == 1.0  # scored, kept
    assert record["messages"]
    close, late = record["warnings"]
    assert "agent close: not finished within 4 s (--turn-timeout)" in close
    assert late.startswith("agent close: took ") and "(--episode-timeout 2)" in late
