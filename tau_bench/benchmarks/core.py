"""Core performance benchmark: data load, reset, tool steps, hash, reward, verification.

Prints a table of medians per domain next to the original implementation's figures
(measured on the same kind of machine: 2 cores, CPython 3.11). Timing lives here, never
in tests.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Original τ-bench, 2 cores, CPython 3.11, medians (from the project's issue).
ORIGINAL_DOMAIN: dict[str, dict[str, float]] = {
    "airline": {"reset": 30e-3, "hash": 322e-3, "reward": 535e-3, "rss50": 700.0},
    "retail": {"reset": 15e-3, "hash": 64e-3, "reward": 317e-3, "rss50": 307.0},
}
ORIGINAL_IMPORT_S = 2.3
ORIGINAL_VERIFY165_S = 65.0

READ_CALLS = {
    "airline": ("get_reservation_details", {"reservation_id": "4WQ150"}),
    "retail": ("get_order_details", {"order_id": "#W2611340"}),
}


def _median(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _rss_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _first_write_task(domain: Any) -> tuple[Any, Any]:
    for task in domain.tasks("test"):
        for action in task.actions:
            if domain.tools[action.name].writes if action.name in domain.tools else False:
                return task, action
    raise RuntimeError("no write action in the test split")


def bench_domain(name: str, data_dir: Path | None, repeat: int = 20) -> dict[str, float]:
    from tau_bench import domains as domains_mod
    from tau_bench.env import Env
    from tau_bench.scoring import clear_ground_truth_cache
    from tau_bench.verify import verify_tasks

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    domains_mod._cache.clear()
    domain = domains_mod.load_domain(name, data_dir)
    out["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = domain.base_db.data_hash
    out["hash_index"] = time.perf_counter() - t0
    tasks = domain.tasks("test")
    env = Env(domain, tasks[0])
    out["reset"] = _median(env.reset, repeat * 10)
    read_name, read_kwargs = READ_CALLS[name]
    out["read_step"] = _median(lambda: env.execute(read_name, read_kwargs), repeat * 10)
    task, write = _first_write_task(domain)

    def write_step() -> None:
        env.reset(task)
        env.execute(write.name, write.kwargs)

    out["write_step"] = _median(write_step, repeat) - out["reset"]
    index = domain.base_db.hash_index

    def fresh_hash() -> None:
        index._memo.clear()
        env.data_hash()

    env.reset(task)
    env.execute(write.name, write.kwargs)
    out["hash"] = _median(fresh_hash, repeat)

    def cold_reward() -> None:
        clear_ground_truth_cache()
        index._memo.clear()
        env.reward()

    out["reward_cold"] = _median(cold_reward, repeat)
    env.reward()
    out["reward"] = _median(env.reward, repeat)
    clear_ground_truth_cache()
    t0 = time.perf_counter()
    results = verify_tasks(domain, tasks)
    out["verify_split"] = time.perf_counter() - t0
    out["verify_tasks"] = float(len(results))
    out["verify_ok"] = float(sum(1 for r in results if r.reward.reward == 1.0))
    # 200 live episodes, each after its task's full ground truth (the most a task writes).
    import tracemalloc

    gc.collect()
    before = _rss_mib()
    tracemalloc.start()
    live = []
    for i in range(200):
        t = tasks[i % len(tasks)]
        e = Env(domain, t)
        for a in t.actions:
            e.execute(a.name, a.kwargs)
        e.data_hash()
        live.append(e)
    gc.collect()
    traced, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["rss_200_mib"] = _rss_mib() - before
    out["alloc_200_mib"] = traced / 2**20
    out["kib_per_episode"] = traced / 1024 / 200
    del live
    return out


def whole_process_seconds(cmd: list[str], repeat: int = 3) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def run(data_dir: Path | None = None, repeat: int = 20) -> dict[str, Any]:
    env = dict(os.environ)
    if data_dir is not None:
        env["TAU_BENCH_DATA"] = str(data_dir)
    per_domain = {name: bench_domain(name, data_dir, repeat) for name in ("airline", "retail")}
    tau = [sys.executable, "-m", "tau_bench.cli.app"]
    import_s = whole_process_seconds([sys.executable, "-c", "import tau_bench.cli.app"])
    verify_s = whole_process_seconds([*tau, "tasks", "verify", "--env", "all"])
    return {"domains": per_domain, "import": import_s, "verify165_process": verify_s}


def render(results: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="tau-adapters core benchmark (medians)")
    table.add_column("measure", overflow="fold")
    for name in ("airline", "retail"):
        table.add_column(name, justify="right", overflow="fold")
        table.add_column("original", justify="right", style="dim", overflow="fold")
    ms = 1e3

    def row(label: str, key: str, scale: float, unit: str, orig_key: str | None = None) -> None:
        cells = [label]
        for name in ("airline", "retail"):
            value = results["domains"][name][key] * scale
            cells.append(f"{value:.3f} {unit}" if value < 10 else f"{value:.1f} {unit}")
            orig = ORIGINAL_DOMAIN[name].get(orig_key or "") if orig_key else None
            cells.append(f"{orig * scale:.0f} {unit}" if orig else "")
        table.add_row(*cells)

    row("data load (JSON parse)", "load", ms, "ms")
    row("hash index (once per process)", "hash_index", ms, "ms")
    row("episode reset", "reset", ms, "ms", "reset")
    row("read-tool step", "read_step", ms, "ms")
    row("write-tool step", "write_step", ms, "ms")
    row("DB hash after a write", "hash", ms, "ms", "hash")
    row("reward (ground truth cached)", "reward", ms, "ms", "reward")
    row("reward (ground truth cold)", "reward_cold", ms, "ms", "reward")
    row("verify test split (in process)", "verify_split", 1.0, "s")
    cells = ["memory of 200 live episodes (allocated)"]
    for name in ("airline", "retail"):
        d = results["domains"][name]
        cells.append(f"{d['alloc_200_mib']:.1f} MiB ({d['kib_per_episode']:.0f} KiB/episode)")
        cells.append(f"{ORIGINAL_DOMAIN[name]['rss50']:.0f} MiB for 50")
    table.add_row(*cells)
    table.add_row(
        "import tau CLI (process)", f"{results['import']:.2f} s", f"{ORIGINAL_IMPORT_S} s", "", ""
    )
    table.add_row(
        "verify all 165 test tasks, whole `tau` process",
        f"{results['verify165_process']:.2f} s",
        f"{ORIGINAL_VERIFY165_S:.0f} s",
        f"{ORIGINAL_VERIFY165_S / results['verify165_process']:.0f}x faster",
        "",
    )
    return table
