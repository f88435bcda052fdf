"""Pre-flight imports the model stack before any check's deadline starts.

Imported by the first model call instead, litellm held the shared event loop for
seconds (13-21 s on a 2-core machine) while the other checks' deadlines ran, and a
healthy HTTP bot was reported unreachable. Observed by order, not by time: the agent's
own pre-flight check (an installed adapter's `preflight()`) fails if it starts before
litellm is imported; `tau run` (the console script, as users meet it) must pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.fakes.openai_server import ChatReply, OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import adapter_plugin

TAU = str(Path(sys.executable).parent / "tau")

ADAPTER = """
import sys
from tau_adapters.protocol import AgentTurn
from tau_adapters.registry import SimpleProvider


class Agent:
    async def start(self, session):
        pass

    async def send(self, turn):
        return AgentTurn(messages=["bye"], end_conversation=True)

    async def close(self):
        pass


class Provider(SimpleProvider):
    async def preflight(self):
        if "litellm" not in sys.modules:
            raise RuntimeError("checked while the model stack was still to be imported")


def build(options):
    return Provider(Agent)
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package on PYTHONPATH registering `ordered` in the `tau_adapters` group."""
    return adapter_plugin(tmp_path_factory.mktemp("plugin"), "ordered", ADAPTER)


def test_checks_start_after_the_model_stack_is_imported(plugin: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(plugin),
        "TAU_BENCH_DATA": str(DATA_DIR),
        "OPENAI_API_KEY": "sk-fake-preflight",
    }
    with OpenAIServer(lambda request: ChatReply(text="OK")) as server:
        proc = subprocess.run(
            [
                TAU,
                "run",
                "--env",
                "airline",
                "--agent-strategy",
                "ordered",
                "--user-strategy",
                "llm",
                "--user-model",
                "openai/gpt-4o",
                "--user-api-base",
                server.base_url,
                "--task-ids",
                "13",
                "--log-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
    assert "pre-flight failed" not in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.glob("*.jsonl")), proc.stderr[-2000:]
