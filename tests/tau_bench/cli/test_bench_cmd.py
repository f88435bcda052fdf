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


BOUNDED = [
    (["core", "--repeat", "0"], "--repeat"),  # was a traceback: no median of no samples
    (["core", "--repeat", "99999999"], "--repeat"),
    (["runner", "--latency", "nan"], "--latency"),  # was accepted: a run that never ends
    (["runner", "--latency", "1e9"], "--latency"),
    (["runner", "--levels", "99999999999:1"], "--levels"),  # was a pydantic error block
    (["runner", "--rounds", "0"], "--rounds"),
    (["runner", "--backend", "ray", "--workers", "1,99999"], "--workers"),
    (["sdg", "--samples", "0"], "--samples"),
    (["adapters", "--repeat", "1000"], "--repeat"),
    # an output that cannot be written is said before the benchmark, not after it
    (["core", "--json", "/dev/null"], "--json"),
    (["runner", "--json", "/"], "--json"),
    (["sdg", "--json", "/dev/zero"], "--json"),
    (["adapters", "--json", "/"], "--json"),
]


@pytest.mark.parametrize(("args", "flag"), BOUNDED, ids=[" ".join(a) for a, _ in BOUNDED])
def test_the_installed_tau_bench_checks_what_it_is_asked_first(args: list[str], flag: str) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    tau = Path(sys.executable).parent / "tau"
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [str(tau), "bench", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error: ") and flag in done.stderr, done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
