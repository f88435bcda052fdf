"""`tau run` end to end against a real OpenAI-compatible server on 127.0.0.1.

Agent and user both point `--api-base` at the local server (as with vLLM); the server's
fake model plays airline task 13 and rate-limits the agent's first call once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_bench import llm
from tau_bench.cli import run_cmd
from tau_bench.fakes import OpenAIServer
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.agents.scenarios import TASK_ID, Task13


def test_tau_run_with_api_base(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-0000")
    monkeypatch.setattr(
        llm.config, "DEFAULT_RETRY", llm.RetryPolicy(initial_wait=0.0, max_wait=0.0, jitter=0.0)
    )
    scenario = Task13()
    limited: list[str] = []

    def brain(request: Request) -> Reply:
        if request.tools and not limited:
            limited.append(request.model)
            return Reply(status=429, headers={"Retry-After": "0"}, error="slow down")
        return scenario(request)

    fake = FakeLLM(brain=brain)
    with OpenAIServer(fake.respond) as server:
        base = server.base_url
        result = CliRunner().invoke(
            run_cmd.standalone_app(),
            [
                "--env", "airline",
                "--agent-strategy", "tool-calling",
                "--model", "openai/local-agent",
                "--api-base", base,
                "--user-model", "openai/local-user",
                "--user-api-base", base,
                "--task-ids", str(TASK_ID),
                "--num-trials", "2",
                "--max-concurrency", "2",
                "--provider-limit", "openai=1",
                "--data-dir", str(data_dir),
                "--log-dir", str(tmp_path),
                "--run-name", "e2e",
                "--quiet",
            ],
        )  # fmt: skip
    llm.set_provider_limits({})

    assert result.exit_code == 0, result.output
    assert not fake.failures
    assert {r.model for r in fake.requests} == {"local-agent", "local-user"}
    episodes = json.loads((tmp_path / "e2e.json").read_text())
    assert sorted(e["trial"] for e in episodes) == [0, 1]
    assert all(e["reward"] == 1.0 for e in episodes)
    for episode in episodes:
        calls = [c["function"]["name"] for m in episode["traj"] for c in m.get("tool_calls") or []]
        assert calls == ["get_user_details", "transfer_to_human_agents"]
    log = [json.loads(line) for line in (tmp_path / "e2e.jsonl").read_text().splitlines()]
    retried = [
        turn["extra"]["retries"]
        for line in log
        if line.get("type") == "episode"
        for turn in line["turns"]
        if "retries" in turn.get("extra", {})
    ]
    assert len(retried) == 1 and retried[0][0]["status"] == 429
