"""`tau serve`'s bounds on what clients make it hold and wait for.

Bodies the JSON reader chokes on or that carry non-finite numbers are a 422, validation
runs off the event loop, the server holds a bounded number of unfinished runs (429),
`GET /scores` has a deadline and cancels the run of a client that went away, and a
stopping server answers its waiting clients (a long poll with the run as it is,
`GET /scores` with a 503) instead of letting uvicorn cancel them into 500s.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tau_bench.service import api, server
from tau_bench.service.api import create_app
from tau_bench.service.settings import ServiceLimits, ServiceSettings
from tau_bench.service.store import RunStore
from tests.tau_bench.service.conftest import (
    AUTH,
    ORACLE,
    TOKEN,
    WAIT,
    Gate,
    make_settings,
    reached,
    running_app,
    submit,
)

GATED = {**ORACLE, "agent_strategy": "gated"}
GATED_SCORES = {"agent_strategy": "gated", "user_strategy": "scripted"}


# -- bodies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        # Python's int() refuses more than 4300 digits: a ValueError, not a JSONDecodeError.
        (b'{"num_trials": ' + b"9" * 5000 + b"}", "body", "not valid JSON (Exceeds the limit"),
        (b'{"episode_timeout": Infinity}', "episode_timeout", "must be a finite number"),
        (b'{"turn-timeout": -Infinity}', "turn_timeout", "must be a finite number"),
        (b'{"temperature": NaN}', "temperature", "must be a finite number"),
        (b'{"temperature": 1e999}', "temperature", "must be a finite number"),
        (b'{"provider_limits": {"openai": [1, {"x": NaN}]}}', "provider_limits", "must be a"),
    ],
)
async def test_unreadable_or_non_finite_numbers_are_422(
    client: httpx.AsyncClient, content: bytes, field: str, words: str
) -> None:
    body = content[:-1] + b', "env": "airline", "agent_strategy": "oracle", "task_ids": [13]}'
    response = await client.post(
        "/runs", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert response.json()["detail"].startswith(f"{field}: {words}"), response.json()
    assert (await client.get("/runs")).json() == {"runs": []}


async def test_validation_runs_off_the_event_loop(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a request into a RunConfig (up to a megabyte of JSON, task ranges) must
    not hold the event loop: other clients and the running episodes share it."""
    threads: list[threading.Thread] = []
    real = api.config_from_request

    def spy(data: Any) -> Any:
        threads.append(threading.current_thread())
        return real(data)

    monkeypatch.setattr(api, "config_from_request", spy)
    await submit(client, task_ids=[13])
    assert len(threads) == 1 and threads[0] is not threading.main_thread()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"num_trials": 3}, 422),  # the airline test split: 50 tasks x 3 trials
        ({"start_index": 10, "end_index": 40, "num_trials": 4}, 422),  # 30 x 4
        ({"start_index": 10, "end_index": 30, "num_trials": 5}, 202),  # 20 x 5
    ],
)
async def test_the_episode_bound_counts_splits_and_index_ranges(
    tmp_path: Path, body: dict[str, Any], status: int
) -> None:
    settings = make_settings(tmp_path, limits=ServiceLimits(max_episodes=100))
    async with running_app(settings) as client:
        response = await client.post("/runs", json={**ORACLE, **body})
        assert response.status_code == status, response.text
        if status == 422:
            assert response.json()["field"] == "num_trials"
            assert "at most 100 on this server" in response.json()["detail"]


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="the API token is empty"):
        ServiceSettings(state_dir=Path("."), token="  ")


# -- unfinished runs -----------------------------------------------------------------


async def test_the_server_holds_a_bounded_number_of_unfinished_runs(
    tmp_path: Path, gate: Gate
) -> None:
    limits = ServiceLimits(max_unfinished_runs=3)
    async with running_app(make_settings(tmp_path, max_runs=1, limits=limits)) as client:
        # Concurrent submissions: validation runs in threads, the count is checked again
        # when each is queued, so exactly the limit gets in.
        answers = await asyncio.gather(
            *(client.post("/runs", json={**GATED, "task_ids": [0]}) for _ in range(8))
        )
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [202] * 3 + [429] * 5, statuses
        refused = next(a for a in answers if a.status_code == 429).json()
        assert refused == {
            "detail": "the server already has 3 unfinished (queued or running) runs, its "
            "limit: retry when some have finished, or cancel some"
        }
        scores = await client.get("/scores", params={"model": "m", "subset": "airline"})
        assert scores.status_code == 429
        await reached(gate)

        accepted = [a.json()["run_id"] for a in answers if a.status_code == 202]
        assert (await client.delete(f"/runs/{accepted[1]}")).status_code == 200
        await submit(client, **{**GATED, "task_ids": [0]})  # a free place again
        resumed = await client.post(f"/runs/{accepted[1]}/resume")
        assert resumed.status_code == 429, resumed.text
        gate.release.set()


