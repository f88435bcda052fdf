"""Failing fast: pre-flight, the circuit breaker, turn and episode deadlines.

Real failing peers: a loopback HTTP bot that answers 503 to everything, a closed port
for a user model, an adapter whose reply never comes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau_adapters import registry
from tau_adapters.protocol import AdapterConfigError, SessionContext
from tau_adapters.registry import SimpleProvider
from tau_bench.agents.oracle import OracleAgent
from tau_bench.config import RunConfig
from tau_bench.results_log import read_log
from tau_bench.runner import Runner, prepare_run
from tau_bench.runner.preflight import PreflightError
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"


class Unavailable:
    """A bot on 127.0.0.1 that answers every request 503 (and counts them)."""

    def __init__(self) -> None:
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner.requests += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(503)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def down_bot(tmp_path: Path) -> Iterator[tuple[Unavailable, Path]]:
    bot = Unavailable()
    config = {
        "base_url": bot.url,
        "session": {"mode": "stateless"},
        "retry": {"max_attempts": 1},
        "message": {"path": "/chat", "body": {"messages": "{{ messages }}"}},
        "response": {"messages": "reply"},
    }
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(config))
    try:
        yield bot, path
    finally:
        bot.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config(tmp_path: Path, **kw: Any) -> RunConfig:
    base: dict[str, Any] = dict(
        env="retail",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=list(range(10)),
        log_dir=str(tmp_path / "results"),
        data_dir=str(DATA_DIR),
        run_name="t",
        quiet=True,
    )
    base.update(kw)
    return RunConfig(**base)


# -- the circuit breaker ---------------------------------------------------------------


async def test_the_breaker_stops_scheduling_after_n_failures_of_one_kind(
    tmp_path: Path, down_bot: tuple[Unavailable, Path]
) -> None:
    bot, bot_file = down_bot
    cfg = config(
        tmp_path,
        agent_strategy="http",
        agent_options={"http_config": str(bot_file)},
        max_consecutive_failures=3,
        skip_preflight=True,
    )
    runner = Runner(prepare_run(cfg))
    outcome = await runner.run()
    assert outcome.ran == 3 and bot.requests == 3  # the 7 others were never started
    assert "3 consecutive 'agent" in outcome.summary["stopped_early"]
    assert len(read_log(outcome.plan.log_path).records) == 3
    summary = json.loads(outcome.plan.summary_path.read_text())
    assert summary["stopped_early"]


async def test_scattered_failures_never_trip_the_breaker(tmp_path: Path) -> None:
    from tau_bench.records import EpisodeRecord
    from tau_bench.runner.breaker import CircuitBreaker

    def record(error: dict[str, Any] | None) -> EpisodeRecord:
        return EpisodeRecord(task_id=0, trial=0, reward=None if error else 1.0, error=error)

    down = {"source": "agent", "kind": "agent_unavailable", "retryable": True}
    other = {"source": "user", "kind": "rate_limit", "retryable": True}
    breaker = CircuitBreaker(3)
    for rec in [down, down, None, down, down, other, down, down]:
        assert not breaker.observe(record(rec))
    assert breaker.observe(record(down))


def test_a_tripped_breaker_keeps_its_reason() -> None:
    """Episodes in flight when it trips finish later; they do not rewrite why it stopped."""
    from tau_bench.records import EpisodeRecord
    from tau_bench.runner.breaker import CircuitBreaker

    down = {"source": "agent", "kind": "agent_unavailable", "message": "503"}
    breaker = CircuitBreaker(2)
    for error in (down, down):
        breaker.observe(EpisodeRecord(task_id=0, trial=0, reward=None, error=error))
    reason = breaker.reason()
    assert reason == "2 consecutive 'agent agent_unavailable' failures (last: 503)"
    assert breaker.observe(EpisodeRecord(task_id=1, trial=0, reward=1.0))
    assert breaker.reason() == reason


def test_the_cli_prints_why_it_stopped_and_the_resume_command(
    tmp_path: Path, down_bot: tuple[Unavailable, Path]
) -> None:
    _, bot_file = down_bot
    done = subprocess.run(
        [
            str(TAU),
            "run",
            "--env",
            "retail",
            "--agent-strategy",
            "http",
            "--http-config",
            str(bot_file),
            "--user-strategy",
            "scripted",
            "--task-ids",
            "0-9",
            "--max-consecutive-failures",
            "2",
            "--skip-preflight",
            "--quiet",
            "--log-dir",
            str(tmp_path / "out"),
            "--run-name",
            "b",
            "--data-dir",
            str(DATA_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "stopped early: 2 consecutive" in done.stderr
    assert f"tau run --resume {tmp_path / 'out' / 'b.jsonl'}" in done.stderr
    assert "Traceback" not in done.stderr


# -- deadlines -------------------------------------------------------------------------


class HangsOn:
    """The oracle, except that its reply in task `stuck` never comes."""

    def __init__(self, stuck: int) -> None:
        self.stuck = stuck
        self.inner = OracleAgent()

    async def start(self, session: SessionContext) -> None:
        self.task_id = session.task_id
        await self.inner.start(session)

    async def send(self, turn: Any) -> Any:
        if self.task_id == self.stuck:
            await asyncio.Event().wait()  # never set: the bot's reply never comes
        return await self.inner.send(turn)

    async def close(self) -> None:
        await self.inner.close()


@pytest.fixture
def hanging_agent() -> Iterator[str]:
    registry.register("hangs-on-1", lambda options: SimpleProvider(lambda: HangsOn(1)))
    yield "hangs-on-1"
    registry._extra.pop("hangs-on-1", None)


@pytest.mark.parametrize(
    ("limits", "flag"),
    [({"episode_timeout": 0.5}, "--episode-timeout"), ({"turn_timeout": 0.5}, "--turn-timeout")],
)
async def test_a_hung_episode_is_an_agent_timeout_and_the_others_score(
    tmp_path: Path, hanging_agent: str, limits: dict[str, float], flag: str
) -> None:
    cfg = config(tmp_path, agent_strategy=hanging_agent, task_ids=[0, 1, 2], **limits)
    outcome = await Runner(prepare_run(cfg)).run()
    by_task = {r.task_id: r for r in outcome.records}
    error = by_task[1].error or {}
    assert (error["source"], error["kind"]) == ("agent", "agent_timeout")
    assert by_task[1].error_class == "agent_unavailable" and flag in error["message"]
    assert by_task[0].error is None and by_task[2].error is None
    assert by_task[0].reward == 1.0


# -- pre-flight ------------------------------------------------------------------------


class BadKeyProvider(SimpleProvider):
    """A hosted agent whose pre-flight finds the credentials refused."""

    async def preflight(self) -> None:
        raise AdapterConfigError("decibel: ListTools: 403 PERMISSION_DENIED (key file refused)")


async def test_preflight_reports_every_failure_before_any_episode(tmp_path: Path) -> None:
    registry.register("bad-key", lambda options: BadKeyProvider(OracleAgent))
    try:
        cfg = config(
            tmp_path,
            agent_strategy="bad-key",
            user_strategy="llm",
            user_model="openai/gpt-4o",
            user_api_base=f"http://127.0.0.1:{closed_port()}/v1",
        )
        with pytest.raises(PreflightError) as caught:
            await Runner(prepare_run(cfg)).run()
    finally:
        registry._extra.pop("bad-key", None)
    lines = caught.value.failures
    assert len(lines) == 2
    assert lines[0].startswith("agent bad-key: decibel: ListTools: 403")
    assert lines[1].startswith("user model openai/gpt-4o")
    assert "Connection" in lines[1] or "connect" in lines[1]
    assert not (tmp_path / "results").exists()  # no file, no episode


async def test_skip_preflight_runs_the_episodes(tmp_path: Path) -> None:
    registry.register("bad-key", lambda options: BadKeyProvider(OracleAgent))
    try:
        cfg = config(tmp_path, agent_strategy="bad-key", task_ids=[0], skip_preflight=True)
        outcome = await Runner(prepare_run(cfg)).run()
    finally:
        registry._extra.pop("bad-key", None)
    assert outcome.records[0].reward == 1.0


def test_preflight_through_the_cli_is_one_line_per_failure(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(TAU),
            "run",
            "--env",
            "retail",
            "--agent-strategy",
            "oracle",
            "--task-ids",
            "0-4",
            "--user-model",
            "openai/gpt-4o",
            "--user-api-base",
            f"http://127.0.0.1:{closed_port()}",
            "--log-dir",
            str(tmp_path / "out"),
            "--data-dir",
            str(DATA_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: pre-flight failed") and len(lines) == 2
    assert lines[1].strip().startswith("user model openai/gpt-4o")
    assert not (tmp_path / "out").exists()
