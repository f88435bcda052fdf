"""Concurrency levels: one level in this process or split over processes started
together, and the whole benchmark (`run_runner_benchmark`) against the fake server."""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any, Literal

from tau_bench.benchmarks.runner.machine_cpu import BusyCores, CPUTimeline, RayServicesCPU
from tau_bench.benchmarks.runner.measure import DEFAULT_MODEL, Setup, measure
from tau_bench.fakes.process import OpenAIServerProcess

DEFAULT_LEVELS = [(1, 20), (50, 500), (200, 500)]
DEFAULT_LATENCY = 0.2
STACKS = ("litellm", "direct", "raw")
ALL_STACKS = ("litellm", "direct", "litellm-sdk", "raw")
BACKENDS = ("local", "ray")
STACK_HELP = {
    "litellm": "the real tool-calling agent and LLM user through tau_bench.llm (litellm path)",
    "direct": "the same on the direct path (--llm-path direct: the openai client)",
    "litellm-sdk": "the same, with litellm's openai-SDK route and its default clients "
    "(how tau_bench.llm called OpenAI-compatible servers before)",
    "raw": "a minimal agent and user on bare asyncio connections: the runner's own cost",
}
RESPONDER = "tau_bench.benchmarks.runner.replies:respond"
"""The fake server's reply function (the scripted agent and user)."""


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def worker(
    setup: Setup, stack: str, concurrency: int, episodes: int, ready: Any, start: Any, out: Any
) -> None:
    """One process of a multi-process level: warm up, wait for the start, run, report."""
    try:
        measure(setup, stack, 1, 1)
        ready.put(None)
        start.wait()
        out.put(measure(setup, stack, concurrency, episodes))
    except BaseException as exc:
        ready.put(f"{type(exc).__name__}: {exc}")
        out.put({"error": f"{type(exc).__name__}: {exc}"})
        raise


