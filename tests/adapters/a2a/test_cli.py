"""`tau a2a serve-agent` and `tau a2a check`: typer app in-process, and as a subprocess."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from adapters.a2a.harness.cli import app
from tau_bench.cli.errors import UserError

from ...conftest import DATA_DIR

ROOT = Path(__file__).resolve().parents[3]
TAU = str(ROOT / ".venv" / "bin" / "tau")  # the installed console script (`tau a2a ...`)


def test_check_shows_the_card_and_a_probe(reference_url: str) -> None:
    result = CliRunner().invoke(app, ["check", "--url", reference_url, "--probe", "--task-id", "0"])
    assert result.exit_code == 0, result.output
    assert "client-tools extension: yes" in result.output
    assert "task state: input-required" in result.output
    assert "tool call: find_user_id_by_" in result.output


def test_check_of_an_unreachable_agent_is_one_line() -> None:
    result = CliRunner().invoke(app, ["check", "--url", "http://127.0.0.1:9", "--timeout", "2"])
    assert isinstance(result.exception, UserError)
    assert "cannot connect" in str(result.exception) and "\n" not in str(result.exception)


def test_serve_agent_rejects_bad_auth() -> None:
    result = CliRunner().invoke(app, ["serve-agent", "--auth", "magic"])
    assert isinstance(result.exception, UserError)
    result = CliRunner().invoke(app, ["serve-agent", "--auth", "bearer"], env={})
    assert "needs --secret" in str(result.exception)


def _read_line(stream: Any, timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


def test_tau_a2a_serve_agent_and_check_as_processes() -> None:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [TAU, "a2a", "serve-agent", "--env", "airline", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        line = _read_line(server.stdout, 60)
        assert line.startswith("A2A agent listening on http://127.0.0.1:"), line
        url = line.rsplit(" ", 1)[1].strip()
        assert not url.endswith(":0")
        probe = [TAU, "a2a", "check", "--url", url, "--probe", "--env", "airline"]
        check = subprocess.run(
            probe,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env=env,
        )
        # Without a task id the oracle brain refuses: a failed task, reported in one line.
        assert check.returncode == 2
        assert check.stderr.startswith("error: a2a: the agent's task ended failed: no task_id")
        assert check.stderr.count("\n") == 1  # one line, no traceback
        check = subprocess.run(
            [*probe, "--task-id", "13"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env=env,
        )
        assert check.returncode == 0, check.stderr
        assert "tool call: transfer_to_human_agents" in check.stdout
    finally:
        server.terminate()
        server.wait(10)
