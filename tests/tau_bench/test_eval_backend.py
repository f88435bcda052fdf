"""`tau eval --backend ray --workers N --llm-path ...`: every user model's run gets them
(flags or the eval file's keys), and a bad value is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli import eval_cmd
from tau_bench.cli.app import app


def write(path: Path, extra: str = "") -> Path:
    path.write_text(
        "user-models: [openai/a, openai/b]\nenv: airline\nagent-strategy: oracle\n" + extra
    )
    return path


def invoke(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[list[Any], Any]:
    seen: list[Any] = []
    monkeypatch.setattr(eval_cmd, "_execute", lambda cfg, **kw: seen.append(cfg))
    return seen, CliRunner().invoke(app, ["eval", *args])


def test_flags_reach_every_user_models_run(monkeypatch, tmp_path):
    config = write(tmp_path / "eval.yaml")
    seen, result = invoke(
        monkeypatch,
        "--config",
        str(config),
        "--backend",
        "ray",
        "--workers",
        "2",
        "--llm-path",
        "direct",
    )
    assert result.exit_code == 0, result.output
    for model in ("openai/a", "openai/b"):
        run = seen[0].run_config(model)
        assert (run.backend, run.workers, run.llm_path) == ("ray", 2, "direct")


def test_the_eval_file_sets_them_too(monkeypatch, tmp_path):
    config = write(tmp_path / "eval.yaml", "backend: ray\nray-address: ray://head:10001\n")
    seen, result = invoke(monkeypatch, "--config", str(config))
    assert result.exit_code == 0, result.output
    run = seen[0].run_config("openai/a")
    assert (run.backend, run.ray_address) == ("ray", "ray://head:10001")


def test_a_bad_backend_is_one_line(monkeypatch, tmp_path):
    config = write(tmp_path / "eval.yaml")
    seen, result = invoke(monkeypatch, "--config", str(config), "--backend", "spark")
    assert result.exit_code == 2 and seen == []
    assert result.output.strip().startswith("error: backend")
    assert "Traceback" not in result.output
