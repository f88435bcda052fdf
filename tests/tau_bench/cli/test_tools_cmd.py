"""`tau tools serve` as users run it: the real console script on an ephemeral port."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
HEADERS = {"Authorization": "Bearer serve-tok"}


@pytest.fixture
def served() -> Iterator[str]:
    proc = subprocess.Popen(
        [
            *(TAU, "tools", "serve", "--env", "retail", "--port", "0"),
            *("--token", "serve-tok", "--data-dir", str(DATA_DIR)),
        ],
        stderr=subprocess.PIPE,
        text=True,
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


def test_port_zero_prints_the_real_port_and_serves(served: str) -> None:
    assert httpx.post(f"{served}/sessions", timeout=30).status_code == 401
    made = httpx.post(f"{served}/sessions", json={"task_id": 3}, headers=HEADERS, timeout=30)
    assert made.status_code == 201 and made.json()["domain"] == "retail"


@pytest.mark.parametrize("task_id", [1.5, True, "1e3", -1])
def test_task_ids_that_are_not_indices_are_refused(served: str, task_id: object) -> None:
    made = httpx.post(f"{served}/sessions", json={"task_id": task_id}, headers=HEADERS, timeout=30)
    assert made.status_code == 400, made.text


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
