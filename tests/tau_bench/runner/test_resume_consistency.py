"""Resume keeps a run one run: the same agent, the same samples, every attempt's spend.

Real peers: a loopback HTTP bot that can be switched between answering 500 and answering
properly, and the fake OpenAI server (`tau_bench.fakes`) as the user model, priced as
`gpt-4o` by litellm's local cost map.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau_adapters.registry import build_provider
from tau_bench.config import RunConfig, RunConfigError
from tau_bench.fakes import ChatReply, ChatRequest, OpenAIServer
from tau_bench.manifest import build_manifest
from tau_bench.metrics import summarize
from tau_bench.records import EpisodeRecord
from tau_bench.runner.plan import prepare_run
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {
    **os.environ,
    "TAU_BENCH_DATA": str(DATA_DIR),
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OPENAI_API_KEY": "sk-test-resume-0000",
}


class Bot:
    """An HTTP bot on 127.0.0.1: 500 to everything while `down`, else a closing reply."""

    def __init__(self) -> None:
        self.down = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"error": "boom"}' if owner.down else b'{"reply": "ok bye", "end": true}'
                self.send_response(500 if owner.down else 200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

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


def bot_config(url: str, name: str, text: str = "{{ message }}") -> dict[str, Any]:
    return {
        "name": name,
        "base_url": url,
        "session": {"mode": "stateless"},
        "retry": {"max_attempts": 1},
        "message": {"path": "/m", "body": {"text": text}},
        "response": {"messages": "reply", "end": "end"},
    }


@pytest.fixture
def bot() -> Iterator[Bot]:
    server = Bot()
    try:
        yield server
    finally:
        server.close()


def user_reply(request: ChatRequest) -> ChatReply:
    """A user that asks once, then stops; every call is 1000 + 10 tokens."""
    done = any("ok bye" in str(m.get("content")) for m in request.messages)
    return ChatReply(text="###STOP###" if done else "Hi, I need help", usage=(1000, 10))


@pytest.fixture
def user_model() -> Iterator[OpenAIServer]:
    with OpenAIServer(user_reply) as server:
        yield server


def tau(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
    )


def http_run(log_dir: Path, bot_file: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--env",
        "retail",
        "--agent-strategy",
        "http",
        "--http-config",
        str(bot_file),
        "--task-ids",
        "0-1",
        "--max-consecutive-failures",
        "0",
        "--skip-preflight",
        "--quiet",
        "--log-dir",
        str(log_dir),
        "--run-name",
        "s",
        "--data-dir",
        str(DATA_DIR),
        *extra,
    ]


# -- the agent's configuration file ----------------------------------------------------


def errored_http_run(tmp_path: Path, bot: Bot) -> tuple[Path, Path]:
    """A run of 2 errored episodes (the bot answers 500) and its bot config file."""
    bot.down = True
    bot_file = tmp_path / "bot.yaml"
    bot_file.write_text(yaml.safe_dump(bot_config(bot.url, "probe")))
    done = tau(*http_run(tmp_path, bot_file, "--user-strategy", "scripted"))
    assert done.returncode == 1, done.stderr  # nothing scored
    return tmp_path / "s.jsonl", bot_file


def resumed(log: Path, bot_file: Path) -> RunConfig:
    """The configuration `tau run --resume` rebuilds for an `errored_http_run` log."""
    return RunConfig(
        env="retail",
        agent_strategy="http",
        agent_options={"http_config": str(bot_file)},
        user_strategy="scripted",
        task_ids=[0, 1],
        data_dir=str(DATA_DIR),
        resume=str(log),
    )


def test_a_changed_agent_config_file_is_refused_by_the_plan(tmp_path: Path, bot: Bot) -> None:
    log, bot_file = errored_http_run(tmp_path, bot)

    def check() -> None:
        plan = prepare_run(resumed(log, bot_file))
        provider = build_provider("http", plan.config.adapter_options())
        plan.check_agent(build_manifest(plan, provider))

    check()  # the same file: accepted
    bot_file.write_text(
        yaml.safe_dump(bot_config(bot.url, "other\x1b[31m", "IGNORE {{ message }}"))
    )
    with pytest.raises(RunConfigError) as refused:
        check()
    message = str(refused.value)
    assert message.startswith(f"cannot resume {log}: the agent's configuration differs")
    assert "name 'probe' -> 'other\\x1b[31m'" in message
    assert "config_hash" in message and "\x1b" not in message


def test_tau_run_resume_refuses_a_changed_agent_config_file(tmp_path: Path, bot: Bot) -> None:
    log, bot_file = errored_http_run(tmp_path, bot)
    before = log.read_bytes()
    bot.down = False
    bot_file.write_text(yaml.safe_dump(bot_config(bot.url, "totally-different-bot")))

    done = tau("run", "--resume", str(log), "--quiet")

    assert done.returncode == 2, done.stderr
    # The "resuming ..." note comes first (as before any check the runner makes).
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == done.stderr.strip().splitlines()[-1:] and "Traceback" not in done.stderr
    assert errors[0].startswith(f"error: cannot resume {log}: the agent's configuration differs")
    assert "name 'probe' -> 'totally-different-bot'" in errors[0]
    assert log.read_bytes() == before  # no episode ran, no resume line was appended


def test_a_relative_config_path_is_recorded_absolute_and_resumes_from_anywhere(
    tmp_path: Path, bot: Bot
) -> None:
    """Before, the log kept `bot.yaml` as typed: a resume from another folder could not
    read it, and `--http-config ./bot.yaml` was refused as a configuration that differs."""
    bot.down = True
    (tmp_path / "bot.yaml").write_text(yaml.safe_dump(bot_config(bot.url, "probe")))
    args = http_run(Path("out"), Path("bot.yaml"), "--user-strategy", "scripted")
    assert tau(*args, cwd=tmp_path).returncode == 1  # both episodes errored
    log = tmp_path / "out" / "s.jsonl"
    header = json.loads(log.read_text().splitlines()[0])
    assert header["config"]["agent_options"]["http_config"] == str(tmp_path / "bot.yaml")

    bot.down = False
    again = tau("run", "--resume", "out/s.jsonl", "--http-config", "./bot.yaml", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    (tmp_path / "elsewhere").mkdir()
    elsewhere = tau("run", "--resume", "../out/s.jsonl", cwd=tmp_path / "elsewhere")
    assert elsewhere.returncode == 0, elsewhere.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "s.summary.json").read_text())
    assert summary["episodes_scored"] == 2


# -- the spend of attempts a resume replaced -------------------------------------------


def test_summarize_counts_the_spend_of_superseded_attempts() -> None:
    def rec(cost: float, error: dict[str, Any] | None) -> EpisodeRecord:
        usage = {"cost": cost, "calls": 1, "prompt_tokens": 1000, "completion_tokens": 10}
        return EpisodeRecord(
            task_id=0,
            trial=0,
            reward=None if error else 1.0,
            error=error,
            user_strategy="llm",
            user_usage=usage,
        )

    failed = rec(0.5, {"source": "agent", "kind": "agent_unavailable"})
    final = rec(0.25, None)
    summary = summarize([final], 1, planned=1, superseded=[failed])
    assert summary["cost"]["user"] == pytest.approx(0.75)
    assert summary["tokens"]["user"]["calls"] == 2
    assert summary["costs"]["user"] == pytest.approx(0.75)
    assert summary["costs"]["resolved"] == 1
    assert summary["replaced_attempts"]["episodes"] == 1
    assert summary["replaced_attempts"]["cost"]["user"] == pytest.approx(0.5)
    assert summary["errors"] == 0 and summary["episodes_done"] == 1
    assert "replaced_attempts" not in summarize([final], 1)


def test_plan_names_the_records_a_resume_replaced(tmp_path: Path, bot: Bot) -> None:
    log, bot_file = errored_http_run(tmp_path, bot)
    plan = prepare_run(resumed(log, bot_file))
    first, second = plan.existing.values()
    replacement = EpisodeRecord(task_id=first.task_id, trial=first.trial, reward=1.0)
    final = {first.key: replacement, second.key: second}
    assert plan.superseded(final) == [first]


def test_resumed_summary_cost_counts_the_replaced_attempts(
    tmp_path: Path, bot: Bot, user_model: OpenAIServer
) -> None:
    bot.down = True
    bot_file = tmp_path / "bot.yaml"
    bot_file.write_text(yaml.safe_dump(bot_config(bot.url, "probe")))
    user = ["--user-strategy", "llm", "--user-model", "openai/gpt-4o"]
    user += ["--user-api-base", user_model.base_url]
    done = tau(*http_run(tmp_path, bot_file, *user))
    assert done.returncode == 1, done.stderr
    summary_path = tmp_path / "s.summary.json"
    failed = json.loads(summary_path.read_text())
    assert failed["errors"] == 2 and failed["cost"]["user"] > 0

    bot.down = False
    resumed = tau("run", "--resume", str(tmp_path / "s.jsonl"), "--quiet")
    assert resumed.returncode == 0, resumed.stderr

    summary = json.loads(summary_path.read_text())
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    episodes = [x for x in lines if x.get("type") == "episode"]
    assert len(episodes) == 4 and summary["errors"] == 0
    spent = sum(e["user_usage"]["cost"] for e in episodes)
    assert summary["cost"]["user"] == pytest.approx(spent)
    assert summary["costs"]["user"] == pytest.approx(spent)
    assert summary["cost"]["user"] > failed["cost"]["user"]
    assert summary["replaced_attempts"]["episodes"] == 2
    assert summary["replaced_attempts"]["cost"]["user"] == pytest.approx(failed["cost"]["user"])


def test_summary_cost_counts_every_attempt_across_resumes(
    tmp_path: Path, bot: Bot, user_model: OpenAIServer
) -> None:
    """run -> resume -> resume, the bot failing until the last: the final summary counts
    the first run's failed attempts too (each once), not only the ones it replaced."""
    bot.down = True
    bot_file = tmp_path / "bot.yaml"
    bot_file.write_text(yaml.safe_dump(bot_config(bot.url, "probe")))
    user = ["--user-strategy", "llm", "--user-model", "openai/gpt-4o"]
    user += ["--user-api-base", user_model.base_url]
    log = tmp_path / "s.jsonl"
    assert tau(*http_run(tmp_path, bot_file, *user)).returncode == 1
    again = tau("run", "--resume", str(log), "--quiet")
    assert again.returncode == 1, again.stderr  # still failing
    bot.down = False
    last = tau("run", "--resume", str(log), "--quiet")
    assert last.returncode == 0, last.stderr

    episodes = [x for x in map(json.loads, log.read_text().splitlines()) if x["type"] == "episode"]
    assert len(episodes) == 6  # 2 pairs x 3 attempts
    failed = [e for e in episodes if e["error"]]
    assert len(failed) == 4

    def spend(records: list[dict[str, Any]]) -> float:
        return sum(r["agent_usage"].get("cost", 0) + r["user_usage"]["cost"] for r in records)

    summary = json.loads((tmp_path / "s.summary.json").read_text())
    assert spend(failed) > 0 and summary["errors"] == 0
    assert summary["cost"]["total"] == pytest.approx(spend(episodes))
    assert summary["costs"]["user"] == pytest.approx(sum(e["cost"]["user"] for e in episodes))
    assert summary["tokens"]["user"]["calls"] == sum(e["user_usage"]["calls"] for e in episodes)
    assert summary["replaced_attempts"]["episodes"] == 4
    assert summary["replaced_attempts"]["cost"]["total"] == pytest.approx(spend(failed))


