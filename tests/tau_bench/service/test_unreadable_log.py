"""A finished run whose log the reader refuses is an explicit error, never an empty answer.

Was: a completed run whose records the reader skipped (a cost of Infinity) gave `/scores`
a 200 with 0 bytes, its trajectory a 404 and `/report` a 404 "no finished episode yet"."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tau_bench.service import artifacts

from .conftest import finished, submit


def _spoil(log: Path) -> None:
    """Every episode line made unreadable (a number that is not finite)."""
    lines = log.read_text().splitlines()
    spoiled = [re.sub(r'"reward": [0-9.]+', '"reward": Infinity', line) for line in lines]
    assert spoiled != lines
    log.write_text("\n".join(spoiled) + "\n")


async def test_an_unreadable_log_is_an_error_naming_no_server_path(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    run_id = await submit(client, task_ids=[13])
    assert (await finished(client, run_id))["status"] == "completed"
    (log,) = (tmp_path / "state" / "runs" / run_id).glob("*.jsonl")
    _spoil(log)
    for path in ("scores", "trajectories/13", "report"):
        response = await client.get(f"/runs/{run_id}/{path}")
        assert response.status_code == 500, (path, response.status_code, response.text)
        detail = response.json()["detail"]
        assert detail.startswith("the run's log has 1 line(s) the reader refuses"), detail
        assert str(tmp_path) not in detail


def test_a_line_torn_by_a_crash_and_run_again_is_no_loss(tmp_path: Path) -> None:
    """A resume re-runs the episode whose line a crash cut short: the log reads."""
    run_id = "0" * 32
    header = '{"type": "header", "format": "tau-adapters-run/1"}\n'
    log = tmp_path / "run.jsonl"
    log.write_text(header + '{"type": "epi\n')
    try:
        artifacts.records(log, expected=1)
    except artifacts.UnreadableLog as exc:
        assert str(exc).startswith("the run's log has 1 line(s) the reader refuses")
    else:
        raise AssertionError("a finished run's unreadable log read as empty")
    assert artifacts.records(log) == []  # a run not finished (it resumes): nothing yet
    assert run_id
