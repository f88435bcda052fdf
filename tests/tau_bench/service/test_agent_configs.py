"""`tau serve --agent-configs FILE`: the operator registers the agents requests may name."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tau_bench.cli.serve_cmd import registered_agents

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")


def test_the_file_is_read_and_checked_like_run_configs(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        "steady:\n  agent_strategy: oracle\n"
        "emulated:\n  agent-strategy: decibel\n  agent-id: a\n  project-id: p\n"
        "  emulator: 127.0.0.1:1\n"
    )
    agents = registered_agents(path)
    assert agents["steady"]["agent_strategy"] == "oracle"
    assert agents["emulated"]["agent_strategy"] == "decibel"


def test_a_bad_entry_stops_the_server_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("broken:\n  agent_strategy: decibel\n  agnet_id: typo\n")
    proc = subprocess.run(
        [TAU, "serve", "--no-auth", "--port", "0", "--agent-configs", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--agent-configs: broken: agnet_id: unknown setting" in proc.stderr


def test_an_entry_with_a_bad_option_or_a_server_path_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agents.yaml"
    for text, message in (
        (
            "bad:\n  agent_strategy: a2a\n  agent_url: ftp://x\n",
            "error: --agent-configs: bad: a2a: option agent_url: must be an http(s) URL, "
            "got 'ftp://x'\n",
        ),
        (
            "bad:\n  agent_strategy: oracle\n  log-dir: /tmp/elsewhere\n",
            "error: --agent-configs: bad: log_dir: set by the server, not by a config\n",
        ),
    ):
        path.write_text(text)
        with pytest.raises(SystemExit) as info:
            registered_agents(path)
        assert info.value.code == 2
        assert capsys.readouterr().err == message
