"""`tau serve`: flag checks, the Docker image's entry command, and a real uvicorn."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from tau_bench.cli.app import app as tau_app
from tau_bench.service import server
from tau_bench.service.api import create_app
from tau_bench.service.settings import ServiceSettings
from tests.conftest import DATA_DIR
from tests.tau_bench.service.conftest import AUTH, ORACLE, TOKEN, WAIT, Gate, make_settings

ROOT = Path(__file__).resolve().parents[3]
TAU = Path(sys.executable).parent / "tau"


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Run `tau serve ...` in-process with the serving captured instead of done (the
    socket it would serve on is bound, then closed)."""
    served: list[tuple[Any, dict[str, Any]]] = []

    def capture(app: Any, sock: socket.socket, log_level: str, graceful: float) -> None:
        served.append((app, {"address": sock.getsockname()[:2], "log_level": log_level}))
        sock.close()

    monkeypatch.setattr(server, "serve", capture)
    monkeypatch.delenv("TAU_SERVE_TOKEN", raising=False)
    monkeypatch.setenv("TAU_SERVE_STATE_DIR", str(tmp_path / "state"))

    def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
        result: Any = CliRunner().invoke(tau_app, ["serve", *args], env=env)
        result.served = served
        return result

    return _invoke


def test_refuses_to_start_without_a_token(invoke: Any) -> None:
    result = invoke()
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no API token: set TAU_SERVE_TOKEN (or --token), or use --no-auth on localhost\n"
    )
    assert result.served == []


def test_no_auth_is_for_loopback_only(invoke: Any) -> None:
    refused = invoke("--no-auth", "--host", "0.0.0.0")
    assert refused.exit_code == 2 and "--no-auth is for local development" in refused.stderr
    assert refused.served == []
    allowed = invoke("--no-auth", "--host", "127.0.0.1", "--port", "0")
    assert allowed.exit_code == 0, allowed.stderr
    (app, kwargs), *_ = allowed.served
    assert app.state.settings.token is None and "auth DISABLED" in allowed.stderr
    assert kwargs["address"][0] == "127.0.0.1" and kwargs["address"][1] > 0


def test_token_from_the_environment_and_scores_defaults(invoke: Any, tmp_path: Path) -> None:
    scores = tmp_path / "scores.yaml"
    scores.write_text("user-strategy: scripted\nmax-steps: 12\nagent-options: {timeout: 9}\n")
    result = invoke(
        "--max-runs",
        "3",
        "--scores-config",
        str(scores),
        "--scores-agent-strategy",
        "oracle",
        env={"TAU_SERVE_TOKEN": TOKEN},
    )
    assert result.exit_code == 0, result.stderr
    settings: ServiceSettings = result.served[0][0].state.settings
    assert settings.token == TOKEN and settings.max_runs == 3
    assert settings.max_report_renders == 1
    assert settings.state_dir == tmp_path / "state"
    assert settings.scores_settings == {
        "agent_strategy": "oracle",
        "user_strategy": "scripted",
        "max_steps": 12,
        "agent_options": {"timeout": 9},
    }
    assert TOKEN not in result.stderr + result.stdout


def test_report_renders_at_once_are_the_operators_choice(invoke: Any) -> None:
    result = invoke("--max-report-renders", "4", env={"TAU_SERVE_TOKEN": TOKEN})
    assert result.exit_code == 0, result.stderr
    app = result.served[0][0]
    assert app.state.settings.max_report_renders == 4


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("log-dir: /tmp/elsewhere\n", "GET /scores settings: log_dir: set by the server"),
        ("num-trials: lots\n", "GET /scores settings: num_trials:"),
        ("colour: blue\n", "GET /scores settings: colour: unknown setting"),
        ("[1, 2]\n", "--scores-config:"),
    ],
)
def test_bad_scores_settings_stop_the_server_from_starting(
    invoke: Any, tmp_path: Path, yaml_text: str, message: str
) -> None:
    scores = tmp_path / "scores.yaml"
    scores.write_text(yaml_text)
    result = invoke("--scores-config", str(scores), env={"TAU_SERVE_TOKEN": TOKEN})
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}"), result.stderr
    assert result.served == []


def test_a_bad_log_level_is_one_error_line(invoke: Any) -> None:
    result = invoke("--log-level", "bogus", "--port", "0", env={"TAU_SERVE_TOKEN": TOKEN})
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --log-level: unknown level 'bogus' "
        "(one of: critical, error, warning, info, debug, trace)\n"
    )
    assert result.served == []
    upper = invoke("--log-level", "WARNING", "--port", "0", env={"TAU_SERVE_TOKEN": TOKEN})
    assert upper.exit_code == 0, upper.stderr
    assert upper.served[0][1]["log_level"] == "warning"


def test_the_log_levels_are_uvicorns() -> None:
    from tau_bench.cli.serve_cmd import LOG_LEVELS

    assert set(LOG_LEVELS) == set(uvicorn.config.LOG_LEVELS)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--scores-agent-strategy", "nope"],
            "error: GET /scores settings: agent_strategy: unknown agent strategy 'nope'",
        ),
        (
            ["--scores-user-strategy", "nope"],
            "error: GET /scores settings: user_strategy: unknown user strategy 'nope'",
        ),
    ],
)
def test_unknown_scores_strategies_stop_the_server_from_starting(
    invoke: Any, flags: list[str], message: str
) -> None:
    result = invoke(*flags, "--port", "0", env={"TAU_SERVE_TOKEN": TOKEN})
    assert result.exit_code == 2
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.served == []


