"""An eval's runs share a disk: when one run's log cannot be written (a full disk), no run
of the eval starts another episode, as `tau run` stops (the circuit breaker's way: the
episodes running finish and are saved, none is cancelled), the report says the eval was
interrupted, and `RunWriteError` is raised once every file that could be written was."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tau_bench.config import eval_config_from_mapping
from tau_bench.results_log import ResultsLog, read_log
from tau_bench.runner import prepare_eval, run_eval
from tau_bench.runner.core import RunWriteError
from tests.conftest import DATA_DIR

TASKS = 40


def failing_for(name: str):
    """`ResultsLog._append_lines` failing like a full disk for the log called `name`."""
    real = ResultsLog._append_lines

    def append(self: ResultsLog, data: bytes) -> None:
        if self.path.name == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, data)

    return append


async def test_a_log_that_cannot_be_written_stops_every_run_of_the_eval(tmp_path, monkeypatch):
    cfg = eval_config_from_mapping(
        {
            "name": "disk",
            "env": "retail",
            "agent-strategy": "oracle",
            "user-strategy": "scripted",
            "user-models": ["a/one", "b/two"],
            "task-ids": f"0-{TASKS - 1}",
            "max-concurrency": 2,
            "data-dir": str(DATA_DIR),
            "log-dir": str(tmp_path),
        }
    )
    plans = prepare_eval(cfg)
    monkeypatch.setattr(ResultsLog, "_append_lines", failing_for("disk__a_one.jsonl"))
    with pytest.raises(RunWriteError) as caught:
        await run_eval(cfg, plans)
    assert str(caught.value).startswith(f"cannot write {tmp_path / 'disk' / 'disk__a_one.jsonl'}")

    folder: Path = tmp_path / "disk"
    one = json.loads((folder / "disk__a_one.summary.json").read_text())
    assert one["log_write_error"].startswith("cannot write ")
    assert read_log(folder / "disk__a_one.jsonl").records == {}
    two = json.loads((folder / "disk__b_two.summary.json").read_text())
    assert two["interrupted"] is False  # stopped, not cancelled: what ran finished
    assert "log_write_error" not in two
    saved = read_log(folder / "disk__b_two.jsonl").records
    assert len(saved) == two["episodes_done"] < TASKS  # no new episode after the failure
    report = json.loads((tmp_path / "disk.eval.json").read_text())
    assert report["interrupted"] is True
