"""A cluster with Ray's token authentication (the default of `ray start --head` since Ray
2.59 when a token exists): joining it by address without the token, or with a wrong one,
is one line naming the fix within seconds (Ray's own `ray.init` retries for ~50 s,
printing a native warning a second, then says only `Failed to connect`; by Ray Client,
~30 s and `ray client connection timeout`); with the token the run goes on. The cluster is a real `ray start --head --block` of one CPU, stopped with
Ctrl-C as a user would."""

from __future__ import annotations

import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU, tau_run_refusal

RAY = Path(sys.executable).parent / "ray"
AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without Ray's authentication settings (a `ray.init` earlier in
    this process put `RAY_AUTH_MODE=token` in it), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in AUTH_ENV}
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def accepting(port: int) -> None:
    """Return once 127.0.0.1:`port` accepts a connection; fail after `DEADLINE`."""
    end = time.monotonic() + DEADLINE
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=DEADLINE).close()
            return
        except ConnectionRefusedError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)  # a poll of a condition, bounded by DEADLINE


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """The head's addresses (`gcs`, and `client` for Ray Client) and its `token`."""
    token = secrets.token_hex(16)
    port, client_port = free_port(), free_port()
    argv = [str(RAY), "start", "--head", "--block", "--port", str(port), "--num-cpus", "1"]
    argv += ["--ray-client-server-port", str(client_port)]
    argv += ["--include-dashboard", "false", "--disable-usage-stats"]
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, TAU_BENCH_DATA=str(DATA_DIR))
    head = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        for line in head.stdout or []:
            lines.put(line)

    reader = threading.Thread(target=pump)
    reader.start()
    seen: list[bytes] = []
    try:
        while b"block forever" not in b"".join(seen):
            seen.append(lines.get(timeout=DEADLINE))  # queue.Empty if it never starts
        accepting(client_port)  # the Ray Client server comes up a moment later
        yield {
            "gcs": f"127.0.0.1:{port}",
            "client": f"ray://127.0.0.1:{client_port}",
            "token": token,
        }
    finally:
        head.send_signal(signal.SIGINT)  # `--block` stops every Ray process on Ctrl-C
        try:
            head.wait(timeout=DEADLINE)
        finally:
            head.kill()
            reader.join(timeout=DEADLINE)


@pytest.fixture(params=["gcs", "client"])
def address(request: pytest.FixtureRequest, cluster: dict[str, str]) -> str:
    """Each test joining by the head's GCS address, then by Ray Client."""
    return cluster[str(request.param)]


def test_no_token_is_one_line_saying_what_to_set(address: str, tmp_path: Path) -> None:
    line = tau_run_refusal(tmp_path, "--ray-address", address, env=clean_env())
    assert line.startswith(f"error: --backend ray: cannot start or reach {address}: ")
    assert "requires token authentication: set RAY_AUTH_MODE=token, with the cluster's " in line
    assert "token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token" in line


def test_a_wrong_token_is_one_line_without_the_token(address: str, tmp_path: Path) -> None:
    wrong = secrets.token_hex(16)
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=wrong)
    line = tau_run_refusal(tmp_path, "--ray-address", address, env=env)
    assert "refused this machine's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or" in line
    assert wrong not in line


def test_with_its_token_the_run_goes_on(
    address: str, cluster: dict[str, str], tmp_path: Path
) -> None:
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0", "1", "--ray-address", address]
    argv += ["--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "results"), "--quiet"]
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster["token"])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((tmp_path / "results").glob("*.jsonl"))) == 1


def test_something_else_listening_is_refused_within_the_deadline(tmp_path: Path) -> None:
    """A port that accepts connections but never answers as a GCS (Ray: ~40 s an
    attempt, 20 attempts). On every interface: Ray dials a loopback address at the
    node's IP."""
    with socket.socket() as silent:
        silent.bind(("0.0.0.0", 0))
        silent.listen()
        port = silent.getsockname()[1]
        line = tau_run_refusal(tmp_path, "--ray-address", f"127.0.0.1:{port}", env=clean_env())
    assert f":{port} accepts connections but does not answer as a Ray cluster's GCS " in line
    assert "(waited at most 10 s)" in line
