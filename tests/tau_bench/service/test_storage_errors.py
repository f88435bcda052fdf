"""A state database that cannot be written (a full disk) while serving: requests get a JSON
503, and a run in progress is neither killed nor left `running` with nothing behind it.

Was: `POST /runs` a plain-text 500; the run's progress write raised, storing `failed`
raised too, and the run stayed `running` for good (a long poll blocked, resume was a
409, and it counted towards the unfinished runs' limit)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from tau_bench.service.api import create_app
from tau_bench.service.settings import ServiceLimits
from tau_bench.service.store import COMPLETED, RUNNING

from .conftest import AUTH, ORACLE, WAIT, Gate, make_settings, reached


class FlakyDatabase:
    """The store's sqlite connection, whose writes fail while `full` is set."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real
        self.full = False

    def execute(self, sql: str, *args: Any) -> Any:
        if self.full and sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
            raise sqlite3.OperationalError("database or disk is full")
        return self.real.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@asynccontextmanager
async def served(
    tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Any, FlakyDatabase]]:
    app = create_app(make_settings(tmp_path / "state", **settings))
    db = FlakyDatabase(app.state.store._db)
    app.state.store._db = db
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers=AUTH
        ) as client:
            yield client, app, db


async def test_a_submission_the_database_refuses_is_a_json_503(tmp_path: Path) -> None:
    async with served(tmp_path) as (client, _, db):
        db.full = True
        response = await client.post("/runs", json={**ORACLE, "task_ids": [13]})
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"]
        detail = response.json()["detail"]
        assert detail == ("the server's state database cannot be written: database or disk is full")
        assert str(tmp_path) not in detail


async def test_a_run_outlives_a_full_database_and_its_status_is_saved_later(
    tmp_path: Path, gate: Gate
) -> None:
    one = {"max_runs": 1, "limits": ServiceLimits(max_unfinished_runs=1)}
    async with served(tmp_path, **one) as (client, app, db):
        body = {**ORACLE, "agent_strategy": "gated", "task_ids": [1, 0]}
        response = await client.post("/runs", json=body)
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        await reached(gate)  # task 1 done, task 0 in flight
        db.full = True  # the disk fills up: every write fails from now on
        gate.release.set()
        view = (await client.get(f"/runs/{run_id}", params={"wait": WAIT})).json()
        assert view["status"] == COMPLETED, view  # not killed, not "running" forever
        assert view["progress"]["done"] == 2
        assert app.state.store.get(run_id).status == RUNNING  # not written yet
        scores = (await client.get(f"/runs/{run_id}/scores")).text.splitlines()
        assert len(scores) == 2
        # Not counted as unfinished while it waits to be written.
        assert app.state.manager.store.count_unfinished() == 1
        app.state.manager.check_capacity()  # no TooManyRuns at a limit of 1
        # The disk has room again: the next read of the run writes its status.
        db.full = False
        assert (await client.get(f"/runs/{run_id}")).json()["status"] == COMPLETED
        assert app.state.store.get(run_id).status == COMPLETED  # written on that read
