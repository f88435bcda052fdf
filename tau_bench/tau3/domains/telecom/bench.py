"""Speed and memory of telecom verification: every task of a split replayed and evaluated.

`run_bench(root)` replays each task's expected actions on a live environment and runs
the full evaluation (predicted + gold environments, env assertions, action checks) in one
process, then measures the memory one live episode adds. `print_bench` prints the table
next to the original's figure, measured on this kind of machine (2 shared cores, CPython
3.11.7): the upstream code at the pinned commit, `get_tasks("full")`, then per task
`get_environment()`, `set_state`, one `get_response` per expected action and
`evaluate_simulation(..., EvaluationType.ALL)`.

    python -m tau_bench.tau3.domains.telecom.bench [DATA_ROOT] [SPLIT]

DATA_ROOT defaults to `$TAU3_BENCH_DATA`, else `../shared/datasets/tau2-bench`; SPLIT to
`full`. The speed-up compares CPU seconds (the machine is shared; wall time is noisy).
"""

from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from tau_bench.data.errors import DataDirError
from tau_bench.tau3.domain import LoadedDomain, load_domain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.messages import ToolCall
from tau_bench.tau3.replay import replay_task
from tau_bench.tau3.tasks import Task, load_tasks

# The original on the 2,285 tasks of split `full`, one process, CPU seconds (CPU time, not
# wall time: the machine is shared, and CPU time is what both sides spend): 0.84 s to load
# tasks, 136.6 s to replay and evaluate them (59.8 ms per task).
ORIGINAL_LOAD_CPU_S = 0.84
ORIGINAL_PER_TASK_CPU_S = 59.8e-3
DEFAULT_ROOT = Path(__file__).resolve().parents[5] / "shared" / "datasets" / "tau2-bench"


@dataclass(frozen=True)
class BenchResult:
    split: str
    tasks: int
    load_s: float
    load_cpu_s: float
    verify_s: float
    verify_cpu_s: float
    perfect: int
    episode_bytes: float

    @property
    def per_task_s(self) -> float:
        return self.verify_s / self.tasks if self.tasks else 0.0

    @property
    def speedup(self) -> float | None:
        """Original CPU time / ours, loading included; only for `full`, where it was measured."""
        ours = self.load_cpu_s + self.verify_cpu_s
        if self.split != "full" or not ours:
            return None
        return (ORIGINAL_LOAD_CPU_S + ORIGINAL_PER_TASK_CPU_S * self.tasks) / ours


def _live_episode(domain: LoadedDomain, task: Task) -> Environment:
    env = Environment(domain)
    state = task.initial_state
    env.set_state(
        state.initialization_data if state else None,
        state.initialization_actions if state else None,
        task.history(),
    )
    for i, action in enumerate(task.expected_actions):
        env.get_response(ToolCall(f"call_{i}", action.name, action.arguments, action.requestor))
    return env


def episode_memory(domain: LoadedDomain, tasks: list[Task], count: int = 50) -> float:
    """Bytes one live episode (environment after its steps) keeps allocated, on average."""
    sample = [tasks[i % len(tasks)] for i in range(count)]
    _live_episode(domain, sample[0])  # warm caches (signatures, enum lookups)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        alive = [_live_episode(domain, task) for task in sample]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / len(alive)


def run_bench(root: Path, split: str = "full") -> BenchResult:
    """Verify every task of `split` in this process; timings and episode memory."""
    t0, c0 = time.perf_counter(), time.process_time()
    domain = load_domain("telecom", root)
    tasks = load_tasks(root, "telecom", split=split)
    t1, c1 = time.perf_counter(), time.process_time()  # tasks parsed: the load is done
    perfect = sum(replay_task(domain, task, with_hashes=False).reward == 1.0 for task in tasks)
    t2, c2 = time.perf_counter(), time.process_time()
    return BenchResult(
        split=split,
        tasks=len(tasks),
        load_s=t1 - t0,
        load_cpu_s=c1 - c0,
        verify_s=t2 - t1,
        verify_cpu_s=c2 - c1,
        perfect=perfect,
        episode_bytes=episode_memory(domain, tasks),
    )


def print_bench(result: BenchResult) -> None:
    """The table: tasks, seconds, per task, memory per episode, speed-up vs the original."""
    speedup = result.speedup
    per_task_cpu = result.verify_cpu_s / result.tasks if result.tasks else 0.0
    rows = [
        (f"tasks of {result.split} (reward 1.0)", f"{result.tasks} ({result.perfect})"),
        ("load domain + tasks", f"{result.load_s:.2f} s ({result.load_cpu_s:.2f} s CPU)"),
        ("replay + evaluate", f"{result.verify_s:.2f} s ({result.verify_cpu_s:.2f} s CPU)"),
        ("per task", f"{result.per_task_s * 1e3:.2f} ms ({per_task_cpu * 1e3:.2f} ms CPU)"),
        ("original per task (full)", f"{ORIGINAL_PER_TASK_CPU_S * 1e3:.1f} ms CPU"),
        ("speed-up (CPU, incl. load)", "n/a (full only)" if speedup is None else f"{speedup:.0f}x"),
        ("memory per live episode", f"{result.episode_bytes / 1024:.0f} KiB"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(os.environ.get("TAU3_BENCH_DATA") or DEFAULT_ROOT)
    split = args[1] if len(args) > 1 else "full"
    try:
        result = run_bench(root, split)
    except (FileNotFoundError, ValueError, DataDirError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_bench(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
