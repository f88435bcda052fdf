"""`tau bench runner`'s output: the scaling of every multi-worker row in full under the
table (the table's narrow column can give only its range)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.benchmarks import runner as bench
from tau_bench.cli.app import app

from ...conftest import DATA_DIR
from ..benchmarks.test_runner_bench import COMPLETE_ROW

LEVEL = {"concurrency": 20, "episodes": 100}


def test_bench_runner_prints_each_round_of_the_scaling(monkeypatch: pytest.MonkeyPatch) -> None:
    rows: list[dict[str, Any]] = [
        {**COMPLETE_ROW, **LEVEL, "stack": "direct ray x1", "backend": "ray", "workers": 1},
        {
            **COMPLETE_ROW,
            **LEVEL,
            "stack": "direct ray x2",
            "backend": "ray",
            "workers": 2,
            "scaling": 1.5,
            "efficiency": 0.75,
            "scaling_rounds": [1.25, 1.5, 1.75],
        },
    ]
    monkeypatch.setattr(bench, "run_runner_benchmark", lambda *a, **k: rows)
    argv = ["bench", "runner", "--levels", "20:100", "--stack", "direct", "--backend", "ray"]
    done = CliRunner().invoke(app, [*argv, "--data-dir", str(DATA_DIR)])
    assert done.exit_code == 0, done.output
    # ":100:" is a rich emoji code: the level must print as typed, not as a picture.
    line = "direct ray x2 at 20:100: 1.50x the steady calls/s of ray x1 (75 % efficiency)"
    assert f"{line}, median of rounds 1.25 / 1.50 / 1.75\n" in done.output
    assert "ray x1 at" not in done.output  # the one-worker row is the base, not a line
