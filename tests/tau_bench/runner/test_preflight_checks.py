"""Pre-flight checks what a run will need before any episode is paid for: the model of a
built-in LLM agent (most of which hand the runner a plain `SimpleProvider`, so they went
unchecked and every episode failed instead), and an LLM judge's prompts (the offline
τ³ copy has none: every episode ran its agent, then failed to be scored). Through the
installed `tau`, as users meet it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.conftest import require_data

TAU = str(Path(sys.executable).parent / "tau")
TAU3_DATA = require_data()


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tau(*args: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(TAU3_DATA),
        "OPENAI_API_KEY": "sk-test-preflight-000",
    }
    return subprocess.run(
        [TAU, "run", *args, "--user-strategy", "scripted", "--log-dir", str(log_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def _episodes(log_dir: Path) -> int:
    return sum(
        line.startswith('{"type": "episode"')
        for log in log_dir.glob("*.jsonl")
        for line in log.read_text().splitlines()
    )


def test_a_builtin_llm_agent_whose_model_is_unreachable_stops_before_any_episode(
    tmp_path: Path,
) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["--env", "retail", "--task-ids", "0", "1", "--model", "openai/gpt-4o-mini"]
    proc = _tau(*args, "--api-base", base, "--agent-strategy", "tool-calling", log_dir=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pre-flight failed" in proc.stderr and "Traceback" not in proc.stderr
    assert "agent tool-calling model openai/gpt-4o-mini" in proc.stderr
    assert _episodes(tmp_path) == 0


def test_the_oracle_makes_no_model_check_even_with_a_model_given(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["--env", "airline", "--task-ids", "13", "--model", "openai/gpt-4o-mini"]
    proc = _tau(*args, "--api-base", base, "--agent-strategy", "oracle", log_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _episodes(tmp_path) == 1


def test_an_llm_judge_without_its_prompts_stops_before_any_episode(tmp_path: Path) -> None:
    """The offline τ³ copy has no prompts; retail tasks 2 and 3 have NL assertions."""
    assert not (TAU3_DATA / "prompts" / "nl_judge_system_prompt.txt").exists()
    args = ["--env", "tau3/retail", "--task-ids", "2", "3", "--agent-strategy", "oracle"]
    proc = _tau(*args, "--judge-model", "openai/gpt-4o-mini", log_dir=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pre-flight failed" in proc.stderr and "Traceback" not in proc.stderr
    assert "the τ³ prompt 'nl_judge_system_prompt' is missing" in proc.stderr
    assert _episodes(tmp_path) == 0
