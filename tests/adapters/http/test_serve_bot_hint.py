"""`tau http serve-bot` through the installed console script, as a new user meets it: the
commands it prints work when pasted as they are (export, init, check --probe, a scripted
run), it never prints its token, and `--brain-option` reaches an LLM brain (a local
OpenAI-compatible server) or stops the bot in one line before it listens."""

from __future__ import annotations

import json
import queue
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tau_bench.fakes import OpenAIServer
from tau_bench.fakes.openai_server import ChatReply, ChatRequest
from tests.adapters.pasted_hints import TAU, stream_lines, user_env

DEADLINE = 120.0  # seconds for the bot to start, or a hinted command to finish (loaded 2 cores)
TOKEN = "bot-tok-SECRET-4711"


def _env(**extra: str) -> dict[str, str]:
    """The user's shell: no BOT_URL or BOT_TOKEN yet."""
    return user_env(("BOT_URL", "BOT_TOKEN"), **extra)


@contextmanager
def _bot(*args: str, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """A running `tau http serve-bot --port 0 ARGS` and its start-up lines on stderr, read
    up to the hint's last line (the `tau run` one) or the bot's exit."""
    proc = subprocess.Popen(
        [TAU, "http", "serve-bot", "--port", "0", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = stream_lines(proc.stderr)
    said: list[str] = []
    end = time.monotonic() + DEADLINE
    try:
        while not said or not said[-1].lstrip().startswith("tau run "):
            try:
                line = lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no whole hint within {DEADLINE} s: {said}") from None
            if not line:
                raise AssertionError(f"the bot ended before its hint: {said}")
            said.append(line.rstrip("\n"))
        yield proc, said
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _paste(hint: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The hint's commands pasted into bash, as they are, stopping at the first failure."""
    script = "\n".join(line.strip() for line in hint[1:])
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * DEADLINE,
        check=False,
    )


def _rewards(folder: Path) -> list[float]:
    runs = [p for p in (folder / "results").glob("*.json") if not p.name.endswith(".summary.json")]
    assert len(runs) == 1, runs
    return [episode["reward"] for episode in json.loads(runs[0].read_text())]


def test_the_hint_pasted_as_is_inits_checks_and_runs(tmp_path: Path) -> None:
    env = _env()
    with _bot(env=env) as (_, said):
        url = said[0].split(" on ", 1)[1].split(";", 1)[0]
        assert said[1:] == [
            f"  export BOT_URL={url} BOT_TOKEN=tau-no-token   # this bot takes no token",
            "  tau http init --preset generic-json -o bot.yaml",
            "  tau http check bot.yaml --probe --task-id 0",
            "  tau run --agent-strategy http --http-config bot.yaml --env retail "
            "--user-strategy scripted --task-ids 0 1 2",
        ]
        done = _paste(said, tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "bot.yaml: ok" in done.stdout
    # The probe named task 0: the oracle played its first ground-truth action.
    assert "tool call : find_user_id_by_name_zip(" in done.stdout
    assert _rewards(tmp_path) == [1.0, 1.0, 1.0]


def test_with_a_token_the_hint_never_shows_it_and_works_once_it_is_set(tmp_path: Path) -> None:
    with _bot("--token", TOKEN, env=_env()) as (_, said):
        assert TOKEN not in "\n".join(said)
        assert "BOT_TOKEN=<the bot's --token>" in said[1]
        assert said[1].startswith("  export BOT_URL=http://127.0.0.1:")
        done = _paste(said[:4], tmp_path, _env(BOT_TOKEN=TOKEN))  # up to the probe
    assert done.returncode == 0, done.stderr
    assert "tool call : find_user_id_by_name_zip(" in done.stdout
    assert TOKEN not in done.stdout + done.stderr


def _refused(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, "http", "serve-bot", "--port", "0", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def test_a_bad_brain_option_is_one_line_before_the_bot_listens() -> None:
    llm = ["--brain", "tool-calling", "--model", "openai/m"]
    for args, expected in [
        (
            [*llm, "--brain-option", "temperature=nan"],
            "error: --brain tool-calling: option 'temperature' must be a finite number "
            "at least 0, got nan\n",
        ),
        (
            [*llm, "--brain-option", "temperature"],
            "error: --brain-option expects KEY=VALUE, got 'temperature'\n",
        ),
    ]:
        done = _refused(*args)
        assert (done.returncode, done.stderr) == (2, expected), args


def test_brain_options_point_an_llm_brain_at_a_local_server() -> None:
    def model(request: ChatRequest) -> ChatReply:
        return ChatReply(text="Hello from the local model.")

    env = _env(OPENAI_API_KEY="sk-local-0000")
    with OpenAIServer(model) as server:
        options = [f"api_base={server.base_url}", "temperature=0.3", "max_attempts=1"]
        args = ["--brain", "tool-calling", "--model", "openai/local-brain"]
        args += [a for option in options for a in ("--brain-option", option)]
        with _bot(*args, env=env) as (_, said), httpx.Client(timeout=60) as client:
            url = said[0].split(" on ", 1)[1].split(";", 1)[0]
            # No task: an LLM brain talks without one.
            started = client.post(f"{url}/sessions", json={"domain": "retail", "task_id": None})
            session = started.json()["session_id"]
            reply = client.post(f"{url}/sessions/{session}/messages", json={"text": "Hi"})
        assert reply.status_code == 200, reply.text
        assert reply.json()["messages"] == ["Hello from the local model."]
        asked = server.requests[0].body
    assert (asked["model"], asked["temperature"]) == ("local-brain", 0.3)
