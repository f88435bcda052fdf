"""What `tau run` does other than its flags say is said on stderr, not done silently: a
resumed run keeps its name, folder and trials whatever `--run-name`, `--log-dir` and
`--num-trials` ask; an explicit run name already taken is written under the next free
one. Through the installed `tau`, where users meet it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
RUN = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]
RUN += ["--task-ids", "13", "--quiet"]


def tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(TAU), *RUN, *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done


def notes(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("note: ")]


def test_a_resume_says_which_flags_it_does_not_use(tmp_path: Path) -> None:
    tau("--log-dir", tmp_path / "runs", "--run-name", "first", "--num-trials", "2")
    log = tmp_path / "runs" / "first.jsonl"
    done = tau(
        "--resume", log, "--run-name", "other", "--log-dir", tmp_path / "elsewhere",
        "--num-trials", "1",
    )  # fmt: skip
    assert notes(done) == [
        "note: run name other is not used when resuming: the run keeps its name first",
        f"note: log dir {tmp_path / 'elsewhere'} is not used when resuming: the run's files "
        f"stay beside its log, in {tmp_path / 'runs'}",
        "note: the log holds 2 trials and all are kept (num trials 1 removes none)",
    ]
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "first.json",
        "first.jsonl",
        "first.summary.json",
    ]


def test_a_resume_with_what_it_uses_says_nothing_more(tmp_path: Path) -> None:
    tau("--log-dir", tmp_path, "--run-name", "first", "--num-trials", "2")
    done = tau(
        "--resume", tmp_path / "first.jsonl", "--run-name", "first", "--log-dir", tmp_path,
        "--num-trials", "2",
    )  # fmt: skip
    assert notes(done) == []
    assert "resuming" in done.stderr


def test_a_run_name_already_taken_is_said(tmp_path: Path) -> None:
    assert notes(tau("--log-dir", tmp_path, "--run-name", "mine")) == []
    done = tau("--log-dir", tmp_path, "--run-name", "mine")
    assert notes(done) == [
        f"note: run name mine is taken in {tmp_path}: this run is written as mine_2"
    ]
    assert (tmp_path / "mine_2.jsonl").is_file()
