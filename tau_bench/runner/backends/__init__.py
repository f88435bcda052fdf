"""Where a run's episodes execute. The local backend is the runner's own event loop
(`tau_bench.runner.core`); `ray` spreads episodes over Ray workers on a machine or a
cluster (`tau run --backend ray`, `--workers N`), the driver staying the only writer.

Shared here: what a worker needs to rebuild the run (`worker_config`) and whether the
agent can be rebuilt in another process at all (`is_entry_point`).
"""

from __future__ import annotations

import math
import os
from typing import Any

from tau_bench.config import RunConfig, RunConfigError

Key = tuple[int | str, int]


def is_entry_point(name: str) -> bool:
    """Whether `name` resolves to its `tau_adapters` entry point (what a worker process
    sees), not to a builder registered in this process."""
    from tau_adapters.registry import GROUP, group_entry_points, load_builder

    eps = {ep.name: ep for ep in group_entry_points(GROUP)}
    if name not in eps:
        return False
    try:
        return bool(load_builder(name) is eps[name].load())
    except Exception:
        return True  # a broken entry point fails in the workers with its own message


def machine_cpus() -> int:
    """CPUs this process may run on: its affinity where the OS has one, else the count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_local_workers(workers: int) -> None:
    """RunConfigError when a Ray started on this machine would get more workers than it
    has CPUs: a worker is an event loop running many episodes at once, so one more than
    the CPUs adds a process's memory and no speed, and a typo would start hundreds."""
    cpus = machine_cpus()
    if workers > cpus:
        raise RunConfigError(
            f"--workers {workers}: a local Ray runs at most {cpus} workers here, one per "
            "CPU (each runs many episodes at once: raise --max-concurrency); for more, "
            "join a cluster with --ray-address"
        )


LOCAL_RAY_WORKERS_PER_CPU = 4
"""Worker processes a local Ray may hold for runs at once, per CPU: each is a Python
process with the package loaded (~300-400 MB), and past a few per CPU they add memory,
not speed."""


def check_local_ray(workers: int, runs: int = 1) -> None:
    """RunConfigError when a Ray started on this machine for `runs` runs at once, each of
    `workers` workers, would start more worker processes than it can carry
    (`check_local_workers` for one run; `LOCAL_RAY_WORKERS_PER_CPU` for all of them)."""
    check_local_workers(workers)
    cap = LOCAL_RAY_WORKERS_PER_CPU * machine_cpus()
    if workers * runs > cap:
        raise RunConfigError(
            f"{runs:,} runs at once of {workers} worker(s) each would start "
            f"{workers * runs:,} worker processes on a local Ray; at most {cap} here "
            f"({LOCAL_RAY_WORKERS_PER_CPU} per CPU): run fewer at once, or join a cluster "
            "with --ray-address"
        )


def share(value: int, parts: int) -> int:
    """One of `parts` workers' share of `value` (at least 1)."""
    return max(1, math.ceil(value / parts))


def worker_config(config: RunConfig, workers: int) -> dict[str, Any]:
    """What one of `workers` workers rebuilds its runner from: the config (secrets
    included: it only travels to our own workers) with its share of `max_concurrency`.
    Provider limits stay whole: one limiter serves every worker."""
    data = config.model_dump()
    data.update(
        workers=1,
        backend="local",
        resume=None,
        quiet=True,
        max_concurrency=share(config.max_concurrency, workers),
    )
    return data
