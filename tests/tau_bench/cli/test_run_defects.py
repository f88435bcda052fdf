"""Bad input to `tau run` meets one clear line and a non-zero exit, never a traceback,
and never a file written where it should not be (the installed console script)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tau_bench.fakes.openai_server import ChatReply, OpenAIServer
from tests.conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
ORACLE = ["--agent-strategy", "oracle", "--user-strategy", "scripted", "--env", "airline"]


def _tau(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def _one_line(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr


def test_a_run_name_cannot_leave_the_log_dir(tmp_path: Path) -> None:
    logs = tmp_path / "a" / "b"
    proc = _tau("run", *ORACLE, "--task-ids", "0", "--log-dir", str(logs), "--run-name", "../../x")
    _one_line(proc, "run_name")
    assert not list(tmp_path.rglob("x*"))


def test_a_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_bytes(b"env: airline\nagent-strategy: \xff\xfe oracle\n")
    _one_line(_tau("run", "--config", str(config)), "not UTF-8")


def test_a_log_dir_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    proc = _tau(
        "run", *ORACLE, "--task-ids", "0", "--data-dir", str(DATA_DIR), "--log-dir", str(blocker)
    )
    _one_line(proc, "cannot write results in")


def test_a_damaged_data_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data, ignore=shutil.ignore_patterns("historical_trajectories"))
    (data / "airline" / "db" / "users.json").write_text('{"broken": ')
    proc = _tau(
        "run", *ORACLE, "--task-ids", "0", "--data-dir", str(data), "--log-dir", str(tmp_path)
    )
    _one_line(proc, "is not valid JSON")


def test_absurd_trial_counts_are_refused_before_any_work(tmp_path: Path) -> None:
    proc = _tau("run", *ORACLE, "--num-trials", str(10**12), "--log-dir", str(tmp_path))
    _one_line(proc, "num_trials")
    proc = _tau(
        "run",
        *ORACLE,
        "--env",
        "airline,retail",
        "--num-trials",
        "10000",
        "--data-dir",
        str(DATA_DIR),
        "--log-dir",
        str(tmp_path),
    )
    _one_line(proc, "episodes in one run")
    assert not list(tmp_path.iterdir())


def test_direct_path_refuses_another_providers_model_before_any_call(tmp_path: Path) -> None:
    """`--llm-path direct` sends OpenAI-format calls only: a model litellm routes to
    another provider is refused at the pre-flight, key check included, and no request
    reaches the OpenAI endpoint in force (where the old code sent it)."""
    model = "anthropic/claude-3-5-haiku-latest"
    logs = tmp_path / "logs"
    with OpenAIServer(lambda request: ChatReply(text="hi")) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-o-1234"}
        env["ANTHROPIC_API_KEY"] = "sk-ant-1234"
        args = ["--env", "airline", "--agent-strategy", "tool-calling", "--model", model]
        args += ["--user-strategy", "scripted", "--llm-path", "direct", "--task-ids", "0"]
        args += ["--data-dir", str(DATA_DIR), "--log-dir", str(logs)]
        proc = subprocess.run(
            [TAU, "run", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        requests = server.stats()["requests"]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: pre-flight failed, no episode was run (--skip-preflight to run anyway):",
        f"  agent tool-calling model {model}: --llm-path direct sends OpenAI-format calls "
        f"only, and {model} goes to litellm provider anthropic: name an OpenAI-compatible "
        "endpoint's model as openai/<name> with its api_base (--api-base, --user-api-base), "
        "or use --llm-path auto",
    ]
    assert requests == 0 and not logs.exists()
