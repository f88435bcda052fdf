"""The act and react agents when the model's `Action:` JSON is nested far too deep (a
recursion bomb): a parse error like any other - the reply goes to the user as text and
`parse_error` is recorded - never a crash of the episode.

The installed `tau`, its agent's model on the fake OpenAI server, the scripted user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.agents.act import parse_action
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
DEEP_LIST = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000
REPLIES = {
    "act": 'Action: {"name": "get_user_details", "arguments": {"user_id": ' + DEEP_LIST + "}}",
    "react": 'Thought: x Action: {"name": "a", "arguments": ' + DEEP_OBJECT + "}",
}


@pytest.mark.parametrize("strategy", ["act", "react"])
def test_deeply_nested_action_json_is_a_parse_error_sent_as_text(
    strategy: str, tmp_path: Path
) -> None:
    def deep(request: ChatRequest) -> ChatReply:
        return ChatReply(text=REPLIES[strategy])

    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-fake-agent-key-0123456789",
    }
    with OpenAIServer(deep) as server:
        args = [
            "run", "--env", "retail", "--task-ids", "0",
            "--agent-strategy", strategy, "--model", "openai/gpt-4o-mini",
            "--api-base", server.base_url, "--user-strategy", "scripted",
            "--max-steps", "3", "--log-dir", str(tmp_path), "--run-name", strategy, "--quiet",
        ]  # fmt: skip
        proc = subprocess.run(
            [str(TAU), *args], capture_output=True, text=True, env=env, timeout=600
        )
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stdout + proc.stderr
    lines = (tmp_path / f"{strategy}.jsonl").read_text().splitlines()
    (record,) = [r for r in map(json.loads, lines) if r.get("type") == "episode"]
    assert record["error"] is None, record["error"]
    agent_turns = [t for t in record["turns"] if t["role"] == "agent"]
    assert agent_turns
    assert all(
        t["extra"]["parse_error"] == "JSON nested deeper than 100 levels" for t in agent_turns
    )
    said = [m for m in record["messages"] if m["role"] == "assistant"]
    assert said and not any(m.get("tool_calls") for m in said)  # sent as text, no tool run


def test_an_action_nested_just_within_the_limit_still_parses() -> None:
    nested = "[" * 90 + "]" * 90
    action = parse_action('Action: {"name": "t", "arguments": {"x": ' + nested + "}}")
    assert action.name == "t" and action.error == ""
