"""A cluster with Ray's token authentication (the default of `ray start --head` since Ray
2.59 when a token exists): joining it by address without the token, or with a wrong one,
is one line naming the fix within seconds (Ray's own `ray.init` retries for ~50 s,
printing a native warning a second, then says only `Failed to connect`; by Ray Client,
~30 s and `ray client connection timeout`); with the token the run goes on, a run waiting for CPUs says so and stops cleanly on
Ctrl-C, an eval stopped with Ctrl-C by Ray Client ends in its one line, and a driver
killed with SIGKILL takes its workers on the cluster with it. The cluster is a real `ray start --head --block` of one CPU,
stopped with Ctrl-C as a user would."""

from __future__ import annotations

import json
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

import psutil
import pytest

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.fakes.openai_server import OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.ray_driver import env_without_auth
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU, tau_run_refusal

RAY = Path(sys.executable).parent / "ray"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without Ray's authentication settings (a `ray.init` earlier in
    this process put `RAY_AUTH_MODE=token` in it), plus `extra`."""
    env = env_without_auth()
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
    """The head's addresses (`gcs`, and `client` for Ray Client), its `token` and the
    `pid` of `ray start`, whose descendants are the cluster's processes."""
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
            "pid": str(head.pid),
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
    # The Ray Client server's notice about its own threads is not the run's output.
    assert "SIGTERM handler" not in done.stderr + done.stdout


def episodes_in(log: Path) -> int:
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(json.loads(line).get("type") == "episode" for line in lines if line.strip())


def test_a_killed_driver_takes_its_workers_on_the_cluster_with_it(
    address: str, cluster: dict[str, str], tmp_path: Path
) -> None:
    """By GCS address the actors belong to the driver's job; by Ray Client to the
    session the head's client server holds for the driver. Either way they go when the
    driver does, and nothing calls the model any more."""
    log = tmp_path / "results" / "run.jsonl"
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster["token"])
    with OpenAIServer(scripted_model, latency=0.3) as server:
        argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "tool-calling"]
        argv += ["--model", "openai/gpt-4o-mini", "--api-base", server.base_url]
        argv += ["--user-strategy", "llm", "--user-model", "openai/gpt-4o-mini"]
        argv += ["--user-api-base", server.base_url, "--task-ids", *map(str, range(10))]
        argv += ["--max-concurrency", "4", "--ray-address", address, "--run-name", "run"]
        argv += ["--data-dir", str(DATA_DIR), "--log-dir", str(log.parent), "--quiet"]
        driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            end = time.monotonic() + DEADLINE
            while episodes_in(log) < 1:
                assert driver.poll() is None, driver.communicate()[1][-3000:]
                assert time.monotonic() < end, "no episode finished"
                time.sleep(0.05)  # a poll of the log, bounded by DEADLINE
            head = psutil.Process(int(cluster["pid"]))
            workers = [p for p in head.children(recursive=True) if "EpisodeWorker" in _cmd(p)]
            assert workers, "the run's worker is not among the cluster's processes"
            driver.kill()
            driver.wait(timeout=DEADLINE)
            _, alive = psutil.wait_procs(workers, timeout=DEADLINE)
            assert alive == [], [" ".join(p.cmdline())[:120] for p in alive]
            calls = server.stats()["requests"]
            # The next run on the cluster is placed (the killed one's CPU is free again)
            # and completes; meanwhile no request of the killed run arrives.
            test_with_its_token_the_run_goes_on(address, cluster, tmp_path / "next")
        finally:
            if driver.poll() is None:
                driver.kill()
        assert episodes_in(log) < 10  # it was killed mid-run
        assert server.stats()["requests"] == calls


def _cmd(process: psutil.Process) -> str:
    """`process`'s command line; empty for one that has ended (a zombie the raylet has
    not reaped yet: a worker of an earlier run)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""


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


def test_workers_waiting_for_cpus_are_reported_and_ctrl_c_ends_cleanly(
    address: str, cluster: dict[str, str], tmp_path: Path
) -> None:
    """Two workers (for two episodes) on a one-CPU cluster: one waits to be placed. The run says so (it
    would wait up to 300 s, looking hung), and Ctrl-C then ends it with its one line,
    nothing written, and no asyncio noise about a future nobody retrieved."""
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0", "1", "--ray-address", address]
    argv += ["--workers", "2", "--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "r")]
    env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster["token"])
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in driver.stderr or []])
    reader.start()
    try:
        first = lines.get(timeout=DEADLINE).decode()  # queue.Empty: it never said so
        assert first.startswith("waiting for the cluster to place 1 of 2 workers (1 CPU each")
        assert "the cluster has 1 CPUs); the run gives up 300 s after it started them" in first
        driver.send_signal(signal.SIGINT)
        assert driver.wait(timeout=DEADLINE) == 130
    finally:
        if driver.poll() is None:
            driver.kill()
        reader.join(timeout=DEADLINE)
    rest = b"".join(lines.queue).decode()
    assert rest == "interrupted before the run started: nothing was written\n"
    assert not (tmp_path / "r").exists()


def test_an_eval_stopped_with_ctrl_c_by_ray_client_ends_in_its_line(
    cluster: dict[str, str], tmp_path: Path
) -> None:
    """Cancelled at Ctrl-C, the driver's waits on its workers' replies used to cancel
    Ray Client's own futures, and Ray Client's thread then printed a traceback
    (`InvalidStateError: CANCELLED`) when it shut down."""
    results = tmp_path / "results"
    with OpenAIServer(scripted_model, latency=0.3) as server:
        (tmp_path / "eval.yaml").write_text(
            "\n".join(
                [
                    "name: ev",
                    "env: airline",
                    "agent-strategy: tool-calling",
                    "model: openai/gpt-4o-mini",
                    f"api-base: {server.base_url}",
                    "user-strategy: llm",
                    f"user-api-base: {server.base_url}",
                    "user-models: [openai/gpt-4o-mini, openai/gpt-4o]",
                    f"task-ids: {list(range(10))}",
                    "num-samples: 2",
                    "max-concurrency: 4",
                    f"data-dir: {DATA_DIR}",
                    f"log-dir: {results}",
                ]
            )
        )
        argv = [str(TAU), "eval", "--config", str(tmp_path / "eval.yaml")]
        argv += ["--ray-address", cluster["client"], "--quiet"]
        env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster["token"])
        driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            end = time.monotonic() + DEADLINE
            while sum(episodes_in(log) for log in results.rglob("*.jsonl")) < 1:
                assert driver.poll() is None, driver.communicate()[1][-3000:]
                assert time.monotonic() < end, "no episode finished"
                time.sleep(0.05)  # a poll of the logs, bounded by DEADLINE
            driver.send_signal(signal.SIGINT)
            _, err = driver.communicate(timeout=DEADLINE)
        finally:
            if driver.poll() is None:
                driver.kill()
    assert driver.returncode == 130, err[-3000:]
    # The second user model's run may have said it waits for the one CPU.
    lines = err.decode().splitlines()
    assert lines[-1].startswith("interrupted: "), err[-3000:]
    assert all(x.startswith("waiting for the cluster to place ") for x in lines[:-1]), lines
