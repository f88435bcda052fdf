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


TOKEN = "tok-cli-QWERTY987"
BEARER = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J"


def _check(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`tau a2a check --url URL --bearer-token TOKEN --probe ARGS` as users run it."""
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "PYTHONPATH": str(ROOT)}
    command = [TAU, "a2a", "check", "--url", url, "--bearer-token", TOKEN, "--probe", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def test_check_masks_echoed_secrets_and_escapes_control_characters(serve: Any) -> None:
    from .peers import Peer, task

    said = {"text": f"I got your token: Bearer {TOKEN} {ESCAPES}"}
    call = {"data": {"type": "tool_call", "id": "c1", "name": f"find{ESCAPES}", "arguments": {}}}
    peer = Peer(
        [task("TASK_STATE_INPUT_REQUIRED", [said, call])], security=BEARER, name=f"evil{ESCAPES}"
    )
    out = _check(serve(peer.app))
    assert out.returncode == 0, out.stderr
    assert peer.headers[0]["authorization"] == f"Bearer {TOKEN}"
    assert "name: evil\\x1b]0;PWNED\\x07\\x1b[2J" in out.stdout
    assert "message: I got your token: Bearer *** \\x1b]0;PWNED" in out.stdout
    assert "tool call: find\\x1b]0;PWNED" in out.stdout
    assert "\x1b" not in out.stdout + out.stderr and "\x07" not in out.stdout + out.stderr
    assert TOKEN not in out.stdout + out.stderr


def test_check_of_a_failed_task_echoing_the_token_is_one_masked_line(serve: Any) -> None:
    from .peers import Peer, task

    peer = Peer(
        [task("TASK_STATE_FAILED", [{"text": f"failed; token {TOKEN} {ESCAPES}"}])],
        security=BEARER,
    )
    out = _check(serve(peer.app))
    assert out.returncode == 2 and out.stdout.count("\n") > 3  # the card was shown
    assert out.stderr.startswith("error: a2a: the agent's task ended failed: failed; token ***")
    assert out.stderr.count("\n") == 1 and "\x1b" not in out.stderr
    assert TOKEN not in out.stdout + out.stderr


def test_check_of_a_503_with_an_unreadable_retry_after_is_one_line(serve: Any) -> None:
    from .peers import Http, Peer

    peer = Peer([Http(503, {}, {"Retry-After": "soon"})])
    out = _check(serve(peer.app))
    assert out.returncode == 2, out.stderr
    assert out.stderr == "error: a2a: message: HTTP 503 Service Unavailable\n"


def test_check_of_a_card_beyond_the_bound_is_one_line(serve: Any) -> None:
    from .peers import Peer

    url = serve(Peer([], pad_card=5 * 1024 * 1024).app)
    result = CliRunner().invoke(app, ["check", "--url", url])
    assert isinstance(result.exception, UserError)
    assert "larger than the 4194304 bytes allowed (max_response_bytes)" in str(result.exception)
