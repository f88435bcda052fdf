"""Where a level's CPU goes beyond the measured processes: Ray's own services, and the
whole machine.

The driver, the Ray workers and the fake server report their own CPU; on a small
machine the rest matters too. Ray's services (GCS, raylet, dashboard head and agents,
log monitor) are processes a local Ray starts under this one, sharing the cores with
the workers; and the machine's busy cores over a level say whether a row had idle CPU
left or took all there was (then a scaling figure is bounded by the machine, not by
the harness).
"""

from __future__ import annotations

import time
from typing import Any

ACTOR_MARKS = ("EpisodeWorker", "ProviderLimiter", "IDLE", "default_worker.py")
"""Process titles of Ray worker processes (actors, pooled idle workers): their CPU is
the workers' own (`worker_stats`), or a run's, not Ray's services'."""

BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "interrupt", "dpc")
"""psutil's busy CPU-time fields across platforms (Windows: interrupt, dpc)."""


class RayServicesCPU:
    """CPU of Ray's service processes below this one, between `__init__` and `seconds()`.

    The services are the descendants alive at the start that are neither Ray worker
    processes nor `exclude` (the fake server); one that has become or ended as a worker
    by the end (a pooled process an actor took over) is left out."""

    def __init__(self, exclude: set[int]) -> None:
        import psutil

        self._start: dict[int, tuple[Any, float]] = {}
        for proc in psutil.Process().children(recursive=True):
            if proc.pid in exclude:
                continue
            cpu = _service_cpu(proc)
            if cpu is not None:
                self._start[proc.pid] = (proc, cpu)

    def seconds(self) -> float:
        total = 0.0
        for proc, before in self._start.values():
            after = _service_cpu(proc)
            if after is not None:
                total += after - before
        return total


def _service_cpu(proc: Any) -> float | None:
    """A service process's CPU seconds; None for a worker process or one gone."""
    import psutil

    try:
        with proc.oneshot():
            title = " ".join(proc.cmdline())
            if any(mark in title for mark in ACTOR_MARKS):
                return None
            times = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return float(times.user + times.system)


class BusyCores:
    """The whole machine's busy cores (every process and the kernel, not idle or
    waiting on I/O) on average between `__init__` and `cores()`."""

    def __init__(self) -> None:
        self._t0, self._busy0 = time.perf_counter(), _busy_seconds()

    def cores(self) -> float:
        elapsed = time.perf_counter() - self._t0
        return (_busy_seconds() - self._busy0) / elapsed if elapsed > 0 else 0.0


def _busy_seconds() -> float:
    import psutil

    times = psutil.cpu_times()._asdict()
    # Linux also counts guests inside user and nice, and steal is the hypervisor's.
    return float(sum(v for k, v in times.items() if k in BUSY_FIELDS))
