"""A run whose files cannot be written (a full disk, a file size limit) stops, keeps
every line it wrote, and says so in one line with the command that continues it.

Through the installed `tau` in a subprocess, the full disk made by `RLIMIT_FSIZE`
(`ulimit -f`: a write past the limit fails with EFBIG, as on a full disk with ENOSPC).
The log is the source of truth: `--resume` afterwards completes the run, every
(task, trial) exactly once."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau_bench import results_log
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import ResultsLog, read_log
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TASKS = 20
LOG_LIMIT = 100_000  # bytes: the header and a handful of retail episodes


def tau(*args: str | Path, max_file_size: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # `ulimit -f`: a write past it fails with EFBIG (File too large)
        if max_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_size, max_file_size))

    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
        preexec_fn=limit,
    )


def run_args(log_dir: Path) -> list[str | Path]:
    return [
        "run",
        "--env",
        "retail",
        "--agent-strategy",
        "oracle",
        "--user-strategy",
        "scripted",
        "--task-ids",
        f"0-{TASKS - 1}",
        "--max-concurrency",
        "2",
        "--log-dir",
        log_dir,
        "--run-name",
        "full",
        "--quiet",
    ]


def log_lines(log: Path) -> list[dict[str, Any]]:
    """Every line of the log, each a whole JSON document (a half line fails here)."""
    return [json.loads(line) for line in log.read_bytes().split(b"\n") if line]


def episode_keys(log: Path) -> list[tuple[int, int]]:
    return [(d["task_id"], d["trial"]) for d in log_lines(log) if d["type"] == "episode"]


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    return lines[0]


def test_a_log_that_cannot_be_written_stops_the_run_and_resume_completes_it(tmp_path):
    log = tmp_path / "full.jsonl"
    proc = tau(*run_args(tmp_path), max_file_size=LOG_LIMIT)
    line = one_error_line(proc)
    assert line.startswith(f"error: cannot write {log}: File too large; the run was stopped")
    assert line.endswith(f"continue with: tau run --resume {log}")
    saved = episode_keys(log)  # whole lines only: nothing half-written is left
    assert 0 < len(saved) < TASKS and len(saved) == len(set(saved))
    assert log.stat().st_size <= LOG_LIMIT
    summary = json.loads((tmp_path / "full.summary.json").read_text())
    assert summary["log_write_error"].startswith(f"cannot write {log}: File too large")

    resumed = tau("run", "--resume", log, "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    keys = episode_keys(log)
    assert keys[: len(saved)] == saved  # what was written before is still there
    assert sorted(keys) == [(t, 0) for t in range(TASKS)]  # each once: none lost, none twice
    results = json.loads((tmp_path / "full.json").read_text())
    assert len(results) == TASKS


def test_results_that_cannot_be_written_are_one_line_and_the_log_is_kept(tmp_path):
    blocker = tmp_path / "full.json.tmp"
    blocker.mkdir()  # where the results file is written first: it cannot be
    log = tmp_path / "full.jsonl"
    proc = tau(*run_args(tmp_path))
    line = one_error_line(proc)
    assert line.startswith(f"error: cannot write {tmp_path / 'full.json'}: Is a directory;")
    assert f"the results log {log} holds every finished episode" in line
    assert line.endswith(f"continue with: tau run --resume {log}")
    assert sorted(episode_keys(log)) == [(t, 0) for t in range(TASKS)]
    assert json.loads((tmp_path / "full.summary.json").read_text())["episodes_done"] == TASKS

    blocker.rmdir()
    resumed = tau("run", "--resume", log, "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert len(json.loads((tmp_path / "full.json").read_text())) == TASKS
    assert sorted(episode_keys(log)) == [(t, 0) for t in range(TASKS)]


# -- the log itself: a failed write gives its lines back ---------------------------------


def record(task_id: int) -> EpisodeRecord:
    return EpisodeRecord(task_id=task_id, trial=0, reward=1.0)


class FailingFsync:
    """`os.fsync` failing like a full disk for the next `times` calls."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.real = os.fsync

    def __call__(self, fd: int) -> None:
        if self.times > 0:
            self.times -= 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real(fd)


@pytest.mark.parametrize("failures", [1, 1_000])
async def test_lines_of_a_failed_write_go_back_to_the_queue(tmp_path, monkeypatch, failures):
    """A write that fails is taken back whole and its lines stay queued: `aclose` tries
    them once more (a disk with room again gets them all, once each) and then says how
    many are still unwritten."""
    path = tmp_path / "r.jsonl"
    log = ResultsLog.create(path, {"run_name": "r"})
    log.append(record(0))
    await asyncio_drain(log)
    monkeypatch.setattr(results_log.os, "fsync", FailingFsync(failures))
    log.append(record(1))
    await asyncio_drain(log)
    assert log.failure is not None
    log.append(record(2))  # queued only, after the failure
    with pytest.raises(results_log.LogWriteError) as caught:
        await log.aclose()
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    written = sorted(read_log(path).records)
    if failures == 1:  # the retry at close got through
        assert caught.value.unsaved == 0
        assert written == [(0, 0), (1, 0), (2, 0)]
        assert [d.get("task_id") for d in log_lines(path)] == [None, 0, 1, 2]
    else:
        assert caught.value.unsaved == 2
        assert written == [(0, 0)]
        assert [d.get("task_id") for d in log_lines(path)] == [None, 0]


async def asyncio_drain(log: ResultsLog) -> None:
    """Until the background writer has handled everything queued so far."""
    flusher = log._flusher
    if flusher is not None:
        await flusher