def measure_in_processes(
    server: OpenAIServerProcess,
    setup: Setup,
    stack: str,
    concurrency: int,
    episodes: int,
    processes: int,
) -> tuple[list[dict[str, Any]], float, dict[str, int], float, float]:
    """The level split evenly over `processes` spawned workers started together (what a
    multi-process runner would get); the wall time runs from the common start. Returns
    the workers' figures, the wall time, the server's stats and CPU at the start, and
    the machine's busy cores from the start."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    ready, out, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = zip(split(concurrency, processes), split(episodes, processes), strict=True)
    procs = [
        ctx.Process(target=worker, args=(setup, stack, c, n, ready, start, out), daemon=True)
        for c, n in shares
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            problem = ready.get(timeout=600)
            if problem is not None:
                raise RuntimeError(f"benchmark worker failed to start: {problem}")
        before, server_cpu0 = server.stats(), server.cpu_seconds()  # after the warm-ups
        busy = BusyCores()
        t0 = time.perf_counter()
        start.set()
        parts = [out.get(timeout=3600) for _ in procs]
        wall = time.perf_counter() - t0
        busy_cores = busy.cores()
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
    failed = [p["error"] for p in parts if "error" in p]
    if failed:
        raise RuntimeError(f"benchmark worker failed: {failed[0]}")
    return parts, wall, before, server_cpu0, busy_cores


def run_level(
    server: OpenAIServerProcess,
    setup: Setup,
    stack: str,
    concurrency: int,
    episodes: int,
    latency: float,
    processes: int = 1,
) -> dict[str, Any]:
    ray_services = timeline = None
    if processes == 1:
        if setup.backend == "ray":
            ray_services = RayServicesCPU({server.proc.pid})
        before, server_cpu0 = server.stats(), server.cpu_seconds()
        busy = BusyCores()
        with CPUTimeline(server.proc.pid) as timeline:
            parts = [measure(setup, stack, concurrency, episodes, timeline.sample)]
        busy_cores = busy.cores()
        wall = parts[0]["wall_s"]
    else:
        parts, wall, before, server_cpu0, busy_cores = measure_in_processes(
            server, setup, stack, concurrency, episodes, processes
        )
    server_cpu = server.cpu_seconds() - server_cpu0
    ray_cpu = ray_services.seconds() if ray_services is not None else None
    after = server.stats()
    calls = after["requests"] - before["requests"]
    per_episode = calls / episodes
    bound = per_episode * latency * episodes / concurrency
    waves = math.ceil(episodes / concurrency) * per_episode * latency
    cpu = sum(p["cpu_s"] for p in parts)
    workers_cpu = sum(p["workers_cpu_s"] for p in parts)
    done = sorted(t for p in parts for t in p["done_times"])
    start = min(p["start"] for p in parts)
    label = stack + ("+progress" if setup.progress else "")
    steady = steady_rate(done, per_episode) if episodes >= STEADY_WAVES * concurrency else None
    return {
        "stack": label
        + (f" x{processes} proc" if processes > 1 else "")
        + (f" ray x{setup.workers}" if setup.backend == "ray" else ""),
        "processes": processes,
        "backend": setup.backend,
        "workers": setup.workers if setup.backend == "ray" else 0,
        "concurrency": concurrency,
        "episodes": episodes,
        "calls": calls,
        "calls_per_episode": per_episode,
        "wall_s": wall,
        "bound_s": bound,
        "wall_over_bound": wall / bound if bound else None,
        "wave_bound_s": waves,
        "wall_over_wave_bound": wall / waves if waves else None,
        "cpu_s": cpu,
        "cpu_ms_per_call": 1000 * cpu / calls if calls else None,
        "calls_per_s": calls / wall if wall else None,
        "steady_calls_per_s": steady,
        "steady_cpu_ms_per_call": steady_cpu(timeline, done, steady),
        "first_done_s": done[0] - start if done else None,
        "driver_cpu_ms_per_call": 1000 * (cpu - workers_cpu) / calls if calls else None,
        "workers_cpu_ms_per_call": 1000 * workers_cpu / calls if calls else None,
        "server_cpu_s": server_cpu,
        "server_cpu_ms_per_call": 1000 * server_cpu / calls if calls else None,
        "ray_cpu_ms_per_call": 1000 * ray_cpu / calls if calls and ray_cpu is not None else None,
        "busy_cores": busy_cores,
        "connections": after["connections"] - before["connections"],
        "http_clients": sum(p["http_clients"] for p in parts),
        "peak_rss_mb": sum(p["peak_rss_mb"] for p in parts),
        "agent_turn_p50_s": statistics.median(p["agent_turn_p50_s"] for p in parts),
        "agent_turn_p95_s": max(p["agent_turn_p95_s"] for p in parts),
        "errors": sum(p["errors"] for p in parts),
        "error_kinds": [p["error_kinds"] for p in parts],
        "avg_reward": mean_or_none([p["avg_reward"] for p in parts]),
    }


STEADY_TRIM = 0.2
"""Share of a run's episodes left out at each end of the steady-state window."""

STEADY_WAVES = 4
"""Waves (episodes / concurrency) a level needs for a steady-state figure: with fewer,
identical episodes finish in bursts at the waves' ends and the window measures those."""


def steady_window(done: list[float]) -> list[float]:
    """The times (sorted driver-side) of the episodes stored in the steady state: all
    but the first and the last `STEADY_TRIM` of a run, so without the start-up
    (imports, Ray workers, first connections) and the last, partial wave."""
    first = int(len(done) * STEADY_TRIM)
    return done[first : len(done) - first]


def steady_rate(done: list[float], calls_per_episode: float) -> float | None:
    """Model calls per second in the steady state: the least-squares slope of episodes
    stored against time over `steady_window`. A slope, not the two ends of the window:
    episodes finish in bursts, and two points would measure where the bursts fall."""
    window = steady_window(done)
    if len(window) < 3:
        return None
    mean_t = statistics.fmean(window)
    mean_k = (len(window) - 1) / 2
    spread = sum((t - mean_t) ** 2 for t in window)
    if spread <= 0:
        return None
    slope = sum((t - mean_t) * (k - mean_k) for k, t in enumerate(window)) / spread
    return calls_per_episode * slope


