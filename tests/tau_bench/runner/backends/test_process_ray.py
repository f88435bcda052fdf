"""Runs at once in one process share its Ray (`ray_for_runs`): a local Ray started for
them has a CPU for every run's workers, and stops when the last of them ends, not when
the first does. `tau eval` (its user models) and `tau serve` (its runs) hold it so;
end to end in tests/tau_bench/cli/test_eval_stops.py and
tests/tau_bench/service/test_ray_runs.py. Real local Ray, started by the code under test.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
import ray

from tau_bench.config import RunConfig
from tau_bench.runner import Runner
from tau_bench.runner.backends import ray as ray_backend
from tau_bench.runner.backends.ray import RayBackend, placed_count, ray_for_runs
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


async def test_workers_placed_but_slow_to_start_are_not_reported_as_unplaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two workers on a two-CPU Ray, both placed, whose start-up hangs (their runner
    class, unpickled on the worker, waits on a socket this test holds): the notice and
    the error say they are starting, not that the cluster lacks CPUs."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(120)  # the deadline of each worker's connection
    port = listener.getsockname()[1]

    def hold(port: int) -> type:  # runs in the worker, as its arguments are unpickled
        with socket.create_connection(("127.0.0.1", port)) as link:
            link.recv(1)  # until the test lets go
        return Runner

    class HeldRunner:
        def __reduce__(self) -> tuple[Any, ...]:
            return (hold, (port,))

    held: list[socket.socket] = []
    try:
        backend = RayBackend(config(tmp_path), HeldRunner(), workers=2)  # type: ignore[arg-type]
        backend.start()
        held = [listener.accept()[0] for _ in range(2)]  # both placed, both starting
        assert await placed_count(backend.actors) == 2
        monkeypatch.setattr(ray_backend, "PLACING_NOTICE", 0.0)
        monkeypatch.setattr(ray_backend, "START_DEADLINE", 5.0)
        with (
            caplog.at_level(logging.WARNING, "tau_bench.runner.backends.ray"),
            pytest.raises(
                RuntimeError,
                match=r"^2 of 2 workers were placed but did not finish starting within 5 s ",
            ),
        ):
            await backend.ready()
        notices = [r.getMessage() for r in caplog.records if r.name == ray_backend.__name__]
        assert notices == [
            "2 of 2 workers are placed and still starting; the run gives up 5 s after it "
            "started them"
        ]
        assert backend.actors == []
    finally:
        for link in held:
            link.close()
        listener.close()
        ray.shutdown()


async def test_a_worker_waiting_for_a_cpu_is_counted_as_unplaced(tmp_path: Path) -> None:
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        backend = RayBackend(config(tmp_path), Runner, workers=2)  # one more than the CPUs
        backend.start()
        pids = [asyncio.wrap_future(a.pid.remote().future()) for a in backend.actors]
        done, _ = await asyncio.wait(pids, timeout=120, return_when=asyncio.FIRST_COMPLETED)
        assert len(done) == 1  # one started; the other waits for the CPU
        assert await placed_count(backend.actors) == 1
        await backend.stop(graceful=False)
    finally:
        ray.shutdown()
