"""The RunConfig `tau run ARGS` would run: parsed by the real command, not run."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli import run_cmd
from tau_bench.config import RunConfig


def parsed_run(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[RunConfig | None, Any]:
    """(the config, or None when the command refused ARGS; click's result)."""
    seen: list[RunConfig] = []
    monkeypatch.setattr(run_cmd, "_execute", lambda cfg, *_: seen.append(cfg))
    result = CliRunner().invoke(run_cmd.standalone_app(), list(args))
    return (seen[0] if seen else None), result
