"""`LLMConfig.from_options` refuses out-of-range model options in one line, at build time.

Every model-backed agent or user is built through it: `tau run --agent-option`, the
emulators' and reference bots' LLM brains. Before, `timeout=nan` or `-1`, `top_p=7`,
`max_attempts=0` or an `api_base` of `ftp://x` were taken, and failed (or never timed
out) only once the first model call was made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau_adapters.protocol import AdapterConfigError
from tau_bench.llm.config import DEFAULT_TIMEOUT, MAX_ATTEMPTS, LLMConfig
from tests.conftest import DATA_DIR


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"temperature": "nan"},
            "option 'temperature' must be a finite number at least 0, got nan",
        ),
        (
            {"temperature": -0.5},
            "option 'temperature' must be a finite number at least 0, got -0.5",
        ),
        ({"temperature": "inf"}, "option 'temperature' must be a finite number at least 0"),
        ({"timeout": "nan"}, "option 'timeout' must be a finite number above 0 and at most 604800"),
        ({"timeout": 0}, "option 'timeout' must be a finite number above 0 and at most 604800"),
        ({"timeout": "-1"}, "option 'timeout' must be a finite number above 0"),
        ({"timeout": 1e12}, "option 'timeout' must be a finite number above 0 and at most 604800"),
        ({"top_p": 7}, "option 'top_p' must be a finite number above 0 and at most 1, got 7.0"),
        ({"top_p": 0}, "option 'top_p' must be a finite number above 0 and at most 1, got 0.0"),
        (
            {"max_attempts": 0},
            f"option 'max_attempts' must be a whole number from 1 to {MAX_ATTEMPTS}",
        ),
        ({"max_attempts": "100000000"}, "option 'max_attempts' must be a whole number from 1 to"),
        (
            {"max_attempts": "2.5"},
            "option 'max_attempts' must be a whole number from 1 to 100, got '2.5'",
        ),
        (
            {"max_attempts": 2.5},
            "option 'max_attempts' must be a whole number from 1 to 100, got 2.5",
        ),
        (
            {"max_attempts": True},
            "option 'max_attempts' must be a whole number from 1 to 100, got True",
        ),
        ({"max_response_bytes": 0}, "option 'max_response_bytes' must be a number of bytes from 1"),
        (
            {"max_response_bytes": 2**30 + 1},
            "option 'max_response_bytes' must be a number of bytes",
        ),
        ({"api_base": "ftp://x"}, "option 'api_base': expected an http(s) URL"),
        ({"api_base": "localhost:8000/v1"}, "option 'api_base': expected an http(s) URL"),
    ],
)
def test_an_option_out_of_range_is_refused_naming_it(options: dict[str, Any], message: str) -> None:
    with pytest.raises(AdapterConfigError) as raised:
        LLMConfig.from_options({"model": "m", **options})
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_an_api_base_s_secret_is_not_echoed() -> None:
    with pytest.raises(AdapterConfigError) as raised:
        LLMConfig.from_options({"model": "m", "api_base": "http://u:sekrit@h/v1 ?key=abc"})
    assert "sekrit" not in str(raised.value) and "abc" not in str(raised.value)


def test_the_edges_of_each_range_are_taken() -> None:
    config = LLMConfig.from_options(
        {
            "model": "m",
            "temperature": "0",
            "top_p": "1",
            "timeout": 604800,
            "max_attempts": str(MAX_ATTEMPTS),
            "api_base": "https://gateway.example:8443/v1",
            "max_response_bytes": 2**30,
        }
    )
    assert (config.temperature, config.top_p, config.timeout) == (0.0, 1.0, 604800.0)
    assert (config.max_attempts, config.api_base) == (
        MAX_ATTEMPTS,
        "https://gateway.example:8443/v1",
    )
    low = LLMConfig.from_options({"model": "m", "max_attempts": 1, "temperature": 1.5})
    assert (low.max_attempts, low.temperature, low.timeout, low.top_p) == (
        1,
        1.5,
        DEFAULT_TIMEOUT,
        None,
    )


TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def tau(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *args], capture_output=True, text=True, env=ENV, check=False, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "--env", "retail", "--model", "openai/gpt-4o", "--task-ids", "0",
             "--agent-option", "timeout=nan"],
            "error: agent strategy 'tool-calling': option 'timeout' must be a finite number"
            " above 0 and at most 604800, got nan",
        ),
        (
            ["run", "--env", "retail", "--model", "openai/gpt-4o", "--task-ids", "0",
             "--temperature", "-3"],
            "error: temperature: Input should be greater than or equal to 0",
        ),
        (
            ["dialogflow", "emulate", "--port", "0", "--brain", "tool-calling", "--model",
             "gpt-4o", "--api-base", "ftp://x"],
            "error: option 'api_base': expected an http(s) URL such as"
            " http://localhost:8000/v1, not 'ftp://x'",
        ),
        (
            ["ces", "emulate", "--port", "0", "--brain", "tool-calling", "--brain-option",
             "model=gpt-4o", "--brain-option", "temperature=nan"],
            "error: option 'temperature' must be a finite number at least 0, got nan",
        ),
    ],
)  # fmt: skip
def test_the_commands_refuse_it_before_they_start(
    args: list[str], line: str, tmp_path: Path
) -> None:
    done = tau(*args, *(["--log-dir", str(tmp_path)] if args[0] == "run" else []))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [line]
