"""Runs at once in one process share its Ray (`ray_for_runs`): a local Ray started for
them has a CPU for every run's workers, and stops when the last of them ends, not when
the first does. `tau eval` (its user models) and `tau serve` (its runs) hold it so;
end to end in tests/tau_bench/cli/test_eval_stops.py and
tests/tau_bench/service/test_ray_runs.py. Real local Ray, started by the code under test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import ray

from tau_bench.config import RunConfig
from tau_bench.runner import Runner
from tau_bench.runner.backends import ray as ray_backend
from tau_bench.runner.backends.ray import RayBackend, ray_for_runs
from tests.conftest import DATA_DIR


def config(tmp_path: Path, workers: int = 2) -> RunConfig:
    return RunConfig(
        env="airline",
        agent_strategy="oracle",
        user_strategy="scripted",
        workers=workers,
        max_concurrency=2,
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        quiet=True,
    )


async def test_two_runs_at_once_get_their_workers_and_the_ray_outlives_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray_backend, "START_DEADLINE", 60.0)  # a 2-core CI machine is slow
    assert not ray.is_initialized()
    with ray_for_runs(2):
        assert not ray.is_initialized()  # holding starts nothing
        first = RayBackend(config(tmp_path), Runner)
        second = RayBackend(config(tmp_path), Runner)
        try:
            first.start()
            await first.ready()
            assert ray.cluster_resources()["CPU"] == 4  # 2 runs x 2 workers
            second.start()
            await second.ready()  # placed: the Ray has their CPUs too
            await first.stop()
            assert ray.is_initialized()  # the second run still needs it
            pids = ray.get([a.pid.remote() for a in second.actors], timeout=60)
            assert len(set(pids)) == 2
        finally:
            await first.stop()
            await second.stop()
        assert ray.is_initialized()  # held until the hold ends
    assert not ray.is_initialized()  # started here, stopped here


async def test_workers_waiting_for_cpus_leave_the_event_loop_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tau serve` keeps answering while a run's workers wait to be placed; when they
    never are, the run gets one clear error and nothing is left running."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        monkeypatch.setattr(ray_backend, "START_DEADLINE", 3.0)
        order: list[str] = []

        async def answer() -> None:
            order.append("answered")

        backend = RayBackend(config(tmp_path), Runner, workers=3)  # one more than the CPUs
        backend.start()
        waiting = asyncio.ensure_future(answer())
        with pytest.raises(RuntimeError, match="3 workers of 1 CPU each were not all placed"):
            await backend.ready()
        order.append("refused")
        await waiting
        assert order == ["answered", "refused"]
        assert backend.actors == []
        assert ray.is_initialized()  # not this process's run's to stop
    finally:
        ray.shutdown()


async def test_a_ray_this_process_did_not_start_is_left_running(tmp_path: Path) -> None:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with ray_for_runs(2):
            backend = RayBackend(config(tmp_path), Runner)
            backend.start()
            await backend.ready()
            await backend.stop()
        assert ray.is_initialized()
    finally:
        ray.shutdown()
