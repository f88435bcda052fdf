"""`tau http serve-bot` through the installed console script: it binds before it says
where it listens, so a port in use or an unknown brain is one line (exit 2), and port 0
announces the real port."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
DEADLINE = 120.0  # seconds for the bot to start (imports on a loaded 2-core machine)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), "http", "serve-bot", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def _first_line(proc: subprocess.Popen[str]) -> str:
    """The bot's first stderr line, waited for with a deadline (select, not a sleep)."""
    assert proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            if sel.select(timeout=end - time.monotonic()):
                return proc.stderr.readline()
    raise AssertionError("the bot said nothing within the deadline")


def test_port_0_announces_the_real_port_and_serves_there() -> None:
    proc = subprocess.Popen(
        [str(TAU), "http", "serve-bot", "--port", "0"],
        env=ENV,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = _first_line(proc)
        assert line.startswith("reference bot (oracle) on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].split(";", 1)[0]
        assert not url.endswith(":0")
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run("--port", str(port))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_an_unknown_brain_is_one_line() -> None:
    done = _run("--brain", "no-such-brain", "--port", "0")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --brain no-such-brain: unknown agent strategy")
    assert len(done.stderr.splitlines()) == 1
