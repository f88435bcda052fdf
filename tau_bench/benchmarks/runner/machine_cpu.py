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

import bisect
import os
import threading
import time
from typing import Any

ACTOR_MARKS = ("EpisodeWorker", "ProviderLimiter", "IDLE", "default_worker.py")
"""Process titles of Ray worker processes (actors, pooled idle workers): their CPU is
the workers' own (`worker_stats`), or a run's, not Ray's services'."""


def is_ray_worker(cmdline: list[str]) -> bool:
    """A Ray worker process, by its title; not the raylet, whose command line carries
    the worker command (`--python_worker_command=... default_worker.py`)."""
    if cmdline and os.path.basename(cmdline[0]) == "raylet":
        return False
    title = " ".join(cmdline)
    return any(mark in title for mark in ACTOR_MARKS)


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
    try:
        with proc.oneshot():
            if is_ray_worker(proc.cmdline()):
                return None
            times = proc.cpu_times()
    except psutil_errors():
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


KINDS = ("driver", "workers", "server", "ray", "steal")
"""What `CPUTimeline` tells apart: this process (the driver, or a local run itself), Ray
worker processes, the fake server, Ray's services (every other process below this one)
and the hypervisor's steal (time this VM's cores were ready to run and did not)."""


class CPUTimeline:
    """Every `interval` s in a thread, the CPU seconds used so far by each of `KINDS`,
    so that a part of a level (its steady window, `levels.steady_window`) gets its own
    CPU: a whole run's figures also hold its start-up (Ray workers, the first wave) and
    its end (the results files), which the steady throughput leaves out.

    The sampler's own CPU is not the driver's (its thread's time is taken off). A
    process that ends keeps the CPU it had last been seen with, so a run samples once
    more when its last episode is stored (`measure.Completions`), before Ray's workers
    exit. A context manager: samples from entry to exit, both ends included."""

    def __init__(self, server_pid: int, interval: float = 0.5) -> None:
        import psutil

        self._me = psutil.Process()
        self._gone = psutil_errors()
        self._server_pid = server_pid
        self._interval = interval
        self._last: dict[int, float] = {}  # pid -> its CPU seconds when last seen
        self._sums = dict.fromkeys(KINDS, 0.0)  # CPU seen since the first sample, by kind
        self._sampler_cpu = 0.0  # the sampling thread's own CPU, off the driver's
        self.times: list[float] = []
        self.totals: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._lock = threading.Lock()  # `sample` runs in the sampler and in the run

    def __enter__(self) -> CPUTimeline:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def sample(self) -> None:
        """Record the totals now: each process's CPU since it was last seen goes to
        the kind its title says now (a pooled Ray process may change title), so no
        total ever falls."""
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        first = not self.totals
        for proc in self._me.children(recursive=True):
            kind = "server" if proc.pid == self._server_pid else None
            try:
                with proc.oneshot():
                    if kind is None:
                        kind = "workers" if is_ray_worker(proc.cmdline()) else "ray"
                    times = proc.cpu_times()
            except self._gone:
                continue
            cpu = float(times.user + times.system)
            last = self._last.get(proc.pid)
            if last is not None:
                self._sums[kind] += max(0.0, cpu - last)  # < 0: a pid used again
            elif not first:  # started since the last sample (CPU before the first is not counted)
                self._sums[kind] += cpu
            self._last[proc.pid] = cpu
        totals = dict(self._sums)
        if threading.current_thread() is self._thread:
            self._sampler_cpu = time.thread_time()  # this thread's CPU so far
        totals["driver"] = time.process_time() - self._sampler_cpu
        totals["steal"] = _steal_seconds()
        self.times.append(time.perf_counter())
        self.totals.append(totals)

    def at(self, when: float) -> dict[str, float] | None:
        """The totals at `when` (a `time.perf_counter` time), interpolated between the
        samples around it; None outside the sampled span."""
        i = bisect.bisect_left(self.times, when)
        if i == 0 and self.times and self.times[0] == when:
            return dict(self.totals[0])
        if i == 0 or i == len(self.times):
            return None
        t0, t1 = self.times[i - 1], self.times[i]
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        before, after = self.totals[i - 1], self.totals[i]
        return {k: before[k] + share * (after[k] - before[k]) for k in KINDS}

    def cores(self, start: float, end: float) -> dict[str, float] | None:
        """The cores each kind used on average between `start` and `end`; None when the
        span is empty or not inside the sampled one."""
        first, last = self.at(start), self.at(end)
        if first is None or last is None or end <= start:
            return None
        return {k: (last[k] - first[k]) / (end - start) for k in KINDS}


def psutil_errors() -> tuple[type[BaseException], ...]:
    """What psutil raises for a process that ended or that this user may not read."""
    import psutil

    return (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)


def _steal_seconds() -> float:
    """CPU time the hypervisor took from this machine's cores so far (0 where the
    platform does not report it)."""
    import psutil

    return float(getattr(psutil.cpu_times(), "steal", 0.0))


def _busy_seconds() -> float:
    import psutil

    times = psutil.cpu_times()._asdict()
    # Linux also counts guests inside user and nice, and steal is the hypervisor's.
    return float(sum(v for k, v in times.items() if k in BUSY_FIELDS))
