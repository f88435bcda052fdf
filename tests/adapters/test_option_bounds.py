"""Every adapter refuses a wait no deadline could honour, or a bound that bounds nothing,
in one line, when it is built.

A timeout, a deadline or a backoff is finite and at most `MAX_SECONDS` (a week), a
call's attempts at most `MAX_ATTEMPTS`, a reply-size bound at most `MAX_RESPONSE_BYTES`,
a count of events, messages or pages at most `MAX_ITEMS`. Before, `timeout: .inf` (HTTP, CES, A2A) or
`retry_initial=1e18` was taken and left only the episode's deadline to end the wait, and
Dialogflow's `timeout=1e300` was handed to gRPC, whose clock turns it into a deadline
already passed: every call then failed at once as DEADLINE_EXCEEDED, as if the agent
were slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.a2a.adapter import parse_options as a2a_options
from adapters.ces.adapter import load_options as ces_options
from adapters.dialogflow.config import load_config as dialogflow_config
from adapters.http.config import ConfigError
from adapters.http.config_load import load_config as http_config
from tau_adapters.options import MAX_ATTEMPTS, MAX_ITEMS, MAX_RESPONSE_BYTES, MAX_SECONDS
from tau_adapters.protocol import AdapterConfigError
from tests.conftest import DATA_DIR

INF = float("inf")
HTTP = {
    "base_url": "http://bot.test",
    "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
    "response": {"messages": "reply"},
}


def dialogflow(**options: Any) -> Any:
    base = {"agent_id": "projects/p/locations/global/agents/a", "emulator": "127.0.0.1:9"}
    return dialogflow_config({**base, **options})


def ces(**options: Any) -> Any:
    return ces_options(
        {"app_id": "projects/p/locations/us/apps/a", "emulator": "127.0.0.1:9", **options}
    )


def a2a(**options: Any) -> Any:
    return a2a_options({"agent_url": "http://127.0.0.1:9", **options})


def http(**options: Any) -> Any:
    config = json.loads(json.dumps(HTTP))
    for key, value in options.items():
        section, _, field = key.partition("__")
        if field:
            config.setdefault(section, {})[field] = value
        else:
            config[section] = value
    return http_config(config, environ={}).config


BUILDERS: dict[str, Callable[..., Any]] = {
    "dialogflow": dialogflow,
    "ces": ces,
    "a2a": a2a,
    "http": http,
}
WAITS = {
    "dialogflow": ["timeout", "call_deadline", "retry_initial", "retry_max"],
    "ces": ["timeout", "deadline", "retry_initial", "retry_max"],
    "a2a": ["timeout", "retry_initial", "retry_max"],
    "http": [
        "timeout",
        "timeout__read",
        "timeout__call",
        "retry__backoff_initial",
        "retry__backoff_max",
        "retry__retry_after_max",
    ],
}
ATTEMPTS = {"dialogflow": "max_attempts", "ces": "max_attempts", "a2a": "max_attempts"}
REFUSED = (AdapterConfigError, ConfigError)


def one_line(build: Callable[..., Any], key: str, value: Any) -> str:
    with pytest.raises(REFUSED) as raised:
        build(**{key: value})
    message = str(raised.value)
    assert "\n" not in message
    assert key.rpartition("__")[2] in message
    return message


@pytest.mark.parametrize(("adapter", "key"), [(a, k) for a, keys in WAITS.items() for k in keys])
@pytest.mark.parametrize("value", [INF, 1e300, MAX_SECONDS * 2])
def test_a_wait_past_a_week_or_infinite_is_refused(adapter: str, key: str, value: float) -> None:
    one_line(BUILDERS[adapter], key, value)


@pytest.mark.parametrize(("adapter", "key"), [(a, k) for a, keys in WAITS.items() for k in keys])
def test_a_wait_of_a_week_is_taken(adapter: str, key: str) -> None:
    BUILDERS[adapter](**{key: MAX_SECONDS})


@pytest.mark.parametrize(("adapter", "key"), sorted(ATTEMPTS.items()))
def test_attempts_are_bounded(adapter: str, key: str) -> None:
    one_line(BUILDERS[adapter], key, MAX_ATTEMPTS + 1)
    BUILDERS[adapter](**{key: MAX_ATTEMPTS})


BYTES = {"ces": "max_turn_bytes", "a2a": "max_response_bytes", "http": "max_response_bytes"}


@pytest.mark.parametrize(("adapter", "key"), sorted(BYTES.items()))
def test_a_reply_bound_past_a_gibibyte_is_refused(adapter: str, key: str) -> None:
    one_line(BUILDERS[adapter], key, MAX_RESPONSE_BYTES + 1)
    BUILDERS[adapter](**{key: MAX_RESPONSE_BYTES})


COUNTS = [("a2a", "max_events"), ("ces", "max_turn_messages"), ("ces", "max_pages")]


@pytest.mark.parametrize(("adapter", "key"), COUNTS)
def test_a_count_past_a_million_is_refused(adapter: str, key: str) -> None:
    one_line(BUILDERS[adapter], key, MAX_ITEMS + 1)
    BUILDERS[adapter](**{key: MAX_ITEMS})


TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_tau_run_says_it_in_one_line_before_calling_the_agent(tmp_path: Path) -> None:
    """Through the installed `tau`: not a DEADLINE_EXCEEDED from the pre-flight."""
    done = subprocess.run(
        [
            str(TAU), "run", "--env", "retail", "--agent-strategy", "dialogflow-cx",
            "--agent-option", "agent_id=projects/p/locations/global/agents/a",
            "--agent-option", "emulator=127.0.0.1:9", "--agent-option", "timeout=1e300",
            "--user-strategy", "scripted", "--task-ids", "0", "--log-dir", str(tmp_path),
        ],
        capture_output=True, text=True, env=ENV, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "error: agent strategy 'dialogflow-cx': dialogflow: timeout must be <= 604800, got '1e300'"
    ]