def steady_cpu(
    timeline: CPUTimeline | None, done: list[float], rate: float | None
) -> dict[str, float] | None:
    """CPU ms per model call in the steady window, by kind (`machine_cpu.KINDS`): each
    kind's cores over the window divided by the steady calls/s, so the figures add up
    with the throughput the scaling compares (the whole run's also count the start-up
    and the results files)."""
    window = steady_window(done)
    if timeline is None or not rate or len(window) < 3:
        return None
    cores = timeline.cores(window[0], window[-1])
    if cores is None:
        return None
    return {kind: 1000 * used / rate for kind, used in cores.items()}


def add_scaling(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each Ray row's steady-state throughput against the same stack and level on one
    Ray worker in the same round: `scaling` (x1 = 1.0) and `efficiency` (scaling /
    workers)."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        base = row["stack"].split(" ray ")[0]
        return (base, row["concurrency"], row["episodes"], row.get("round", 0))

    one = {
        key(r): r["steady_calls_per_s"] for r in rows if r["backend"] == "ray" and r["workers"] == 1
    }
    for row in rows:
        base = one.get(key(row))
        rate = row["steady_calls_per_s"]
        if row["backend"] == "ray" and base and rate:
            row["scaling"] = rate / base
            row["efficiency"] = rate / base / row["workers"]
            elsewhere = without_the_model(row)
            if row["workers"] > 1 and elsewhere is not None:
                row["scaling_model_elsewhere"] = row["scaling"] * elsewhere
    return rows


def without_the_model(row: dict[str, Any]) -> float | None:
    """How much faster a CPU-bound multi-worker row would run with the fake model's CPU
    given to it (the model on other machines, as in use): its steady CPU per call over
    the same without the fake server's share. The cores the row's processes use stay as
    measured. The one-worker row it is compared with is taken as measured: its worker
    already has a core of its own."""
    split = row.get("steady_cpu_ms_per_call")
    if not split:
        return None
    total = sum(split[kind] for kind in ("driver", "workers", "server", "ray"))
    rest = total - split["server"]
    return total / rest if rest > 0 else None


def mean_or_none(values: list[float | None]) -> float | None:
    """The mean of the figures present (a level whose episodes all failed has none)."""
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def run_runner_benchmark(
    levels: list[tuple[int, int]] | None = None,
    latency: float = DEFAULT_LATENCY,
    env: str = "airline",
    data_dir: str | None = None,
    stacks: tuple[str, ...] = STACKS,
    model: str = DEFAULT_MODEL,
    progress: Callable[[], Any] | None = None,
    processes: int = 1,
    workers: tuple[int, ...] = (1, 2),
    backends: tuple[str, ...] = ("local",),
    rounds: int = 1,
) -> list[dict[str, Any]]:
    """One row per stack and (concurrency, episodes) level; see the module docstring.

    Stacks (`ALL_STACKS`): "litellm" is the real tool-calling agent and LLM user (the
    number that matters); "litellm-sdk" the same through litellm's openai-SDK route and
    default clients; "raw" swaps both for bare asyncio clients to isolate the runner's
    overhead. `processes` > 1 splits every level evenly over that many processes started
    together. `progress`, a module-level function returning a runner observer, attaches
    one (the CLI's progress bar) to every run. `backends` "ray" runs every level of the
    model-client stacks with `tau run --backend ray` once per count in `workers`, on one
    local Ray started for the benchmark. A one-episode warm-up per stack and backend
    (imports, connections) is not measured. `rounds` > 1 measures every row that many
    times, round by round (1 worker, 2 workers, 1 worker, ...: a shared machine's
    drifting speed hits both alike), and reports each row's median round (`collapse`).
    """
    unknown = [s for s in stacks if s not in ALL_STACKS]
    if unknown:
        raise ValueError(f"unknown stack(s) {unknown}; choose from {', '.join(ALL_STACKS)}")
    levels = levels or DEFAULT_LEVELS
    if processes < 1 or any(min(c, n) < processes for c, n in levels):
        raise ValueError("every level needs at least one episode and one slot per process")
    if not workers or min(workers) < 1:
        raise ValueError("--workers must be at least 1")
    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    if any(b not in BACKENDS for b in backends):
        raise ValueError(f"unknown backend(s) {backends}; choose from {', '.join(BACKENDS)}")
    if "ray" in backends and processes > 1:
        raise ValueError("--backend ray takes no --processes")
    from tau_bench.llm import configure_litellm

    configure_litellm()
    if "litellm-sdk" in stacks:  # the openai SDK insists on a key; the fake server ignores it
        os.environ.setdefault("OPENAI_API_KEY", "mock-server-needs-no-key")
    server = OpenAIServerProcess(RESPONDER, latency=latency)
    rows = []
    ray = start_bench_ray(max(workers)) if "ray" in backends else None
    try:
        with tempfile.TemporaryDirectory(prefix="runner-bench-") as tmp:
            for stack in stacks:
                setups = [
                    Setup(server.base, env, data_dir, tmp, model, progress, count, backend)
                    for backend, count in runs(stack, backends, workers)
                ]
                for setup in setups:
                    measure(setup, stack, 1, 1)  # warm-up: imports, first connections
                for round_ in range(rounds):
                    for setup in setups:
                        for concurrency, episodes in levels:
                            row = run_level(
                                server, setup, stack, concurrency, episodes, latency, processes
                            )
                            rows.append({**row, "round": round_})
    finally:
        server.stop()
        if ray is not None:
            ray.shutdown()
    return add_ceiling(collapse(add_scaling(rows)))


def collapse(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per stack and level out of its rounds: the round with the median
    throughput (steady where measured), its `scaling` replaced by the median of the
    rounds' scalings; every round's figures stay in `*_rounds`."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["stack"], row["concurrency"], row["episodes"]), []).append(row)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue

        def rate(row: dict[str, Any]) -> float:
            return float(row["steady_calls_per_s"] or row["calls_per_s"] or 0.0)

        middle = sorted(group, key=rate)[(len(group) - 1) // 2]
        row = {
            **middle,
            "rounds": len(group),
            "calls_per_s_rounds": [rate(r) for r in group],
            "steady_cpu_ms_per_call_rounds": [r.get("steady_cpu_ms_per_call") for r in group],
        }
        scalings = [r["scaling"] for r in group if "scaling" in r]
        if scalings:
            row["scaling"] = statistics.median(scalings)
            row["efficiency"] = row["scaling"] / row["workers"]
            row["scaling_rounds"] = scalings
        elsewhere = [r["scaling_model_elsewhere"] for r in group if "scaling_model_elsewhere" in r]
        if elsewhere:
            row["scaling_model_elsewhere"] = statistics.median(elsewhere)
            row["scaling_model_elsewhere_rounds"] = elsewhere
        out.append(row)
    return out


def add_ceiling(
    rows: list[dict[str, Any]], measure: Callable[[int], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Each multi-worker Ray row's `machine_ceiling`: what this machine gives that many
    CPU-bound processes against one (`ceiling.parallel_ceiling`, or `measure`), measured
    once per worker count after the levels: the most its `scaling` could be."""
    from tau_bench.benchmarks.runner.ceiling import parallel_ceiling

    counts = sorted({r["workers"] for r in rows if r["backend"] == "ray" and r["workers"] > 1})
    for count in counts:
        ceiling = (measure or parallel_ceiling)(count)
        for row in rows:
            if row["backend"] == "ray" and row["workers"] == count:
                row["machine_ceiling"] = ceiling["median"]
                row["machine_ceiling_rounds"] = ceiling["ratios"]
    return rows


def runs(
    stack: str, backends: tuple[str, ...], workers: tuple[int, ...]
) -> list[tuple[Literal["local", "ray"], int]]:
    """(backend, workers) pairs a stack is measured on (raw: local only, its clients
    are injected objects that cannot travel to Ray workers)."""
    out: list[tuple[Literal["local", "ray"], int]] = []
    if "local" in backends:
        out.append(("local", 1))
    if "ray" in backends and stack != "raw":
        out += [("ray", n) for n in workers]
    return out


def start_bench_ray(workers: int) -> Any:
    """One local Ray for every Ray row (runs join it): `workers` CPUs, no dashboard."""
    from tau_bench.runner.backends.ray import ray_module

    ray = ray_module()
    ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return ray
