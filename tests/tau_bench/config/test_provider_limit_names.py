"""`--provider-limit NAME=N` and YAML `provider-limit: {NAME: N}` give the same mapping,
the name kept as written: it is data (a provider, or the strategy a hosted agent's live
episodes are capped by), not a setting name whose dashes become underscores. Otherwise
`--provider-limit dialogflow-cx=2` would be stored as `dialogflow_cx` and the runner's
lookup by strategy name would leave the `dialogflow-cx` agent uncapped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.config import RunConfig, RunConfigError, build_config, config_from_mapping
from tau_bench.runner.backends.ray import RayBackend
from tests.conftest import DATA_DIR
from tests.tau_bench.cli.run_parsing import parsed_run

TAU = Path(sys.executable).parent / "tau"
STRATEGY = "dialogflow-cx"  # a hosted agent whose registered name has a dash


def _from_command_line(monkeypatch: pytest.MonkeyPatch, *args: str) -> RunConfig:
    """The RunConfig `tau run ARGS` would run (parsed by the real command, not run)."""
    config, result = parsed_run(monkeypatch, *args)
    assert config is not None, result.output
    return config


def test_command_line_and_yaml_keep_the_name_as_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    flags = _from_command_line(
        monkeypatch,
        "--agent-strategy",
        STRATEGY,
        "--provider-limit",
        f"{STRATEGY}=2",
        "--provider-limit",
        "vertex_ai=3",
    )
    config_file = tmp_path / "run.yaml"
    config_file.write_text(
        f"agent-strategy: {STRATEGY}\nprovider-limit: {{{STRATEGY}: 2, vertex_ai: 3}}\n"
    )
    from_yaml = _from_command_line(monkeypatch, "--config", str(config_file))
    config_file.write_text(
        f"agent-strategy: {STRATEGY}\nprovider-limit: ['{STRATEGY}=2', 'vertex_ai=3']\n"
    )
    from_yaml_list = _from_command_line(monkeypatch, "--config", str(config_file))
    expected = {STRATEGY: 2, "vertex_ai": 3}
    assert flags.provider_limits == expected
    assert from_yaml.provider_limits == expected
    assert from_yaml_list.provider_limits == expected


@pytest.mark.parametrize(
    "limit", [[f"{STRATEGY}=2"], {STRATEGY: 2}], ids=["command-line", "yaml-mapping"]
)
def test_the_runners_lookup_by_strategy_finds_the_limit(limit: object) -> None:
    config = build_config(
        config_from_mapping(
            {"agent-strategy": STRATEGY, "max-concurrency": 10, "provider-limit": limit}
        )
    )
    assert config.provider_limits.get(config.agent_strategy) == 2
    assert RayBackend(config, object).in_flight_cap() == 2


def test_one_name_with_two_values_is_refused() -> None:
    with pytest.raises(RunConfigError, match=r"'openai' given twice \(5 and 7\)"):
        config_from_mapping({"provider_limit": ["openai=5", "openai=7"]})
    with pytest.raises(RunConfigError, match="given twice"):
        config_from_mapping({"provider-limit": {"openai": 5, " openai ": 7}})
    same = config_from_mapping({"provider_limit": ["openai=5", "openai=5"]})
    assert same["provider_limits"] == {"openai": 5}


def test_two_values_on_the_command_line_are_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [
            str(TAU),
            "run",
            *("--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"),
            *("--task-ids", "0"),
            *("--provider-limit", "openai=5", "--provider-limit", "openai=7"),
            *("--log-dir", str(tmp_path / "logs")),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "error: provider limit for 'openai' given twice (5 and 7): give it once"
    ]
    assert not (tmp_path / "logs").exists()
