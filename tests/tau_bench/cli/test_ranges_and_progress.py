"""`--task-ids 0-4 7 9-12` (flags, YAML) and the progress lines of a run whose stderr is
not a terminal, through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tau_bench.config import RunConfig
from tests.conftest import DATA_DIR
from tests.tau_bench.cli.run_parsing import parsed_run

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
ORACLE = ["--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]


def _parse(monkeypatch, *args: str) -> tuple[RunConfig | None, str]:
    config, result = parsed_run(monkeypatch, *args)
    return config, result.output


def test_ranges_on_the_command_line_and_in_yaml(monkeypatch, tmp_path: Path) -> None:
    cfg, out = _parse(monkeypatch, "--task-ids", "0-4", "7", "9-12")
    assert cfg is not None, out
    assert cfg.task_ids == [0, 1, 2, 3, 4, 7, 9, 10, 11, 12]
    cfg, out = _parse(monkeypatch, "--env", "retail,airline", "--task-ids", "retail/1-2,13")
    assert cfg is not None and cfg.task_ids == ["retail/1", "retail/2", 13], out

    for text in ('task-ids: "0-4 7 9-12"\n', "task-ids: [0-4, 7, 9-12]\n"):
        (tmp_path / "run.yaml").write_text(text)
        cfg, out = _parse(monkeypatch, "--config", str(tmp_path / "run.yaml"))
        assert cfg is not None and cfg.task_ids == [0, 1, 2, 3, 4, 7, 9, 10, 11, 12], out


def test_a_backwards_range_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(TAU), "run", *ORACLE, "--task-ids", "4-2", "--log-dir", str(tmp_path)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: --task-ids expects integers, ranges (0-4) or DOMAIN/ID, got '4-2': "
        "task range '4-2' ends before it starts"
    ]
    assert not list(tmp_path.iterdir())


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    args = [*ORACLE, "--task-ids", "0-2", "13", "--num-trials", "2", "--log-dir", str(tmp_path)]
    proc = subprocess.run(
        [str(TAU), "run", *args, "--run-name", "p"],
        env={**ENV, "TAU_PROGRESS_EVERY": "3"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    ran = sorted((e["task_id"], e["trial"]) for e in json.loads((tmp_path / "p.json").read_text()))
    assert ran == [(t, k) for t in (0, 1, 2, 13) for k in (0, 1)]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("episodes ")]
    # every 3 episodes, and the last one
    assert [line.split(" · ")[0] for line in lines] == [
        "episodes 3/8 (38%)",
        "episodes 6/8 (75%)",
        "episodes 8/8 (100%)",
    ], proc.stderr
    assert lines[-1].split(" · ")[1:3] == ["pass 100.0%", "errors 0"]
    assert "\r" not in proc.stderr and "━" not in proc.stderr  # no bar redraws in a log

    quiet = subprocess.run(
        [str(TAU), "run", *args, "--run-name", "q", "--quiet"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert quiet.returncode == 0 and "episodes " not in quiet.stderr, quiet.stderr
