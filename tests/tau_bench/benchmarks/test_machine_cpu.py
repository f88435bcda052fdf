"""Ray-services and whole-machine CPU accounting, with real child processes that burn a
known amount of CPU on request."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tau_bench.benchmarks.runner.machine_cpu import BusyCores, RayServicesCPU

BURN = 0.3  # CPU seconds each child burns per request

CHILD = """
import sys, time
for line in sys.stdin:
    end = time.process_time() + float(line)
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""


def start(*title: str) -> subprocess.Popen[str]:
    """A child that burns the CPU seconds written to its stdin, then says "done"; extra
    arguments end up in its command line (how Ray titles its worker processes)."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *title],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def burn(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{BURN}\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "done"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs = [start("service"), start("ray::EpisodeWorker.exchange"), start("fake-server")]
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait(timeout=30)


def test_ray_services_count_service_processes_only(
    children: list[subprocess.Popen[str]],
) -> None:
    service, _worker, excluded = children
    for proc in children:
        burn(proc)  # start-up and a first burn before the snapshot are not counted
    services = RayServicesCPU(exclude={excluded.pid})
    for proc in children:
        burn(proc)
    counted = services.seconds()
    # the service's burn (psutil counts in clock ticks), not the worker's or the
    # excluded process's, nor anything before the snapshot
    assert BURN - 0.05 <= counted < 2 * BURN - 0.05
    service.kill()
    service.wait(timeout=30)
    assert services.seconds() == 0.0  # a process gone by the end is left out


def test_busy_cores_see_another_process_burn(children: list[subprocess.Popen[str]]) -> None:
    t0 = time.perf_counter()
    busy = BusyCores()
    burn(children[0])
    cores = busy.cores()
    elapsed = time.perf_counter() - t0  # longer than the span BusyCores measured
    assert cores * elapsed >= BURN - 0.05
    assert cores <= 64
