"""Run settings from files and flags: hostile or mistaken values meet one line and exit 2
through the installed `tau` (never a traceback, a hang, or a silently different run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tau_adapters.jsonsafe import MAX_VALUES
from tau_bench.config import RunConfigError, build_config
from tau_bench.config.layers import config_from_mapping, read_yaml_mapping
from tests.conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
ORACLE = ["--agent-strategy", "oracle", "--user-strategy", "scripted", "--env", "airline"]


def _tau(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, *args, "--data-dir", str(DATA_DIR), "--log-dir", str(cwd / "logs")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def _one_line(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr


def _alias_bomb(levels: int) -> str:
    """A "billion laughs" mapping: 10**levels strings once its aliases are expanded."""
    lines = ["agent-options:", '  a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels + 1):
        lines.append(f"  a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_anything_walks_it(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(_alias_bomb(9))  # 10**9 values expanded; a few hundred bytes on disk
    _one_line(_tau("run", *ORACLE, "--config", str(config), cwd=tmp_path), "more than 100,000")


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    config = tmp_path / "ok.yaml"
    config.write_text("defaults: &d {a: 1}\nagent-options: {x: *d, y: *d}\n")
    assert read_yaml_mapping(config)["agent-options"] == {"x": {"a": 1}, "y": {"a": 1}}
    with pytest.raises(RunConfigError, match=f"agent-options.a5: more than {MAX_VALUES:,} values"):
        config.write_text(_alias_bomb(5))  # 10**5 strings plus their lists
        read_yaml_mapping(config)


def test_a_config_nested_past_the_parsers_recursion_limit(tmp_path: Path) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text("agent-options: {x: " + "[" * 5000 + "]" * 5000 + "}\n")
    _one_line(_tau("run", *ORACLE, "--config", str(config), cwd=tmp_path), "nested too deep")


@pytest.mark.parametrize("value", ["' '", '""', "[]"])
def test_an_empty_task_selection_is_an_error_not_the_whole_split(
    tmp_path: Path, value: str
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"task-ids: {value}\n")
    _one_line(_tau("run", *ORACLE, "--config", str(config), cwd=tmp_path), "selects no task")
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").iterdir())


def test_an_empty_task_ids_flag_is_an_error(tmp_path: Path) -> None:
    proc = _tau("run", *ORACLE, "--task-ids", " ", cwd=tmp_path)
    _one_line(proc, "selects no task")


@pytest.mark.parametrize("flag", ["--temperature", "--episode-timeout", "--turn-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_are_refused(tmp_path: Path, flag: str, value: str) -> None:
    proc = _tau("run", *ORACLE, "--task-ids", "0", flag, value, cwd=tmp_path)
    _one_line(proc, "finite number")


@pytest.mark.parametrize("limit", [".inf", ".nan", "2.7", "true", "five"])
def test_a_provider_limit_is_a_whole_number(tmp_path: Path, limit: str) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"provider-limit: {{openai: {limit}}}\n")
    _one_line(_tau("run", *ORACLE, "--config", str(config), cwd=tmp_path), "must be an integer")


def test_whole_provider_limits_in_any_spelling() -> None:
    mapping = {"provider_limit": {"openai": 5, "anthropic": "6", "gemini": 7.0}}
    assert config_from_mapping(mapping)["provider_limits"] == {
        "openai": 5,
        "anthropic": 6,
        "gemini": 7,
    }


def test_the_files_a_run_names_are_absolute_and_a_recorded_spelling_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tau_bench.config import absolute_paths

    monkeypatch.chdir(tmp_path)
    config = build_config(
        {
            "env": "airline",
            "agent_strategy": "http",
            "agent_options": {"http_config": "./bot.yaml"},
            "data_dir": "data",
            "few_shot_displays_path": "shots.jsonl",
        }
    )
    fresh = absolute_paths(config, {})
    assert fresh.agent_options["http_config"] == str(tmp_path / "bot.yaml")
    assert fresh.data_dir == str(tmp_path / "data")
    assert fresh.few_shot_displays_path == str(tmp_path / "shots.jsonl")
    # A log from before kept `bot.yaml` as typed: the same file keeps that spelling (and
    # so the log's fingerprint); another file is absolute, and a difference.
    old = {"agent_options": {"http_config": "bot.yaml"}, "few_shot_displays_path": "x.jsonl"}
    resumed = absolute_paths(config, old)
    assert resumed.agent_options["http_config"] == "bot.yaml"
    assert resumed.few_shot_displays_path == str(tmp_path / "shots.jsonl")