def test_a_port_in_use_is_one_error_line_before_any_run_resumes(
    invoke: Any, tmp_path: Path
) -> None:
    from tau_bench.service.store import QUEUED, RunRow, RunStore

    settings = make_settings(tmp_path / "state")  # the fixture's TAU_SERVE_STATE_DIR
    settings.prepare()
    store = RunStore(settings.db_path)
    config = {**ORACLE, "task_ids": [13]}
    store.insert(RunRow("r1", QUEUED, "api", "2024-01-01T00:00:00", "r1", config))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = invoke("--port", str(port), env={"TAU_SERVE_TOKEN": TOKEN})
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.served == []
    row = store.get("r1")  # never started, so never parked again
    assert row is not None and (row.status, row.attempts, row.note) == (QUEUED, 0, None)
    store.close()


# -- the Docker image's entry command, run outside Docker ------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text()
    joined = text.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments) if arguments.startswith("[") else shlex.split(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return value


def entry_command() -> tuple[list[str], dict[str, str]]:
    """The argv the image runs (ENTRYPOINT + CMD) and the environment it sets."""
    entrypoint: list[str] = []
    cmd: list[str] = []
    env: dict[str, str] = {}
    for word, rest in dockerfile_instructions():
        if word == "ENTRYPOINT":
            entrypoint = exec_form(rest)
        elif word == "CMD":
            cmd = exec_form(rest)
        elif word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return entrypoint + cmd, env


def test_the_image_is_slim_non_root_with_a_data_volume() -> None:
    instructions = dockerfile_instructions()
    words = dict(instructions)
    assert words["FROM"] == "python:3.11-slim"
    assert "pip install ." in words["RUN"] or any(
        w == "RUN" and "pip install ." in rest for w, rest in instructions
    )
    users = [rest for w, rest in instructions if w == "USER"]
    assert users and users[-1] not in ("root", "0")
    volumes = [v for w, rest in instructions if w == "VOLUME" for v in exec_form(rest)]
    argv, env = entry_command()
    assert argv == ["tau", "serve", "--host", "0.0.0.0", "--port", "8000"]
    assert any(env["TAU_SERVE_STATE_DIR"].startswith(v) for v in volumes)
    assert "TAU_SERVE_TOKEN" not in env  # the token comes from the env file at run time


def free_port(preferred: int) -> int:
    """`preferred` if it can be bound on all interfaces now, else an ephemeral port (the
    machine is shared: another program may hold 8000)."""
    with socket.socket() as probe:
        try:
            probe.bind(("0.0.0.0", preferred))
            return preferred
        except OSError:
            probe.bind(("0.0.0.0", 0))
            return int(probe.getsockname()[1])


def test_the_image_entry_command_serves_health(tmp_path: Path) -> None:
    argv, image_env = entry_command()
    port_at = argv.index("--port") + 1
    port = free_port(int(argv[port_at]))
    argv = [str(TAU), *argv[1:port_at], str(port), *argv[port_at + 1 :]]
    env = {
        **os.environ,
        **{k: v for k, v in image_env.items() if k.startswith(("PYTHON", "LITELLM"))},
        "TAU_SERVE_STATE_DIR": str(tmp_path / "state"),
        "TAU_SERVE_TOKEN": TOKEN,
        "TAU_BENCH_DATA": str(DATA_DIR),
    }
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or []:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while not any("Uvicorn running on" in s for s in seen):
            seen.append(lines.get(timeout=WAIT))  # raises queue.Empty if it never starts
        base = f"http://127.0.0.1:{port}"
        health = httpx.get(f"{base}/health", timeout=10)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert httpx.get(f"{base}/runs", timeout=10).status_code == 401
        runs = httpx.get(f"{base}/runs", headers=AUTH, timeout=10)
        assert runs.status_code == 200 and runs.json() == {"runs": []}

        second = subprocess.run(
            [str(TAU), "serve", "--port", "0"], env=env, capture_output=True, text=True
        )
        assert second.returncode == 2
        assert "another tau serve is using the state directory" in second.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=WAIT)
        reader.join(timeout=WAIT)
        if proc.stderr is not None:
            proc.stderr.close()
    while not lines.empty():
        seen.append(lines.get())
    # uvicorn shuts down gracefully, then re-raises the signal it caught (as docker
    # stop expects); the lifespan (which parks unfinished runs) has run by then.
    assert code in (0, -signal.SIGTERM), seen
    assert any("Application shutdown complete" in s for s in seen), seen
    assert (tmp_path / "state" / "service.sqlite3").exists()
    assert TOKEN not in "".join(seen)


# -- a real uvicorn on an ephemeral port -----------------------------------------------


async def test_over_real_http(tmp_path: Path, gate: Gate) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn serves: no polling
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(make_settings(tmp_path)), log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=AUTH, timeout=WAIT
        ) as client:
            response = await client.post("/runs", json={**ORACLE, "task_ids": [13, 2]})
            assert response.status_code == 202
            run_id = response.json()["run_id"]
            view = (await client.get(f"/runs/{run_id}", params={"wait": WAIT})).json()
            assert view["status"] == "completed" and view["progress"]["passed"] == 2
            scores = (await client.get(f"/runs/{run_id}/scores")).text.splitlines()
            assert [json.loads(s)["task-id"] for s in scores] == ["task-2", "task-13"]

            blocked = await client.post(
                "/runs", json={**ORACLE, "agent_strategy": "gated", "task_ids": [0]}
            )
            await asyncio.wait_for(gate.reached.wait(), WAIT)
            cancelled = await client.delete(f"/runs/{blocked.json()['run_id']}")
            assert cancelled.json()["status"] == "cancelled"

            unauthorized = await client.get("/runs", headers={"Authorization": "Bearer nope"})
            assert unauthorized.status_code == 401
            bad = await client.post("/runs", json={**ORACLE, "max_steps": "forever"})
            assert bad.status_code == 422 and bad.json()["field"] == "max_steps"
    finally:
        server.should_exit = True
        await serving
