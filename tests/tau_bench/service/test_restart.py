"""A restarted server lists old runs and resumes unfinished ones from their logs."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.service.store import RUNNING, RunStore, StoreError
from tests.tau_bench.service.conftest import (
    Gate,
    finished,
    make_settings,
    reached,
    running_app,
    submit,
)


def log_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_run_stopped_mid_way_resumes_on_the_next_server(tmp_path: Path, gate: Gate) -> None:
    settings = make_settings(tmp_path)
    async with running_app(settings) as client:
        done_before = await submit(client, task_ids=[13])
        await finished(client, done_before)
        run_id = await submit(client, agent_strategy="gated", task_ids=[13, 0, 1])
        await reached(gate)  # task 13 done, task 0 in flight: now the server stops
    row = RunStore(settings.db_path).get(run_id)
    assert row is not None and row.status == "queued"
    assert row.note and "resumes" in row.note

    gate.release.set()  # the agent of the next server does not block
    async with running_app(make_settings(tmp_path)) as client:
        view = await finished(client, run_id)
        assert view["status"] == "completed", view
        assert view["attempts"] == 2
        assert view["progress"] == {"total": 3, "done": 3, "scored": 3, "errors": 0, "passed": 3}
        assert view["summary"]["episodes_run_now"] == 2
        listed = [r["run_id"] for r in (await client.get("/runs")).json()["runs"]]
        assert listed == [run_id, done_before]
        scores = (await client.get(f"/runs/{run_id}/scores")).text.splitlines()
        assert sorted(json.loads(s)["task-id"] for s in scores) == ["task-0", "task-1", "task-13"]

    # Task 13 ran once; task 0 started twice (cut by the stop, then resumed); the same
    # log was continued, not replaced.
    assert gate.started == [13, 0, 0, 1]
    lines = log_lines(Path(str(row.log_path)))
    assert [line["type"] for line in lines] == ["header", "episode", "resume", "episode", "episode"]


async def test_runs_of_a_crashed_server_resume_and_the_queue_goes_on(
    tmp_path: Path, gate: Gate
) -> None:
    settings = make_settings(tmp_path, max_runs=1)
    async with running_app(settings) as client:
        first = await submit(client, agent_strategy="gated", task_ids=[13, 0])
        await reached(gate)
        second = await submit(client, task_ids=[1, 2])
    # A server killed with SIGKILL never gets to write `queued`: the row says running.
    store = RunStore(settings.db_path)
    store.update(first, status=RUNNING, note=None)
    assert store.get(second).status == "queued"  # type: ignore[union-attr]

    gate.release.set()
    async with running_app(make_settings(tmp_path, max_runs=1)) as client:
        one, two = await finished(client, first), await finished(client, second)
        assert (one["status"], two["status"]) == ("completed", "completed")
        assert one["summary"]["episodes_run_now"] == 1 and two["progress"]["passed"] == 2
        assert one["note"] is None and two["attempts"] == 1


def lock_from_another_process(state_dir: Path) -> subprocess.CompletedProcess[str]:
    probe = (
        "import sys; from pathlib import Path\n"
        "from tau_bench.service.store import StoreError, lock_state_dir\n"
        "try:\n    lock_state_dir(Path(sys.argv[1]))\n"
        "except StoreError as exc:\n    print(exc); sys.exit(3)"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, str(state_dir)], capture_output=True, text=True, check=False
    )


async def test_a_second_server_on_the_same_state_dir_is_refused(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path)):
        refused = lock_from_another_process(tmp_path)
        assert refused.returncode == 3, refused.stderr
        assert "another tau serve is using the state directory" in refused.stdout
    assert lock_from_another_process(tmp_path).returncode == 0  # released at shutdown


def test_a_newer_database_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "service.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema 99 is newer"):
        RunStore(path)
