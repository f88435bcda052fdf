"""Loading a results log holds no line longer than `results_log.MAX_LINE_SIZE` (lowered
here): one is a bad line, skipped and counted as `read_log` counts it, never read whole
into memory nor shown back; the rest of the log loads. Memory is measured by
tracemalloc, with the cap and the read chunk far below the long line's size."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from tau_bench import results_log
from tau_bench.analysis.loading import load_run, malformed_line
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import ResultsLog, encode_record

CAP = 64 * 1024
LONG = 8 * 1024 * 1024  # the long line: 128 times the cap


@pytest.fixture(autouse=True)
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results_log, "MAX_LINE_SIZE", CAP)
    monkeypatch.setattr(results_log, "_CHUNK", CAP)


def _log(path: Path, long_line: bytes, *, last: bool = False) -> Path:
    """A log: header, task 0, `long_line`, then task 2 (unless `last`)."""
    log = ResultsLog.create(path, {"run_name": "r", "config": {}})
    log._fh.close()
    with path.open("ab") as fh:
        fh.write(encode_record(EpisodeRecord(task_id=0, trial=0, reward=1.0)))
        fh.write(long_line)
        if not last:
            fh.write(encode_record(EpisodeRecord(task_id=2, trial=0, reward=0.0)))
    return path


def _peak(load: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        return load(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BAD_RECORD = json.dumps({"type": "episode", "task_id": 1, "trial": 0, "reward": "x" * LONG})
LINES = {
    # a whole JSON record whose field is wrong: refused by name when it is short
    "bad-record": BAD_RECORD.encode() + b"\n",
    "not-json": b"y" * LONG + b"\n",
}


@pytest.mark.parametrize("line", LINES.values(), ids=LINES.keys())
def test_a_line_past_the_cap_is_a_bad_line_and_the_rest_loads(tmp_path: Path, line: bytes) -> None:
    path = _log(tmp_path / "r.jsonl", line)
    run, peak = _peak(lambda: load_run(path))
    assert [r.task_id for r in run.records] == [0, 2]  # type: ignore[attr-defined]
    assert run.bad_lines == 1 and not run.unfinished_line  # type: ignore[attr-defined]
    assert run.unreadable_note == f"{path}: 1 unreadable line(s) skipped"  # type: ignore[attr-defined]
    assert peak < LONG / 4, f"{peak} bytes held for a line of {LONG}"
    assert malformed_line(path) is None


def test_a_cut_off_last_line_past_the_cap_is_unfinished(tmp_path: Path) -> None:
    path = _log(tmp_path / "r.jsonl", BAD_RECORD[: LONG // 2].encode(), last=True)
    run, peak = _peak(lambda: load_run(path))
    assert [r.task_id for r in run.records] == [0]  # type: ignore[attr-defined]
    assert run.bad_lines == 1 and run.unfinished_line  # type: ignore[attr-defined]
    assert peak < LONG / 8, f"{peak} bytes held for a line of {LONG // 2}"


def test_a_short_malformed_record_is_still_refused_by_line(tmp_path: Path) -> None:
    short = json.dumps({"type": "episode", "task_id": 1, "trial": 0, "reward": "x" * 500})
    path = _log(tmp_path / "r.jsonl", short.encode() + b"\n")
    message = malformed_line(path)
    assert message is not None and message.startswith(f"{path} line 3: reward: expected")
    assert len(message) < len(str(path)) + 150  # the value is clipped, not echoed


def test_a_tau_bench_json_file_past_its_cap_is_refused_unread(tmp_path: Path) -> None:
    from tau_bench.analysis.loading import MAX_JSON_SIZE

    path = tmp_path / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1127.json"
    with path.open("wb") as fh:  # sparse: no disk used, and never read
        fh.write(b"[")  # a JSON list, as far as its first bytes tell
        fh.truncate(MAX_JSON_SIZE + 1)
    from tau_bench.analysis.loading import ResultsLoadError

    def refused() -> str:
        with pytest.raises(ResultsLoadError) as caught:
            load_run(path)
        return str(caught.value)

    message, peak = _peak(refused)
    assert "larger than 256 MiB" in str(message)
    assert peak < 1024 * 1024
