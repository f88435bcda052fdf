"""`tau tools serve` as users run it: the real console script on an ephemeral port."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
HEADERS = {"Authorization": "Bearer serve-tok"}


@contextlib.contextmanager
def _serve(
    *args: str, token: str | None = "serve-tok", environ: dict[str, str] | None = None
) -> Iterator[str]:
    """`tau tools serve --env retail --port 0 ARGS`: its URL once it listens."""
    command = [TAU, "tools", "serve", "--env", "retail", "--port", "0"]
    command += [*(("--token", token) if token is not None else ()), "--data-dir", str(DATA_DIR)]
    proc = subprocess.Popen(
        [*command, *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(environ or {})},
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # printed once the socket listens
        match = re.search(r"on (http://127\.0\.0\.1:(\d+))", first)
        assert match, first
        assert match[2] != "0"  # the real port, not the one asked for
        yield match[1]  # already listening: early requests wait in the backlog
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def served() -> Iterator[str]:
    with _serve() as url:
        yield url


def _refused(*args: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`tau tools serve` that must refuse to start (the timeout: it started instead)."""
    return subprocess.run(
        [TAU, "tools", "serve", "--env", "retail", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), **(environ or {})},
    )


def test_port_zero_prints_the_real_port_and_serves(served: str) -> None:
    assert httpx.post(f"{served}/sessions", timeout=30).status_code == 401
    made = httpx.post(f"{served}/sessions", json={"task_id": 3}, headers=HEADERS, timeout=30)
    assert made.status_code == 201 and made.json()["domain"] == "retail"


@pytest.mark.parametrize("task_id", [1.5, True, "1e3", -1, "²", "1" * 5000])
def test_task_ids_that_are_not_indices_are_refused(served: str, task_id: object) -> None:
    made = httpx.post(f"{served}/sessions", json={"task_id": task_id}, headers=HEADERS, timeout=30)
    assert made.status_code == 400, made.text
    assert made.json()["detail"].startswith("task_id must be a task index")


def test_bodies_are_bounded(served: str) -> None:
    made = httpx.post(f"{served}/sessions", json={"task_id": 3}, headers=HEADERS, timeout=30).json()
    big = b'{"order_id": "' + b"x" * (2 << 20) + b'"}'
    answer = httpx.post(
        f"{served}/sessions/{made['session_id']}/tools/get_order_details",
        content=big,
        headers={**HEADERS, "content-type": "application/json"},
        timeout=30,
    )
    assert answer.status_code == 400 and "larger than" in answer.json()["detail"]


def test_a_port_out_of_range_is_one_line() -> None:
    proc = subprocess.run(
        [TAU, "tools", "serve", "--env", "retail", "--port", "99999", "--token", "t"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("ttl", ["inf", "nan", "1e309", "0", "-5"])
def test_a_ttl_that_is_not_a_positive_finite_number_is_one_line(ttl: str) -> None:
    proc = _refused("--token", "t", "--ttl", ttl)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: --ttl must be a positive, finite number of seconds, got ")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (" ", "error: pass --token TOKEN or set TAU_TOOLS_TOKEN"),
        ("\n", "error: pass --token TOKEN or set TAU_TOOLS_TOKEN"),
        ("a b", "error: --token / TAU_TOOLS_TOKEN: the bearer token must be printable ASCII"),
        ("tök", "error: --token / TAU_TOOLS_TOKEN: the bearer token must be printable ASCII"),
    ],
)
def test_a_token_no_client_can_send_is_refused_at_startup(token: str, message: str) -> None:
    for proc in (_refused("--token", token), _refused(environ={"TAU_TOOLS_TOKEN": token})):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith(message), line


def test_a_token_read_with_its_newline_is_stripped() -> None:
    with _serve(token=None, environ={"TAU_TOOLS_TOKEN": "serve-tok\n"}) as url:
        made = httpx.post(f"{url}/sessions", headers=HEADERS, timeout=30)
        assert made.status_code == 201, made.text


def test_a_request_that_never_finishes_is_cut() -> None:
    with (
        _serve("--request-timeout", "1") as url,
        socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=60) as sock,
    ):
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # never the blank line
        assert sock.recv(100) == b""  # closed by the server
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200


def test_a_session_keeps_at_most_4_mib_of_arguments(served: str) -> None:
    sid = httpx.post(f"{served}/sessions", headers=HEADERS, timeout=30).json()["session_id"]
    body = b'{"order_id": "' + b"x" * 1_000_000 + b'"}'
    codes = [
        httpx.post(
            f"{served}/sessions/{sid}/tools/get_order_details",
            content=body,
            headers={**HEADERS, "content-type": "application/json"},
            timeout=30,
        ).status_code
        for _ in range(5)
    ]
    assert codes == [200, 200, 200, 200, 429]


@pytest.mark.parametrize("command", ["serve", "openapi"])
def test_help_names_the_tau3_domains(command: str) -> None:
    proc = subprocess.run(
        [TAU, "tools", command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert proc.returncode == 0
    assert "airline, retail, or a τ³ domain (tau3/airline" in proc.stdout
