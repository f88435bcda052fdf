"""`tau http init|check|presets` and `tau tools serve|openapi`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.http.config_load import load_config
from adapters.http.harness import cli
from tau_bench.cli import tools_cmd as tools_cli
from tau_bench.cli.errors import UserError

runner = CliRunner()


@pytest.mark.parametrize("preset", ["openai-chat", "rasa-rest", "generic-json"])
def test_init_writes_a_loadable_starter_config(tmp_path: Path, preset: str) -> None:
    out = tmp_path / "bot.yaml"
    result = runner.invoke(cli.app, ["init", "--preset", preset, "-o", str(out)])
    assert result.exit_code == 0, result.output
    env = {"BOT_URL": "http://b", "BOT_TOKEN": "t-1234", "OPENAI_API_KEY": "sk-1234"}
    assert load_config(out, environ=env).config.base_url.startswith("http")
    again = runner.invoke(cli.app, ["init", "--preset", preset, "-o", str(out)])
    assert isinstance(again.exception, UserError) and "exists; pass --force" in str(again.exception)


def test_init_prints_to_stdout_and_check_summarises(tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["init", "--preset", "rasa-rest"])
    assert result.exit_code == 0 and "/webhooks/rest/webhook" in result.output
    path = tmp_path / "rasa.yaml"
    path.write_text(result.output)
    checked = runner.invoke(cli.app, ["check", str(path)])
    assert checked.exit_code == 0 and "session mode : client" in checked.output
    listed = runner.invoke(cli.app, ["presets"])
    assert [line.split()[0] for line in listed.output.splitlines()] == [
        "openai-chat",
        "rasa-rest",
        "generic-json",
    ]


def test_cli_user_errors_are_one_line_with_nonzero_exit(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("base_url: http://x\nmessage: {methd: POST}\nresponse: {messages: a}\n")
    env = {**os.environ, "TAU_BENCH_DATA": os.environ.get("TAU_BENCH_DATA", "")}
    for args, expected in [
        (["http", "init", "--preset", "nope"], "error: unknown preset 'nope'"),
        (["http", "check", str(bad)], f"error: {bad}: message.methd: unknown key"),
        (["tools", "serve", "--env", "retail"], "error: pass --token"),
    ]:
        env.pop("TAU_TOOLS_TOKEN", None)
        proc = subprocess.run(
            [sys.executable, "-m", "tau_bench.cli.app", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.strip() == expected or proc.stderr.strip().startswith(expected), (
            proc.stderr
        )
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_tools_openapi_command(tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    result = runner.invoke(
        tools_cli.app,
        ["openapi", "--env", "airline", "-o", str(out), "--server-url", "https://t.example"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["servers"] == [{"url": "https://t.example"}]
    assert "/sessions/{session_id}/tools/book_reservation" in doc["paths"]
