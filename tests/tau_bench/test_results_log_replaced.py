"""`read_log(...).replaced`: the attempts of a log that a later line replaced, each
once, and never the last one per (task, trial) (`records` holds those)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau_bench.records import EpisodeRecord
from tau_bench.results_log import LOG_FORMAT, read_log


def line(task: int, trial: int, cost: float, *, error: bool) -> dict[str, Any]:
    record = EpisodeRecord(
        task_id=task,
        trial=trial,
        reward=None if error else 1.0,
        error={"source": "agent", "kind": "agent_unavailable"} if error else None,
        messages=[{"role": "user", "content": "a long trajectory"}],
        user_usage={"cost": cost, "calls": 1},
    )
    return record.to_dict()


def write_log(path: Path, *items: dict[str, Any] | str) -> Path:
    header = {"type": "header", "format": LOG_FORMAT}
    rows = [json.dumps(header), *(x if isinstance(x, str) else json.dumps(x) for x in items)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_every_replaced_attempt_once_and_never_the_latest(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "r.jsonl",
        line(0, 0, 0.1, error=True),
        line(1, 0, 0.2, error=False),
        {"type": "resume", "at": "then", "pending": 1},
        line(0, 0, 0.3, error=True),
        '{"type": "episode", "task_id": 0, "tri',  # a run killed mid-write
        {"type": "resume", "at": "later", "pending": 1},
        line(0, 0, 0.4, error=False),
    )
    contents = read_log(log)
    replaced, latest = contents.replaced, contents.records
    assert [r.user_usage["cost"] for r in replaced] == [0.1, 0.3]
    assert all(r.messages == [] for r in replaced)  # their spend only
    assert contents.bad_lines == 1
    assert sum(r.user_cost for r in [*replaced, *latest.values()]) == pytest.approx(1.0)


def test_a_log_without_resumes_replaced_nothing(tmp_path: Path) -> None:
    log = write_log(tmp_path / "r.jsonl", line(0, 0, 0.1, error=True), line(0, 1, 0.1, error=True))
    assert read_log(log).replaced == []