# -- GET /scores: deadline, and a client that goes away ------------------------------


async def test_scores_answers_504_at_its_deadline_and_the_run_goes_on(
    tmp_path: Path, gate: Gate
) -> None:
    settings = make_settings(tmp_path, scores_settings=GATED_SCORES, scores_timeout=0.2)
    async with running_app(settings) as client:
        response = await asyncio.wait_for(
            client.get("/scores", params={"model": "m", "subset": "airline", "taskID": 0}), WAIT
        )
        assert response.status_code == 504, response.text
        (run,) = (await client.get("/runs")).json()["runs"]
        assert response.json()["detail"] == (
            f"run {run['run_id']} is still running after 0.2 s; follow it at /runs/{run['run_id']}"
        )
        assert run["status"] == "running"
        gate.release.set()
        done = await client.get(f"/runs/{run['run_id']}", params={"wait": WAIT})
        assert done.json()["status"] == "completed"


@asynccontextmanager
async def real_server(
    settings: ServiceSettings, graceful: float = WAIT
) -> AsyncIterator[tuple[server.ServiceServer, str]]:
    """`tau serve`'s server (`tau_bench.service.server`) on a loopback socket, and its URL."""
    sock = server.bind("127.0.0.1", 0)
    app = create_app(settings)
    http = server.server_for(app, log_level="warning", graceful=graceful)
    serving = asyncio.create_task(http.serve(sockets=[sock]))
    try:
        yield http, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        http.should_exit = True
        await serving


async def test_a_scores_client_that_goes_away_cancels_its_run(tmp_path: Path, gate: Gate) -> None:
    settings = make_settings(tmp_path, scores_settings=GATED_SCORES)
    async with real_server(settings) as (_, url):
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=WAIT) as c:
            waiting = asyncio.create_task(
                c.get("/scores", params={"model": "m", "subset": "airline", "taskID": 0})
            )
            await reached(gate)  # the run is in its episode
            waiting.cancel()  # the client hangs up
            with pytest.raises(asyncio.CancelledError):
                await waiting
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=WAIT) as c:
            (run,) = (await c.get("/runs")).json()["runs"]
            view = (await c.get(f"/runs/{run['run_id']}", params={"wait": WAIT})).json()
        assert view["status"] == "cancelled", view
        assert view["note"] == "cancelled: the GET /scores client went away"


# -- a stopping server ---------------------------------------------------------------


async def test_waiting_clients_get_their_answers_when_the_server_stops(
    tmp_path: Path, gate: Gate
) -> None:
    """uvicorn's grace period (here a minute) ends by cancelling open requests: the
    waiters must be answered before, at once."""
    settings = make_settings(tmp_path, max_runs=1, scores_settings=GATED_SCORES)
    async with (
        real_server(settings, graceful=WAIT) as (http, url),
        httpx.AsyncClient(base_url=url, headers=AUTH, timeout=WAIT) as c,
    ):
        run_id = (await c.post("/runs", json={**GATED, "task_ids": [0]})).json()["run_id"]
        await reached(gate)
        manager = http.config.app.state.manager
        poll = asyncio.create_task(c.get(f"/runs/{run_id}", params={"wait": WAIT}))
        scores = asyncio.create_task(
            c.get("/scores", params={"model": "m", "subset": "airline", "taskID": 1})
        )

        async def both_waiting() -> None:  # the server knows two waiters (no sleep)
            while len(manager._finished) < 2:
                await asyncio.sleep(0)

        await asyncio.wait_for(both_waiting(), WAIT)
        http.should_exit = True  # what SIGTERM does
        polled, scored = await asyncio.wait_for(asyncio.gather(poll, scores), WAIT / 2)
    assert polled.status_code == 200 and polled.json()["status"] == "running", polled.text
    assert scored.status_code == 503, scored.text
    assert scored.json()["detail"].startswith("the server is stopping; run ")
    # And the runs were parked, to resume on the next start.
    store = RunStore(settings.db_path)
    assert {r.status for r in store.runs()} == {"queued"}
    store.close()
    assert TOKEN not in polled.text + scored.text
