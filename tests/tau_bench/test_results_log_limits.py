"""Reading a results log is bounded: `--resume` of something that is not a regular file
(a FIFO, which would wait for a writer forever; `/dev/zero`, which never ends) is one
line and exit 2, and a log is read line by line within `MAX_LOG_SIZE` and
`MAX_LINE_SIZE` rather than whole into memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench import results_log
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import LogFileError, ResultsLog, encode_record, read_log
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def resume(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), "run", "--resume", str(target)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,  # the test's own bound: a FIFO used to be waited on forever
    )


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_resume_of_what_is_not_a_regular_file_is_one_line(tmp_path, kind):
    if kind == "fifo":
        target = tmp_path / "run.jsonl"
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    proc = resume(target)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (
        proc.stderr
        == f"error: cannot resume: {target} is not a regular file (a results log is a <run-name>.jsonl file)\n"
    )


def write_log(path: Path, task_ids: list[int]) -> None:
    log = ResultsLog.create(path, {"run_name": "r"})
    log._fh.close()
    with path.open("ab") as fh:
        for task_id in task_ids:
            fh.write(encode_record(EpisodeRecord(task_id=task_id, trial=0, reward=1.0)))


def test_a_line_longer_than_the_cap_is_skipped_without_being_held(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    write_log(path, [0])
    long = json.dumps({"type": "episode", "task_id": 1, "trial": 0, "pad": "x" * 5000})
    with path.open("a") as fh:
        fh.write(long + "\n")
    write_log_tail = encode_record(EpisodeRecord(task_id=2, trial=0, reward=0.0))
    with path.open("ab") as fh:
        fh.write(write_log_tail)
    monkeypatch.setattr(results_log, "MAX_LINE_SIZE", 1000)
    monkeypatch.setattr(results_log, "_CHUNK", 64)
    contents = read_log(path)
    assert sorted(contents.records) == [(0, 0), (2, 0)]
    assert contents.bad_lines == 1


def test_a_log_larger_than_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    write_log(path, [0, 1])
    monkeypatch.setattr(results_log, "MAX_LOG_SIZE", path.stat().st_size - 1)
    with pytest.raises(LogFileError, match="is larger than"):
        read_log(path)


@pytest.mark.parametrize(("tail", "kept"), [(b'{"type": "note"}', True), (b'{"type": "epi', False)])
def test_reopen_reads_only_the_last_line(tmp_path, monkeypatch, tail, kept):
    """The last line without its newline is kept when whole, dropped when cut: found by
    reading backwards a chunk at a time (here smaller than a line), not the whole log."""
    path = tmp_path / "r.jsonl"
    write_log(path, [0, 1])
    before = path.read_bytes()
    with path.open("ab") as fh:
        fh.write(tail)
    monkeypatch.setattr(results_log, "_CHUNK", 7)
    log = ResultsLog.reopen(path, {"at": "now"})
    log._fh.close()
    data = path.read_bytes()
    expected = before + (tail + b"\n" if kept else b"")
    assert data.startswith(expected)
    assert json.loads(data[len(expected) :])["type"] == "resume"
