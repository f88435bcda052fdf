"""Ray-services, per-kind and whole-machine CPU accounting, with real child processes that burn a
known amount of CPU on request."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tau_bench.benchmarks.runner.machine_cpu import KINDS, BusyCores, CPUTimeline, RayServicesCPU

BURN = 0.3  # CPU seconds each child burns per request

CHILD = """
import os, sys, time
if os.environ.pop("RETITLED", None):
    print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("title "):  # the same process (pid, CPU so far) under a new title
        os.environ["RETITLED"] = "1"
        argv = ["python", "-c", os.environ["BURN_CHILD"]]
        os.execv(sys.executable, argv + line.split()[1:])
    end = time.process_time() + float(line)
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""

RAYLET = ("--python_worker_command=python -u default_worker.py",)
"""How the raylet's command line names the worker command (argv[0] "raylet")."""


def start(*title: str, argv0: str = "python") -> subprocess.Popen[str]:
    """A child that burns the CPU seconds written to its stdin, then says "done"; extra
    arguments end up in its command line (how Ray titles its worker processes), and
    `title ARGS` makes it exec itself with those arguments instead (then "ready")."""
    return subprocess.Popen(
        [argv0, "-c", CHILD, *title],
        executable=sys.executable,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "BURN_CHILD": CHILD},
    )


def burn(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{BURN}\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "done"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs = [
        start(*RAYLET, argv0="raylet"),  # a service, though its command names the worker's
        start("ray::EpisodeWorker.exchange"),
        start("fake-server"),
    ]
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


def test_the_cpu_timeline_tells_the_kinds_apart_between_two_moments(
    children: list[subprocess.Popen[str]],
) -> None:
    service, worker, server = children
    for proc in children:
        burn(proc)  # start-up and a first burn, before the span measured
    with CPUTimeline(server_pid=server.pid, interval=0.05) as timeline:
        start = time.perf_counter()
        burn(worker)
        burn(service)
        burn(service)
        burn(server)
        end = time.perf_counter()
        service.kill()  # an ended process keeps the CPU it was last seen with
        service.wait(timeout=30)
    cores = timeline.cores(start, end)
    assert cores is not None
    used = {kind: cores[kind] * (end - start) for kind in KINDS}
    # psutil counts in clock ticks, and the interpolation blurs the span's two ends by
    # at most one sample: each kind within a quarter of a burn of what it burned
    assert used["workers"] == pytest.approx(BURN, abs=BURN / 4)
    assert used["ray"] == pytest.approx(2 * BURN, abs=BURN / 4)
    assert used["server"] == pytest.approx(BURN, abs=BURN / 4)
    assert used["driver"] < BURN / 2  # this process waited; the sampler is not counted
    totals = timeline.totals  # every total only grows (to within the clocks' reading)
    assert all(
        later[kind] >= earlier[kind] - 0.001
        for earlier, later in itertools.pairwise(totals)
        for kind in KINDS
    )
    assert timeline.cores(start - 3600, end) is None  # before the first sample
    assert timeline.cores(end, start) is None


def test_a_process_that_changes_title_keeps_what_it_used_before() -> None:
    """A pooled Ray process takes an actor's title: its CPU from then on is a worker's,
    what it used before stays where it was counted."""
    proc = start("service")
    try:
        burn(proc)
        with CPUTimeline(server_pid=-1, interval=0.05) as timeline:
            start_ = time.perf_counter()
            burn(proc)
            timeline.sample()
            middle = time.perf_counter()
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("title ray::EpisodeWorker\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "ready"  # the new image reads stdin
            burn(proc)
            end = time.perf_counter()
        before, after = timeline.cores(start_, middle), timeline.cores(middle, end)
        assert before is not None and after is not None
        assert before["ray"] * (middle - start_) == pytest.approx(BURN, abs=BURN / 4)
        assert before["workers"] * (middle - start_) < BURN / 4
        # the exec's start-up and the second burn: a worker's, and no total fell
        assert after["workers"] * (end - middle) >= BURN - BURN / 4
        assert min(min(c.values()) for c in (before, after) if c) > -0.01
    finally:
        proc.kill()
        proc.wait(timeout=30)
