"""The Ray backend (`--backend ray`, `--workers N`): episodes on Ray workers, the driver
the only writer.

One small local Ray (2 CPUs) serves the in-process tests of this module; the runner
joins it rather than starting its own. Killing the driver is tested with a real `tau
run` subprocess in tests/tau_bench/test_runner_ray_driver.py, a cluster of two nodes in
tests/tau_bench/test_runner_multinode.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest
import ray
import yaml
from typer.testing import CliRunner

from tau_adapters import registry
from tau_bench.agents.oracle import build as build_oracle
from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.cli import run_cmd
from tau_bench.config import RunConfig, load_yaml
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import read_log
from tau_bench.runner import Runner, RunOutcome, prepare_run, worker_config
from tau_bench.runner.backends import ray as ray_backend
from tau_bench.runner.backends.limiter import ProviderLimiter, RemoteSlots
from tau_bench.runner.backends.ray import STOP_DEADLINE
from tests.conftest import DATA_DIR
from tests.tau_bench.cli.run_parsing import parsed_run

RETAIL = [f"retail/{i}" for i in range(6)]
AIRLINE = ["airline/13", "airline/0", "airline/1", "airline/2"]
DEADLINE = 60.0  # seconds any wait of these tests may take
# Summary figures that do not depend on timing or file names.
SUMMARY_KEYS = (
    "episodes_planned",
    "episodes_done",
    "episodes_scored",
    "episodes_missing",
    "errors",
    "error_kinds",
    "tasks",
    "successes",
    "stop_reasons",
    "by_domain",
    "avg_reward",
    "pass_hat_k",
    "num_trials",
)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One 2-CPU local Ray for the module (runs join it), stopped at the end."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def make_config(tmp_path: Path, **kw: Any) -> RunConfig:
    base: dict[str, Any] = dict(
        agent_strategy="oracle",
        user_strategy="scripted",
        num_trials=2,
        max_concurrency=4,
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        quiet=True,
    )
    base.update(kw)
    return RunConfig(**base)


def llm_config(tmp_path: Path, base_url: str, **kw: Any) -> RunConfig:
    """The real tool-calling agent and LLM user against the fake server."""
    return make_config(
        tmp_path,
        env="airline",
        agent_strategy="tool-calling",
        model="openai/gpt-4o-mini",
        api_base=base_url,
        user_strategy="llm",
        user_model="openai/gpt-4o-mini",
        user_api_base=base_url,
        **kw,
    )


async def run_config(config: RunConfig) -> RunOutcome:
    return await Runner(prepare_run(config)).run()


def essentials(records: list[EpisodeRecord]) -> list[tuple[Any, ...]]:
    return [(r.task_id, r.trial, r.reward, r.stop_reason, r.error) for r in records]


def log_keys(path: Path) -> list[tuple[Any, int]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [(d["task_id"], d["trial"]) for d in lines if d.get("type") == "episode"]


@pytest.mark.parametrize(
    ("env", "task_ids"),
    [("retail", list(range(6))), ("retail,airline", RETAIL + AIRLINE)],
)
async def test_two_workers_give_the_same_records_and_summary(tmp_path, env, task_ids):
    one = await run_config(make_config(tmp_path, env=env, task_ids=task_ids, run_name="one"))
    two = await run_config(
        make_config(tmp_path, env=env, task_ids=task_ids, run_name="two", workers=2)
    )
    assert len(one.records) == len(task_ids) * 2
    assert essentials(two.records) == essentials(one.records)
    assert {k: two.summary.get(k) for k in SUMMARY_KEYS} == {
        k: one.summary.get(k) for k in SUMMARY_KEYS
    }
    assert one.summary["avg_reward"] is not None
    assert two.ran == len(task_ids) * 2 and "worker_errors" not in two.summary
    # The driver wrote every file, in the usual formats.
    assert sorted(log_keys(tmp_path / "two.jsonl"), key=str) == sorted(
        log_keys(tmp_path / "one.jsonl"), key=str
    )
    results = json.loads((tmp_path / "two.json").read_text())
    assert len(results) == len(task_ids) * 2
    header = read_log(tmp_path / "two.jsonl").header
    assert header["config"]["workers"] == 2 and "workers" not in header["fingerprint"]
    assert "backend" not in header["fingerprint"]


async def test_no_more_workers_start_than_there_are_episodes_to_run(tmp_path):
    """`--workers 2` for one episode started two workers, one of them only to pay its
    start-up; the workers are now as many as the episodes at most."""
    runner = Runner(
        prepare_run(make_config(tmp_path, env="retail", task_ids=[0], num_trials=1, workers=2))
    )
    outcome = await runner.run()
    assert outcome.ran == 1 and "worker_errors" not in outcome.summary
    assert [s["episodes"] for s in runner.worker_stats] == [1]
    assert read_log(outcome_log(tmp_path)).header["config"]["workers"] == 2  # as asked


def outcome_log(tmp_path: Path) -> Path:
    (log,) = tmp_path.glob("*.jsonl")
    return log


async def test_resume_across_backends_runs_only_the_missing_episodes(tmp_path):
    ids = RETAIL[:3] + AIRLINE[:2]
    full = await run_config(make_config(tmp_path, env="retail,airline", task_ids=ids, run_name="r"))
    log = tmp_path / "r.jsonl"
    lines = log.read_text().splitlines()
    kept = lines[:4]  # the header and three episodes, written by the local backend
    log.write_text("\n".join(kept) + "\n")
    done = {(json.loads(x)["task_id"], json.loads(x)["trial"]) for x in kept[1:]}

    resumed = await run_config(
        make_config(tmp_path, env="retail,airline", task_ids=ids, resume=str(log), backend="ray")
    )
    assert resumed.ran == len(ids) * 2 - 3
    assert essentials(resumed.records) == essentials(full.records)
    keys = log_keys(log)
    assert len(keys) == len(set(keys)) == len(ids) * 2  # nothing ran twice
    assert set(keys[:3]) == done


def all_episode_workers() -> list[psutil.Process]:
    """The episode-worker processes of every Ray on this machine (failure messages)."""
    return [p for p in psutil.process_iter() if is_episode_worker(p)]


def is_episode_worker(proc: psutil.Process) -> bool:
    try:
        return "EpisodeWorker" in " ".join(proc.cmdline())
    except psutil.Error:  # exited, or a zombie not reaped yet
        return False


def episode_workers() -> list[psutil.Process]:
    """The episode-worker processes of this module's Ray: descendants of this process
    (its raylet's workers), so that a worker of another Ray on the machine is not one."""
    return [p for p in psutil.Process().children(recursive=True) if is_episode_worker(p)]


def gone(proc: psutil.Process) -> bool:
    """Dead: exited, or a zombie its parent (the raylet) has not reaped yet."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def wait_until(condition: Any, what: str) -> None:
    """Poll `condition()` until true; fail after DEADLINE seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def mid_run(run: asyncio.Future[Any], server: OpenAIServer, requests: int) -> None:
    """Wait until both workers are up and `requests` model calls have reached `server`.
    On failure the run is cancelled first, so that its workers do not hold the module's
    CPUs through the tests after this one; the message says what was seen."""
    try:
        await wait_until(
            lambda: len(episode_workers()) == 2 and server.stats()["requests"] >= requests,
            "two workers calling the model",
        )
    except AssertionError as exc:
        seen = (
            f"{exc}: worker processes {[p.pid for p in episode_workers()]}, all "
            f"{[p.pid for p in all_episode_workers()]}; {server.stats()['requests']} of "
            f"{requests} requests; the run done: {run.done()}"
        )
        run.cancel()
        await asyncio.wait([run], timeout=DEADLINE)
        raise AssertionError(seen) from None


async def test_a_killed_worker_has_its_episodes_rerun_and_nothing_duplicated(tmp_path):
    with OpenAIServer(scripted_model, latency=0.2) as server:
        reference = await run_config(
            llm_config(tmp_path, server.base_url, task_ids=[0, 1, 2, 3], run_name="ref")
        )
        config = llm_config(
            tmp_path, server.base_url, task_ids=[0, 1, 2, 3], run_name="ray", workers=2
        )
        before = server.stats()["requests"]
        run = asyncio.ensure_future(run_config(config))
        await mid_run(run, server, before + 4)
        victim = episode_workers()[0]
        os.kill(victim.pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(run, DEADLINE)
    assert gone(victim)
    assert "worker_errors" not in outcome.summary
    keys = log_keys(tmp_path / "ray.jsonl")
    assert len(keys) == len(set(keys)) == 8  # every episode once: re-run, not duplicated
    assert essentials(outcome.records) == essentials(reference.records)
    assert outcome.summary["errors"] == 0
    assert [r.user_usage for r in outcome.records] == [r.user_usage for r in reference.records]
    assert [r.agent_usage for r in outcome.records] == [r.agent_usage for r in reference.records]


async def test_a_worker_that_stays_dead_leaves_its_episodes_to_resume(tmp_path, monkeypatch):
    """Past its restarts a worker's episodes in flight are given up, each with a line in
    `worker_errors`; the other worker runs the rest, and `--resume` plans exactly them."""
    monkeypatch.setattr(ray_backend, "MAX_RESTARTS", 0)  # no restart: the first death is final
    with OpenAIServer(scripted_model, latency=0.2) as server:
        config = llm_config(
            tmp_path, server.base_url, task_ids=[0, 1, 2, 3], run_name="dead", workers=2
        )
        run = asyncio.ensure_future(run_config(config))
        await mid_run(run, server, 4)
        victim = episode_workers()[0]
        os.kill(victim.pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(run, DEADLINE)
    errors = outcome.summary["worker_errors"]
    assert len(errors) == 2  # its share of max_concurrency 4: two in flight
    assert all(" not run: its worker died once (--resume runs it): " in e for e in errors)
    keys = log_keys(tmp_path / "dead.jsonl")
    assert len(keys) == len(set(keys)) == 6 and outcome.summary["errors"] == 0
    given_up = {(int(e.split()[1]), int(e.split()[3])) for e in errors}
    assert given_up.isdisjoint(keys)
    resumed = prepare_run(config.model_copy(update={"resume": str(tmp_path / "dead.jsonl")}))
    assert set(resumed.pending) == given_up


async def test_provider_limit_holds_cluster_wide(tmp_path):
    live = 0
    peak = 0

    async def counting(request: ChatRequest) -> ChatReply:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        try:
            await asyncio.sleep(0.05)  # the model's time, during which the slot is held
            return scripted_model(request)
        finally:
            live -= 1

    with OpenAIServer(counting, latency=0.0) as server:
        outcome = await run_config(
            llm_config(
                tmp_path,
                server.base_url,
                task_ids=[0, 1, 2, 3],
                workers=2,
                max_concurrency=8,
                provider_limits={"openai": 2},
            )
        )
    assert outcome.summary["errors"] == 0 and len(outcome.records) == 8
    # Two workers with 4 episodes each: per-worker caps would let 4 calls through.
    assert peak == 2


class SlotHolder:
    """A Ray actor that takes provider slots the way an episode worker's model calls do
    (`RemoteSlots`), and keeps them until told to give them back."""

    def __init__(self, limiter: Any) -> None:
        self.slots = RemoteSlots(limiter, wait_deadline=DEADLINE)
        self.held: list[AbstractAsyncContextManager[None]] = []

    async def take(self, provider: str, n: int) -> int:
        for _ in range(n):
            slot = self.slots.hold(provider)
            await slot.__aenter__()
            self.held.append(slot)
        return os.getpid()

    async def give_back(self) -> None:
        while self.held:
            await self.held.pop().__aexit__(None, None, None)


def in_use(limiter: Any) -> dict[str, int]:
    return dict(ray.get(limiter.in_use.remote(), timeout=DEADLINE))


async def test_a_worker_killed_holding_provider_slots_gives_them_back() -> None:
    ttl = 1.0  # seconds; a run's limiter uses LEASE_TTL
    limiter = (
        ray.remote(ProviderLimiter)
        .options(num_cpus=0, max_concurrency=100)
        .remote({"openai": 3}, ttl)
    )
    holder = ray.remote(SlotHolder).options(num_cpus=0)
    alive, doomed, newcomer = holder.remote(limiter), holder.remote(limiter), holder.remote(limiter)
    try:
        await asyncio.wait_for(alive.take.remote("openai", 1), DEADLINE)
        pid = await asyncio.wait_for(doomed.take.remote("openai", 2), DEADLINE)
        assert in_use(limiter) == {"openai": 3}
        os.kill(pid, signal.SIGKILL)  # dies holding two slots: no release will ever come
        # Its two leases expire; the live holder, heard from before it, renews and keeps
        # its own (without renewals it would expire first: 3, 2, 0 - never 1).
        await wait_until(lambda: in_use(limiter) == {"openai": 1}, "the dead worker's slots")
        # The whole limit is usable again: both freed slots can be taken.
        await asyncio.wait_for(newcomer.take.remote("openai", 2), DEADLINE)
        assert in_use(limiter) == {"openai": 3}
        await asyncio.wait_for(alive.give_back.remote(), DEADLINE)
        await asyncio.wait_for(newcomer.give_back.remote(), DEADLINE)
        await wait_until(lambda: in_use(limiter) == {"openai": 0}, "every slot released")
    finally:
        for actor in (alive, doomed, newcomer, limiter):
            ray.kill(actor, no_restart=True)


class HangsThenDown:
    """An HTTP bot on 127.0.0.1: the first request hangs until `release` is set (noting
    when its client goes away), every other one is answered 503."""

    def __init__(self) -> None:
        self.requests = 0
        self.lock = threading.Lock()
        self.holding = threading.Event()
        self.client_gone = threading.Event()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with owner.lock:
                    owner.requests += 1
                    first = owner.requests == 1
                if first:
                    owner.holding.set()
                    while not owner.release.wait(0.05):
                        if closed(self.connection):
                            owner.client_gone.set()
                            return
                self.send_response(503)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=DEADLINE)


def closed(conn: socket.socket) -> bool:
    """Whether the peer closed `conn` (readable, and nothing left to read)."""
    readable, _, _ = select.select([conn], [], [], 0)
    try:
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


@pytest.fixture
def hanging_bot(tmp_path: Path) -> Iterator[tuple[HangsThenDown, Path]]:
    bot = HangsThenDown()
    config = {
        "base_url": bot.url,
        "session": {"mode": "stateless"},
        "retry": {"max_attempts": 1},
        # The hung request fails by itself only after this: a run without the breaker
        # waits for it and records it (and fails the test that long after).
        "timeout": 60,
        "message": {"path": "/chat", "body": {"messages": "{{ messages }}"}},
        "response": {"messages": "reply"},
    }
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(config))
    try:
        yield bot, path
    finally:
        bot.close()


def wait_for(condition: Any, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_the_breaker_stops_a_ray_run_as_it_stops_a_local_one(
    tmp_path: Path, hanging_bot: tuple[HangsThenDown, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, bot_file = hanging_bot

    def tau_run(name: str, *extra: str) -> Any:
        args = ["--env", "retail", "--agent-strategy", "http", "--http-config", str(bot_file)]
        args += ["--user-strategy", "scripted", "--task-ids", "0-9", "--skip-preflight"]
        args += ["--max-consecutive-failures", "3", "--quiet", "--data-dir", str(DATA_DIR)]
        args += ["--log-dir", str(tmp_path), "--run-name", name, *extra]
        return CliRunner().invoke(run_cmd.standalone_app(), args)

    # Two episodes in flight: one hangs on the bot, the others fail with 503 one by one.
    on_ray = tau_run("ray", "--backend", "ray", "--workers", "2", "--max-concurrency", "2")
    assert bot.holding.is_set() and not bot.release.is_set()
    # The run stopped without waiting for the hung episode: it was cancelled (its
    # connection closed), not awaited, and it is not in the log.
    wait_for(bot.client_gone.is_set, "the hung episode's connection to close")
    assert on_ray.exit_code == 1, on_ray.output
    log = tmp_path / "ray.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    assert len(rows) == 3 and len({(r["task_id"], r["trial"]) for r in rows}) == 3
    assert all(r["error"]["class"] == "agent_unavailable" for r in rows)
    summary = json.loads((tmp_path / "ray.summary.json").read_text())
    assert summary["episodes_run_now"] == 3 and "worker_errors" not in summary
    # Cancelled at once: had the cancellation not taken, the backend would have waited
    # its STOP_DEADLINE (30 s) for the episode before giving up on it (~3 s here).
    assert summary["wall_time"] < STOP_DEADLINE

    # The local backend, same failures: the same message, exit status and record count.
    local = tau_run("local")
    assert local.exit_code == 1, local.output
    assert stopped_early(on_ray.output) == stopped_early(local.output).replace(
        "local.jsonl", "ray.jsonl"
    )
    assert "stopped early: 3 consecutive 'agent adapter_error' failures" in on_ray.output
    assert len(read_log(tmp_path / "local.jsonl").records) == 3

    # Resumable: `tau run --resume` plans every episode not finished (the errors, the
    # cancelled one, the never started).
    cfg, result = parse(monkeypatch, "--resume", str(log))
    assert result.exit_code == 0 and cfg is not None, result.output
    assert len(prepare_run(cfg).pending) == 10


def stopped_early(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("stopped early:")]
    assert len(lines) == 1, output
    return lines[0]


def test_worker_config_shares_concurrency_not_limits(tmp_path):
    config = make_config(
        tmp_path, max_concurrency=5, provider_limits={"openai": 3, "decibel": 1}, workers=2
    )
    data = worker_config(config, 2)
    assert data["max_concurrency"] == 3 and data["workers"] == 1 and data["backend"] == "local"
    assert data["provider_limits"] == {"openai": 3, "decibel": 1}  # one limiter for all
    assert config.fingerprint() == make_config(tmp_path, workers=1).fingerprint()


def parse(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[RunConfig | None, Any]:
    return parsed_run(monkeypatch, *args)


@pytest.mark.parametrize("args", [["--workers", "2"], ["--workers=2"]])
def test_workers_flag_parses(monkeypatch, args):
    cfg, result = parse(monkeypatch, "--env", "airline", *args)
    assert result.exit_code == 0, result.output
    assert cfg is not None and cfg.workers == 2
    default, _ = parse(monkeypatch, "--env", "airline")
    assert default is not None and default.workers == 1 and default.backend == "local"


def test_backend_flags_parse(monkeypatch):
    cfg, result = parse(
        monkeypatch,
        "--env",
        "airline",
        "--backend",
        "ray",
        "--ray-address",
        "ray://head:10001",
        "--llm-path",
        "direct",
    )
    assert result.exit_code == 0, result.output
    assert cfg is not None
    assert (cfg.backend, cfg.ray_address, cfg.llm_path) == ("ray", "ray://head:10001", "direct")
    _, bad = parse(monkeypatch, "--env", "airline", "--backend", "spark")
    assert bad.exit_code == 2 and "backend" in bad.output
    _, bad = parse(monkeypatch, "--env", "airline", "--llm-path", "fast")
    assert bad.exit_code == 2 and "llm_path" in bad.output


def test_workers_and_backend_in_yaml_and_bad_values(monkeypatch, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("workers: 3\nbackend: ray\nllm_path: litellm\nenv: airline\n")
    assert load_yaml(path)["workers"] == 3
    cfg, result = parse(monkeypatch, "--config", str(path))
    assert result.exit_code == 0 and cfg is not None
    assert (cfg.workers, cfg.backend, cfg.llm_path) == (3, "ray", "litellm")
    _, bad = parse(monkeypatch, "--workers", "0")
    assert bad.exit_code == 2 and "workers" in bad.output


def invoke_one_task(tmp_path: Path, strategy: str, *flags: str) -> Any:
    """`tau run` in this process on one airline task with `strategy` and `flags`."""
    return CliRunner().invoke(
        run_cmd.standalone_app(),
        [
            *("--env", "airline", "--agent-strategy", strategy, "--user-strategy", "scripted"),
            *("--task-ids", "13", *flags, "--log-dir", str(tmp_path)),
            *("--data-dir", str(DATA_DIR)),
        ],
    )


def test_in_process_strategy_with_workers_fails_fast(tmp_path):
    registry.register("oracle-in-process", build_oracle)
    try:
        result = invoke_one_task(tmp_path, "oracle-in-process", "--workers", "2")
    finally:
        registry._extra.pop("oracle-in-process", None)
    assert result.exit_code == 2, result.output
    assert "registered in this process only" in result.output
    assert "workers=1" in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_unknown_strategy_with_workers_is_named_unknown(tmp_path):
    result = invoke_one_task(tmp_path, "no-such-agent", "--backend", "ray")
    assert result.exit_code == 2, result.output
    assert "unknown agent strategy 'no-such-agent'; available: " in result.output
    assert "oracle" in result.output
    assert "registered in this process only" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_without_the_ray_extra_the_backend_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    result = invoke_one_task(tmp_path, "oracle", "--backend", "ray")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'tau-adapters[ray]'" in lines[0]
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written
