"""An adapter that swallows its cancellation (`except CancelledError: pass` in a loop)
neither holds a run past its deadlines nor survives Ctrl-C: `tau run` (the console
script, as users meet it) records the episode as the agent's timeout and ends.

The subprocess timeouts are the tests' own bounds: without the fix the run never ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import adapter_plugin

TAU = str(Path(sys.executable).parent / "tau")

ADAPTER = """
import asyncio, sys
from tau_adapters.protocol import AgentTurn
from tau_adapters.registry import SimpleProvider


class Agent:
    async def start(self, session):
        pass

    async def send(self, turn):
        print("SEND STARTED", file=sys.stderr, flush=True)
        while True:
            try:
                await asyncio.sleep(1000)
            except asyncio.CancelledError:
                pass

    async def close(self):
        pass


def build(options):
    return SimpleProvider(Agent)
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package on PYTHONPATH registering `swallow` in the `tau_adapters` group."""
    return adapter_plugin(tmp_path_factory.mktemp("plugin"), "swallow", ADAPTER)


def _command(log_dir: Path, *extra: str) -> list[str]:
    return [
        TAU,
        "run",
        "--env",
        "airline",
        "--agent-strategy",
        "swallow",
        "--user-strategy",
        "scripted",
        "--task-ids",
        "13",
        "--log-dir",
        str(log_dir),
        *extra,
    ]


def _env(plugin: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(plugin), "TAU_BENCH_DATA": str(DATA_DIR)}


def _episodes(log_dir: Path) -> list[dict[str, Any]]:
    [log] = log_dir.glob("*.jsonl")
    lines = [json.loads(line) for line in log.read_bytes().splitlines()]
    return [line for line in lines if line.get("type") == "episode"]


def test_a_reply_that_swallows_cancellation_is_an_agent_timeout(
    plugin: Path, tmp_path: Path
) -> None:
    timeouts = ["--turn-timeout", "0.5", "--episode-timeout", "600"]
    proc = subprocess.run(
        _command(tmp_path, *timeouts),
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(plugin),
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]  # 1: an episode failed with an error
    assert "Traceback" not in proc.stderr
    [episode] = _episodes(tmp_path)
    assert episode["error"]["kind"] == "agent_timeout"
    assert "--turn-timeout" in episode["error"]["message"]
    assert "ignored cancellation" in episode["error"]["message"]


def _wait_for_line(stream: Any, text: str) -> None:
    """Read `stream` until a line holding `text` (then keep draining it, so the child
    never blocks on a full pipe)."""
    for line in stream:
        if text in line:
            break
    threading.Thread(target=stream.read, daemon=True).start()


def test_ctrl_c_ends_a_run_whose_adapter_swallows_cancellation(
    plugin: Path, tmp_path: Path
) -> None:
    timeouts = ["--turn-timeout", "600", "--episode-timeout", "600"]
    proc = subprocess.Popen(
        _command(tmp_path, *timeouts),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(plugin),
    )
    try:
        assert proc.stderr is not None
        reader = threading.Thread(
            target=_wait_for_line, args=(proc.stderr, "SEND STARTED"), daemon=True
        )
        reader.start()
        reader.join(120)
        assert not reader.is_alive(), "the adapter's send never started"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    summaries = list(tmp_path.glob("*summary*.json"))
    assert summaries, sorted(p.name for p in tmp_path.iterdir())
    assert json.loads(summaries[0].read_text())["interrupted"] is True