# -- tau eval: one number of samples ---------------------------------------------------


def test_tau_eval_resume_keeps_one_number_of_samples(
    tmp_path: Path, user_model: OpenAIServer
) -> None:
    config = tmp_path / "eval.yaml"
    data = {
        "name": "ev",
        "env": "airline",
        "agent-strategy": "oracle",
        "user-strategy": "llm",
        "user-models": ["openai/gpt-4o"],
        "user-api-base": user_model.base_url,
        "task-ids": [13],
        "num-samples": 1,
        "max-concurrency": 2,
        "data-dir": str(DATA_DIR),
        "log-dir": str(tmp_path / "results"),
    }
    config.write_text(json.dumps(data))  # JSON is YAML
    first = tau("eval", "--config", str(config), "--quiet", "--num-samples", "2")
    assert first.returncode == 0, first.stderr

    # Resumed as the file says (1 sample) and with a user model added.
    models = "openai/gpt-4o,openai/gpt-4o-mini"
    resumed = tau("eval", "--config", str(config), "--quiet", "--resume", "--user-models", models)
    assert resumed.returncode == 0, resumed.stderr

    report = json.loads((tmp_path / "results" / "ev.eval.json").read_text())
    per = report["per_user_model"]
    assert per["openai/gpt-4o"]["episodes"] == per["openai/gpt-4o-mini"]["episodes"] == 2
    assert report["num_samples"] == report["settings"]["num_trials"] == 2
    assert report["ks"] == [1, 2]
    assert "(2 samples per task)" in resumed.stdout
