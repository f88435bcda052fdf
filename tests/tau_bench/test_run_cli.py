"""`tau run` / `python run.py`: flag spellings, --task-ids 1 2 3, YAML, errors, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli import run_cmd
from tau_bench.config import RunConfig
from tests.conftest import DATA_DIR
from tests.tau_bench.cli.run_parsing import parsed_run

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@pytest.fixture
def parse(monkeypatch):
    """Parse flags with the real command, capturing the RunConfig instead of running it."""

    def _parse(*args: str) -> tuple[RunConfig | None, Any]:
        return parsed_run(monkeypatch, *args)

    return _parse


def test_both_spellings_give_the_same_config(parse):
    dashed = [
        "--agent-strategy",
        "react",
        "--env",
        "airline",
        "--model",
        "gpt-4o-mini",
        "--model-provider",
        "openai",
        "--user-model",
        "gpt-4o",
        "--user-model-provider",
        "openai",
        "--user-strategy",
        "verify",
        "--task-split",
        "test",
        "--start-index",
        "2",
        "--end-index",
        "9",
        "--num-trials",
        "3",
        "--max-concurrency",
        "8",
        "--temperature",
        "0.5",
        "--seed",
        "3",
        "--shuffle",
        "1",
        "--log-dir",
        "out",
        "--few-shot-displays-path",
        "fs.jsonl",
        "--max-steps",
        "12",
        "--max-tool-calls-per-turn",
        "1",
        "--api-base",
        "http://127.0.0.1:1/v1",
        "--user-api-base",
        "http://127.0.0.1:2/v1",
        "--data-dir",
        "d",
        "--provider-limit",
        "openai=20",
        "--agent-option",
        "timeout=5",
    ]
    underscored = ["--" + a[2:].replace("-", "_") if a.startswith("--") else a for a in dashed]
    a, ra = parse(*dashed)
    b, rb = parse(*underscored)
    assert ra.exit_code == 0 and rb.exit_code == 0, (ra.output, rb.output)
    assert a == b
    assert a is not None
    assert a.agent_strategy == "react" and a.env == "airline" and a.num_trials == 3
    assert a.start_index == 2 and a.end_index == 9 and a.shuffle == 1 and a.max_steps == 12
    assert a.max_tool_calls_per_turn == 1 and a.api_base == "http://127.0.0.1:1/v1"
    assert a.provider_limits == {"openai": 20}
    assert a.agent_options == {"timeout": "5"}


def test_adapter_flags_are_the_adapters_own_in_both_spellings(parse):
    dashed = [
        "--agent-strategy",
        "decibel",
        "--agent-id",
        "ag",
        "--project-id",
        "pr",
        "--gcp-sa-file",
        "sa.json",
        "--session-param",
        "a={user_id}",
        "--session-param=b=x",
        "--session-ttl",
        "600",
        "--task-ids",
        "1",
        "2",
    ]
    underscored = ["--" + a[2:].replace("-", "_") if a.startswith("--") else a for a in dashed]
    a, ra = parse(*dashed)
    b, rb = parse(*underscored)
    assert ra.exit_code == 0 and rb.exit_code == 0, (ra.output, rb.output)
    assert a == b and a is not None
    assert a.task_ids == [1, 2]
    assert a.agent_options == {
        "agent_id": "ag",
        "project_id": "pr",
        "gcp_sa_file": os.path.abspath("sa.json"),  # a file's path is recorded absolute
        "session_params": ["a={user_id}", "b=x"],
        "session_ttl": "600",
    }
    # Another adapter's flag, or one given to an agent that declares none, is refused.
    for strategy in ("decibel", "react"):
        cfg, result = parse("--agent-strategy", strategy, "--http-config", "bot.yaml")
        assert cfg is None and result.exit_code == 2
        assert "No such option: --http-config" in result.output


def test_a_switch_is_turned_off_by_its_no_spelling(parse):
    """`--streaming` could be turned on only: `--streaming false` took `false` as a task id."""
    base = ["--agent-strategy", "a2a", "--a2a-url", "http://127.0.0.1:9", "--task-ids", "1"]
    for off in ("--no-streaming", "--no_streaming", "--streaming=false"):
        cfg, result = parse(*base, off)
        assert result.exit_code == 0, result.output
        assert cfg is not None and cfg.agent_options["streaming"] in (False, "false")
    cfg, result = parse(*base, "--streaming")
    assert cfg is not None and cfg.agent_options["streaming"] is True
    cfg, result = parse(*base, "--no-a2a-url")  # only a switch has a --no- spelling
    assert cfg is None and "No such option: --no-a2a-url" in result.output


def test_task_ids_take_several_values(parse):
    for flag in ("--task-ids", "--task_ids"):
        cfg, result = parse("--model", "openai/gpt-4o", flag, "1", "2", "3", "--env", "airline")
        assert result.exit_code == 0, result.output
        assert cfg is not None and cfg.task_ids == [1, 2, 3] and cfg.env == "airline"
    cfg, _ = parse("--task-ids", "4,5", "--task-ids", "6")
    assert cfg is not None and cfg.task_ids == [4, 5, 6]


def test_short_form_takes_the_provider_from_the_model(parse):
    cfg, _ = parse("--model", "openai/gpt-4o", "--user-model", "anthropic/claude-x")
    assert cfg is not None
    assert cfg.model_provider == "openai" and cfg.user_model_provider == "anthropic"


def test_defaults_are_the_originals(parse):
    cfg, _ = parse()
    assert cfg is not None
    assert (cfg.agent_strategy, cfg.user_strategy, cfg.user_model, cfg.env) == (
        "tool-calling",
        "llm",
        "gpt-4o",
        "retail",
    )
    assert (cfg.task_split, cfg.num_trials, cfg.max_concurrency, cfg.temperature) == (
        "test",
        1,
        1,
        0.0,
    )
    assert (cfg.log_dir, cfg.seed, cfg.max_steps, cfg.end_index) == ("results", 10, 30, -1)


def test_rotation_domains_sampling_and_max_steps_flags(parse):
    cfg, result = parse(
        "--user-models",
        "openai/gpt-4o,anthropic/claude-x",
        "--env",
        "retail,airline",
        "--task-ids",
        "retail/3",
        "12",
        "--max-steps",
        "9",
        "--top-p",
        "0.9",
        "--user_top_p",
        "0.8",
    )
    assert result.exit_code == 0, result.output
    assert cfg is not None
    assert cfg.user_models == ["openai/gpt-4o", "anthropic/claude-x"]
    assert cfg.user_model == "openai/gpt-4o"  # the first, for file names
    assert cfg.user_options(model="anthropic/claude-x")["provider"] == "anthropic"
    assert cfg.envs == ["retail", "airline"] and cfg.task_ids == ["retail/3", 12]
    assert (cfg.max_steps, cfg.top_p, cfg.user_top_p) == (9, 0.9, 0.8)


def test_yaml_user_models_and_max_steps_layer_under_the_command_line(parse, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("user-models: [a/x, b/y]\nmax-steps: 11\nenv: [airline, retail]\n")
    cfg, result = parse("--config", str(path))
    assert result.exit_code == 0, result.output
    assert cfg is not None
    assert cfg.user_models == ["a/x", "b/y"] and cfg.max_steps == 11
    assert cfg.env == "airline,retail"
    cfg, result = parse("--config", str(path), "--max-steps", "5")
    assert cfg is not None and cfg.max_steps == 5  # the command line wins over the file


def test_yaml_config_and_cli_override(parse, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "env: airline\n"
        "agent-strategy: decibel\n"
        "task_ids: [1, 2]\n"
        "num_trials: 4\n"
        "provider_limit: {openai: 3}\n"
        "agent_id: from-yaml\n"
        "agent_options: {location: eu, project_id: p}\n"
        "session_params: ['k=v']\n"
    )
    cfg, result = parse("--config", str(path), "--num-trials", "2", "--project-id", "cli")
    assert result.exit_code == 0, result.output
    assert cfg is not None
    assert cfg.env == "airline" and cfg.agent_strategy == "decibel" and cfg.task_ids == [1, 2]
    assert cfg.num_trials == 2  # the command line wins
    assert cfg.provider_limits == {"openai": 3}
    assert cfg.agent_options == {
        "agent_id": "from-yaml",
        "location": "eu",
        "project_id": "cli",
        "session_params": ["k=v"],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-option", "novalue"], "--agent-option expects KEY=VALUE"),
        (["--provider-limit", "openai=lots"], "must be an integer"),
        (["7"], "unexpected argument '7'"),
        (["--output-format", "xml"], "unknown output format 'xml' (available: tau-bench;"),
        (["--task-ids", "retail-3"], "expects integers, ranges (0-4) or DOMAIN/ID"),
        (["--num-trials", "0"], "num_trials"),
        (["--user-models", "a/x,b/y,a/x"], "'a/x' is listed twice"),
    ],
)
def test_bad_flags_exit_2_with_one_line(parse, args, message):
    cfg, result = parse(*args)
    assert cfg is None
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_yaml_key(parse, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("envv: airline\n")
    cfg, result = parse("--config", str(path))
    assert cfg is None and result.exit_code == 2
    assert "envv: unknown setting" in result.output


def _run_py(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "run.py"), *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_py_help():
    proc = _run_py("--help")
    assert proc.returncode == 0
    assert "--task-ids" in proc.stdout and "--agent-strategy" in proc.stdout


def test_run_py_bad_env_exits_2(tmp_path):
    proc = _run_py("--env", "nope", "--log-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: unknown env 'nope' (available: airline, retail, ")
    assert "tau3/airline, tau3/retail, tau3/mock" in proc.stderr  # the τ³ suite's domains
    assert len(proc.stderr.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def invoke(*args: str) -> Any:
    return CliRunner().invoke(run_cmd.standalone_app(), list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "airline", "--task-split", "train"], "unknown task split 'train'"),
        (["--env", "airline", "--task-ids", "3", "99"], "task id 99 out of range"),
        (["--agent-strategy", "nope"], "unknown agent strategy 'nope'"),
        (["--agent-strategy", "oracle", "--user-strategy", "nope"], "unknown user strategy"),
        (["--tasks-file", "/nonexistent.json"], "cannot read tasks file"),
    ],
)
def test_bad_values_exit_2_before_writing(tmp_path, args, message):
    result = invoke(*args, "--log-dir", str(tmp_path), "--data-dir", str(DATA_DIR))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_tau_run_end_to_end_and_resume(tmp_path):
    tau = Path(sys.executable).parent / "tau"
    args = [
        "run",
        "--env",
        "airline",
        "--agent_strategy",
        "oracle",
        "--user-strategy",
        "scripted",
        "--task-ids",
        "13",
        "0",
        "--num-trials",
        "2",
        "--log-dir",
        str(tmp_path),
        "--run-name",
        "e2e",
        "--max-concurrency",
        "2",
    ]
    proc = subprocess.run([str(tau), *args], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pass^2" in proc.stdout and "1.0000" in proc.stdout
    results = json.loads((tmp_path / "e2e.json").read_text())
    assert sorted((e["task_id"], e["trial"]) for e in results) == [(0, 0), (0, 1), (13, 0), (13, 1)]

    # --resume alone picks the run's configuration up from the log
    result = invoke("--resume", str(tmp_path / "e2e.jsonl"))
    assert result.exit_code == 0, result.output
    assert "4 of 4 episodes done, 0 to run" in result.output

    # ... and an explicit different setting is refused
    result = invoke("--resume", str(tmp_path / "e2e.jsonl"), "--max-steps", "3")
    assert result.exit_code == 2
    assert "configuration differs (max_steps: 30 -> 3)" in result.output


def test_exit_1_when_nothing_could_be_scored(tmp_path):
    from tau_adapters import registry
    from tau_adapters.protocol import AdapterError
    from tau_adapters.registry import SimpleProvider

    class Down:
        async def start(self, session: Any) -> None:
            raise AdapterError("service unavailable", retryable=True)

        async def send(self, turn: Any) -> Any:
            raise AssertionError("never reached")

        async def close(self) -> None:
            pass

    registry.register("always-down", lambda options: SimpleProvider(Down))
    try:
        result = invoke(
            "--env",
            "airline",
            "--agent-strategy",
            "always-down",
            "--user-strategy",
            "scripted",
            "--task-ids",
            "13",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "down",
        )
    finally:
        registry._extra.pop("always-down", None)
    assert result.exit_code == 1, result.output
    assert "1 episode(s) failed with errors" in result.output
    assert f"tau run --resume {tmp_path / 'down.jsonl'}" in result.output
    # the user sees why, not only that it failed
    assert "1 x agent adapter_error: service unavailable" in result.output
