"""`tau serve --backend ray --workers 2 --max-runs 2`: two runs at once on the server's
local Ray both complete (the Ray has CPUs for both runs' workers, and the first run to
end does not stop it under the other), and the Ray stops with the server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import ray

from tau_bench.runner.backends import ray as ray_backend
from tests.tau_bench.service.conftest import finished, make_settings, running_app, submit


async def test_two_runs_at_once_on_the_servers_ray_both_complete(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(ray_backend, "START_DEADLINE", 60.0)  # else a stuck run waits 300 s
    settings = make_settings(tmp_path / "state", backend="ray", workers=2, max_runs=2)
    assert not ray.is_initialized()
    async with running_app(settings) as client:
        body = {"task_ids": [0, 1, 2, 3], "num_trials": 2, "max_concurrency": 4}
        runs = [await submit(client, **body) for _ in range(2)]
        views = await asyncio.gather(*(finished(client, run) for run in runs))
        for view in views:
            assert view["status"] == "completed", view
            assert view["progress"]["done"] == view["progress"]["scored"] == 8
        assert ray.is_initialized()  # kept for the server's next runs
    assert not ray.is_initialized()  # stopped with the server
