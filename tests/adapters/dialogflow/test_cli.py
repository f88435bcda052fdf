"""`tau dialogflow ...` commands: provision (dry run, idempotent), check, emulate."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from adapters.dialogflow.harness.cli import app
from adapters.dialogflow.harness.emulator import Emulator
from tau_bench.domains import load_domain
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for

AGENT = ["--agent-id", "agent-1", "--project-id", "proj"]


def test_provision_dry_run_then_apply_then_nothing(threaded_emulator: Emulator) -> None:
    runner = CliRunner()
    base = ["provision", "--env", "airline", *AGENT, "--emulator", threaded_emulator.address]
    dry = runner.invoke(app, [*base, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert plan["dry_run"] and len(plan["changes"]) == 15  # 14 tools + the start playbook
    assert "would change 15" in dry.stderr
    assert threaded_emulator.calls["CreateTool"] == 0

    applied = runner.invoke(app, base)
    assert applied.exit_code == 0, applied.output
    assert "changed 15, unchanged 0" in applied.stderr
    again = runner.invoke(app, base)
    assert again.exit_code == 0 and "changed 0, unchanged 15" in again.stderr


def test_check_lists_tools_and_says_hello(threaded_emulator: Emulator) -> None:
    runner = CliRunner()
    args = ["check", *AGENT, "--emulator", threaded_emulator.address]
    out = runner.invoke(
        app,
        [
            *args,
            "--say",
            "hello",
            "--session-param",
            "task_id=13",
            "--session-param",
            "env=airline",
        ],
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["agent"] == "projects/proj/locations/global/agents/agent-1"
    assert result["function_tools"] == {}  # this emulator starts without tools
    assert result["reply"]["tool_calls"][0]["name"] == "transfer_to_human_agents"


def test_user_errors_are_one_line() -> None:
    runner = CliRunner()
    out = runner.invoke(
        app, ["provision", "--env", "airline", "--project-id", "p", "--emulator", "127.0.0.1:1"]
    )
    assert out.exit_code == 2
    assert out.stderr.strip().splitlines() == [
        "error: dialogflow: missing agent id: pass --agent-id (the agent's id or its full name "
        "projects/P/locations/L/agents/A)"
    ]
    bad = runner.invoke(app, ["emulate", "--brain", "no-such-brain", "--port", "0"])
    assert bad.exit_code == 2 and "unknown agent strategy 'no-such-brain'" in bad.stderr
    fault = runner.invoke(app, ["emulate", "--fail", "explode:2", "--port", "0"])
    assert fault.exit_code == 2 and "unknown status code 'explode'" in fault.stderr


async def test_emulate_command_serves_until_terminated() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tau_bench.cli.app",
            "dialogflow",
            "emulate",
            "--port",
            "0",
            "--env",
            "airline",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"on (127\.0\.0\.1:\d+)", line)
        assert match, line
        provider = provider_for(match.group(1))
        domain = load_domain("airline", DATA_DIR)
        try:
            episode = await run_task(
                domain, domain.tasks("test")[13], 13, provider.new_adapter(), ScriptedUser()
            )
        finally:
            await provider.aclose()
        assert episode.reward_value == 1.0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "emulator stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_run_py_decibel_against_the_emulator(tmp_path: Path, threaded_emulator: Emulator) -> None:
    # The headline command, rehearsed offline: the oracle brain answers for the agent.
    # This emulator starts without tools; provision them first, as a user would.
    runner = CliRunner()
    base = ["--env", "airline", *AGENT, "--emulator", threaded_emulator.address]
    assert runner.invoke(app, ["provision", *base]).exit_code == 0
    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    )
    done = subprocess.run(
        [
            sys.executable,
            os.path.join(root, "run.py"),
            "--agent-strategy",
            "decibel",
            *base,
            "--user-strategy",
            "scripted",
            "--task-ids",
            "0",
            "3",
            "13",
            "--log-dir",
            str(tmp_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    (summary_file,) = tmp_path.glob("*.summary.json")
    summary = json.loads(summary_file.read_text())
    assert summary["episodes_scored"] == 3 and summary["avg_reward"] == 1.0
    assert threaded_emulator.calls["DetectIntent"] >= 6
