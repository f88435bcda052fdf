"""`tau a2a serve-agent` and `tau a2a check` as a new user meets them, through the
installed console script: the commands serve-agent prints work when pasted, a card that
requires a token is shown without one (the card is public; messages are not), and
`--brain-option` reaches an LLM brain or stops the agent in one line before it listens."""

from __future__ import annotations

import functools
import json
import queue
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from adapters.a2a.harness.cli import _serve_hint
from tau_bench.fakes import OpenAIServer
from tau_bench.fakes.openai_server import ChatReply, ChatRequest
from tests.adapters.pasted_hints import TAU, stream_lines, user_env

from .conftest import reference_app

DEADLINE = 120.0  # seconds for the agent to start, or a command to finish (loaded 2 cores)
SECRET = "a2a-secret-QWERTY-1234"
SERVE_LLM = [TAU, "a2a", "serve-agent", "--port", "0", "--brain", "tool-calling", "--model", "m"]


def _env(**extra: str) -> dict[str, str]:
    return user_env(("A2A_", "TAU_A2A_"), **extra)


@contextmanager
def _agent(*args: str, env: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """A running `tau a2a serve-agent --port 0 ARGS`: its URL (the one stdout line) and
    its hint on stderr, read up to the `tau run` line."""
    proc = subprocess.Popen(
        [TAU, "a2a", "serve-agent", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    end = time.monotonic() + DEADLINE
    out, errors = stream_lines(proc.stdout), stream_lines(proc.stderr)
    said: list[str] = []

    def next_line(lines: queue.Queue[str]) -> str:
        try:
            line = lines.get(timeout=max(0.0, end - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no whole hint within {DEADLINE} s: {said}") from None
        if not line:
            said.extend(errors.queue)
            raise AssertionError(f"the agent ended before its hint: {said}")
        return line.rstrip("\n")

    try:
        first = next_line(out)
        assert first.startswith("A2A agent listening on http://127.0.0.1:"), first
        while not said or not said[-1].lstrip().startswith("tau run "):
            said.append(next_line(errors))
        yield first.split()[-1], said
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=3 * DEADLINE,
        check=False,
    )


def test_the_serve_agent_hint_pasted_as_is_probes_and_runs(tmp_path: Path) -> None:
    with _agent(env=_env()) as (url, said):
        assert said == [
            "try:",
            f"  tau a2a check --url {url} --probe --task-id 0 --env retail",
            f"  tau run --agent-strategy a2a --a2a-url {url} --a2a-metadata 'env={{env}}' "
            "--a2a-metadata 'task_id={task_id}' --a2a-metadata 'task_split={task_split}' "
            "--env retail --user-strategy scripted --task-ids 0 1 2",
        ]
        done = _bash("\n".join(line.strip() for line in said[1:]), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "task state: input-required" in done.stdout
    assert "tool call: find_user_id_by_name_zip" in done.stdout
    runs = [p for p in (tmp_path / "results").glob("*.json") if ".summary." not in p.name]
    assert [e["reward"] for e in json.loads(runs[0].read_text())] == [1.0, 1.0, 1.0]


def test_the_hint_keeps_a_tau3_run_offline_and_never_shows_the_secret() -> None:
    tau3 = _serve_hint("http://h:1", "tau3/telecom", "bearer")
    assert tau3[0] == "tau a2a check --url http://h:1 --probe --task-id 0 --env tau3/telecom"
    assert tau3[1].endswith(
        "--env tau3/telecom --user-strategy scripted --task-ids 0 1 2 --judge-model assume-met"
    )
    assert tau3[2] == "# with the --secret as --bearer-token (tau run: --a2a-token)"
    assert _serve_hint("http://h:1", None, "api-key")[2] == (
        "# with the --secret as --api-key (tau run: --a2a-api-key)"
    )


def _check(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, "a2a", "check", "--url", url, *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def test_check_shows_a_card_that_requires_a_token_and_names_the_missing_flag(
    serve: Callable[[Callable[[str], Any]], str],
) -> None:
    url = serve(functools.partial(reference_app, auth="bearer", secret=SECRET))
    shown = _check(url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""
    lines = shown.stdout.splitlines()
    assert "security: bearer (http_auth_security_scheme)" in lines
    assert "tool mode: extension" in lines
    assert lines[-1] == (
        "credentials: missing; the agent card requires authentication: 'bearer' "
        "(bearer: tau run --a2a-token, tau a2a check --bearer-token)"
    )
    # A message needs the token: the probe is one line naming the flag, after the card.
    probe = _check(url, "--probe", "--task-id", "0")
    assert probe.returncode == 2
    assert probe.stderr == (
        "error: a2a: the agent card requires authentication: 'bearer' "
        "(bearer: tau run --a2a-token, tau a2a check --bearer-token)\n"
    )
    assert "security: bearer (http_auth_security_scheme)" in probe.stdout
    given = _check(url, "--probe", "--task-id", "0", "--bearer-token", SECRET)
    assert given.returncode == 0, given.stderr
    assert "credentials:" not in given.stdout
    assert "tool call: find_user_id_by_name_zip" in given.stdout


def test_a_bad_brain_option_is_one_line_before_the_agent_listens() -> None:
    done = subprocess.run(
        [*SERVE_LLM, "--brain-option", "temperature=nan"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr == "error: option 'temperature' must be a finite number at least 0, got nan\n"
    )


def test_brain_options_point_an_llm_brain_at_a_local_server() -> None:
    def model(request: ChatRequest) -> ChatReply:
        return ChatReply(text="Hello from the local model.")

    env = _env(OPENAI_API_KEY="sk-local-0000")
    with OpenAIServer(model) as server:
        options = [f"api-base={server.base_url}", "temperature=0.3", "max_attempts=1"]
        args = ["--env", "retail", "--brain", "tool-calling", "--model", "openai/local-brain"]
        args += [a for option in options for a in ("--brain-option", option)]
        with _agent(*args, env=env) as (url, _):
            probe = _check(url, "--probe")  # no task: an LLM brain talks without one
        assert probe.returncode == 0, probe.stderr
        assert "message: Hello from the local model." in probe.stdout.splitlines()
        asked = server.requests[0].body
    assert (asked["model"], asked["temperature"]) == ("local-brain", 0.3)
