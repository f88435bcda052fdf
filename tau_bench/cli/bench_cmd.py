"""`tau bench core|runner|sdg|adapters`: performance benchmarks that print a table."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(no_args_is_help=True)

MAX_EPISODES = 1_000_000  # a level's episodes, as a run's (`RunConfig.max_concurrency`)
MAX_LATENCY = 60.0  # seconds the fake model takes per call: longer measures nothing more


def _throwaway_progress() -> Any:
    """The CLI's progress bar drawing into a throwaway terminal: its cost, not its look.
    Module-level so that spawned benchmark processes can unpickle it."""
    import io

    from tau_bench import terminal
    from tau_bench.cli.run_progress import RichProgress

    console = terminal.console(file=io.StringIO(), force_terminal=True, width=120)
    return RichProgress(console, enabled=True)


def _check_json(path: Path | None) -> None:
    """`--json` checked before the benchmark (minutes of it), not when its figures are in."""
    if path is not None:
        from tau_bench.cli.output_paths import check_output

        check_output(path, "--json")


def _write_json(path: Path, figures: Any) -> None:
    from tau_bench.cli.errors import fail, note
    from tau_bench.results import write_json_atomic

    try:
        write_json_atomic(path, figures)
    except OSError as exc:
        fail(f"--json: cannot write {path}: {exc.strerror or exc}")
    note(f"wrote {path}")


def _machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


@app.command("core")
def core(
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    repeat: int = typer.Option(20, min=1, max=10_000, help="Samples per median."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
    tau3_data_dir: Path | None = typer.Option(
        None, "--tau3-data-dir", help="τ³ data directory (default: $TAU3_BENCH_DATA / cache)."
    ),
) -> None:
    """Data load, reset, tool steps, hash, reward, verification and memory per domain
    (τ-bench v1, then τ³ when its data is found)."""
    from tau_bench import terminal
    from tau_bench.benchmarks.core import render, run
    from tau_bench.data.paths import resolve_data_dir

    _check_json(json_out)
    root = resolve_data_dir(data_dir)
    results = run(root, repeat)
    console = terminal.console(width=150)
    console.print(render(results))
    tau3 = _tau3_core(console, tau3_data_dir)
    console.print(f"machine: {_machine()}")
    if json_out:
        _write_json(json_out, {**results, "tau3": tau3} if tau3 else results)


def _tau3_core(console: Any, data_dir: Path | None) -> dict[str, Any] | None:
    """τ³'s table (`tau_bench.tau3.bench`) and the whole-process verification time."""
    import subprocess
    import sys
    import time

    from tau_bench.data.errors import DataDirError
    from tau_bench.tau3.bench import format_table, run_bench
    from tau_bench.tau3.data import resolve_tau3_data_dir

    try:
        root = resolve_tau3_data_dir(data_dir)
    except DataDirError as exc:
        console.print(f"τ³: skipped ({exc})")
        return None
    rows = run_bench(root)
    console.print("\nτ³ (tau2-bench 1.0.1)")
    console.print(format_table(rows))
    tau = Path(sys.executable).with_name("tau")
    cmd = [
        str(tau),
        "tasks",
        "verify",
        "--env",
        "tau3/airline,tau3/retail",
        "--data-dir",
        str(root),
    ]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    whole = time.perf_counter() - started
    console.print(
        f"whole process `tau tasks verify --env tau3/airline,tau3/retail` (164 tasks): "
        f"{whole:.2f} s, exit {done.returncode}",
    )
    telecom = _telecom_whole_process(console, tau, root)
    return {
        "domains": rows,
        "verify_process_s": whole,
        "verify_exit": done.returncode,
        **({"telecom_full": telecom} if telecom else {}),
    }


def _telecom_whole_process(console: Any, tau: Path, root: Path) -> dict[str, Any] | None:
    """`tau tasks verify --env tau3/telecom --task-split full` as one whole process: its CPU
    seconds (the child's user+system time: the machine is shared) against the original's
    measured CPU cost on the same tasks (`tau_bench.tau3.domains.telecom.bench`)."""
    import resource
    import subprocess

    from tau_bench.tau3.domains.telecom.bench import ORIGINAL_LOAD_CPU_S, ORIGINAL_PER_TASK_CPU_S
    from tau_bench.tau3.tasks import load_tasks

    try:
        count = len(load_tasks(root, "telecom", "full"))
    except Exception:  # no telecom data in this root
        return None
    cmd = [str(tau), "tasks", "verify", "--env", "tau3/telecom", "--task-split", "full"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [*cmd, "--data-dir", str(root)], capture_output=True, text=True, timeout=900
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    original = ORIGINAL_LOAD_CPU_S + ORIGINAL_PER_TASK_CPU_S * count
    console.print(
        f"whole process `{' '.join(cmd[1:])}` ({count} tasks): {cpu:.2f} s CPU "
        f"({cpu / count * 1e3:.2f} ms/task), exit {done.returncode}; original "
        f"{original:.1f} s CPU ({ORIGINAL_PER_TASK_CPU_S * 1e3:.1f} ms/task): "
        f"{original / cpu:.0f}x faster",
    )
    return {"tasks": count, "cpu_s": cpu, "original_cpu_s": original, "exit": done.returncode}


@app.command("runner")
def runner(
    levels: str = typer.Option(
        "1:20,50:500,200:500", help="concurrency:episodes pairs, comma separated."
    ),
    episodes: int | None = typer.Option(
        None, min=1, max=MAX_EPISODES, help="Episodes at every level (overrides)."
    ),
    latency: float = typer.Option(
        0.2, max=MAX_LATENCY, help="Seconds the fake server takes per model call."
    ),
    env: str = typer.Option("airline", help="Domain of the (scripted) episodes."),
    stack: str = typer.Option(
        "both", help="litellm | direct | litellm-sdk | raw, or both (litellm, direct, raw) or all."
    ),
    model: str = typer.Option("openai/gpt-4o-mini", help="Model name sent (and priced)."),
    progress: bool = typer.Option(False, help="Attach the CLI's progress bar to every run."),
    processes: int = typer.Option(
        1, min=1, max=64, help="Split every level over N processes started together."
    ),
    backend: str = typer.Option("local", help="Where episodes run: local, ray, or both."),
    workers: str | None = typer.Option(
        None, help="Ray worker counts of the ray rows (default 1,2; needs --backend ray|both)."
    ),
    rounds: int = typer.Option(
        1,
        min=1,
        max=100,
        help="Measure every row N times, interleaved; report each row's median round.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON."),
    markdown: bool = typer.Option(False, help="Also print the table as Markdown."),
) -> None:
    """`tau run` against a fake OpenAI server: wall time vs the latency bound, CPU, RSS."""
    from tau_bench import terminal
    from tau_bench.benchmarks import runner as bench
    from tau_bench.cli.errors import fail
    from tau_bench.data.paths import resolve_data_dir

    try:
        import psutil  # noqa: F401  (CPU and memory of the processes measured)
    except ImportError:
        fail("tau bench runner needs psutil: pip install psutil (make setup installs it)")
    _check_json(json_out)
    try:
        pairs = bench.parse_levels(levels)
    except ValueError as exc:
        fail(f"--levels: {exc}")
    if episodes is not None:
        pairs = [(c, episodes) for c, _ in pairs]
    stacks = {"both": bench.STACKS, "all": bench.ALL_STACKS}.get(stack, (stack,))
    if any(s not in bench.ALL_STACKS for s in stacks):
        fail(f"unknown --stack {stack!r}: choose litellm, direct, litellm-sdk, raw, both or all")
    if latency <= 0:
        fail("--latency must be positive")
    if processes < 1 or any(min(c, n) < processes for c, n in pairs):
        fail("--processes must be at least 1 and at most every level's concurrency and episodes")
    if backend not in ("local", "ray", "both"):
        fail(f"unknown --backend {backend!r}: choose local, ray or both")
    if backend == "local" and workers is not None:
        fail("--workers counts the Ray rows' workers: add --backend ray (or both)")
    if backend != "local" and all(s == "raw" for s in stacks):
        fail(f"the raw stack runs in this process only: --backend {backend} needs another --stack")
    try:
        ray_workers = bench.parse_workers(workers or "1,2")
    except ValueError as exc:
        fail(str(exc))
    root = resolve_data_dir(data_dir)
    try:
        rows = bench.run_runner_benchmark(
            pairs,
            latency,
            env,
            str(root),
            stacks,
            model=model,
            progress=_throwaway_progress if progress else None,
            processes=processes,
            workers=ray_workers,
            backends=("local", "ray") if backend == "both" else (backend,),
            rounds=rounds,
        )
    except ValueError as exc:
        fail(str(exc))
    console = terminal.console(width=200)
    console.print(bench.render(rows, latency))
    for line in bench.scaling_lines(rows):
        console.print(line, soft_wrap=True)
    console.print(f"machine: {_machine()}")
    if markdown:
        print(bench.markdown(rows))
    if json_out:
        _write_json(json_out, rows)


@app.command("sdg")
def sdg(
    samples: int = typer.Option(
        48, "--samples", min=1, max=100_000, help="Samples per domain and difficulty."
    ),
    concurrency: int = typer.Option(8, "--concurrency", min=1, max=10_000, help="Samples at once."),
    latency: float = typer.Option(
        0.5, "--latency", min=0.0, max=MAX_LATENCY, help="Seconds per model call."
    ),
    fault_rate: float = typer.Option(0.2, "--fault-rate", min=0.0, max=1.0),
    seed: int = typer.Option(0, "--seed"),
    env: list[str] = typer.Option(
        [], "--env", help="airline or retail (repeatable; default both)."
    ),
    difficulty: list[str] = typer.Option(
        [], "--difficulty", help="easy, medium or hard (repeatable; default all)."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
) -> None:
    """SDG throughput against a mock model server with real latency (docs/sdg.md)."""
    from tau_bench import terminal
    from tau_bench.benchmarks import sdg_bench
    from tau_bench.cli.errors import fail

    _check_json(json_out)
    bad = [e for e in env if e not in sdg_bench.DOMAINS]
    bad += [d for d in difficulty if d not in sdg_bench.LEVELS]
    if bad:
        fail(f"unknown value {bad[0]!r} (envs: airline, retail; levels: easy, medium, hard)")
    results = sdg_bench.run(
        domains=env or sdg_bench.DOMAINS,
        levels=difficulty or sdg_bench.LEVELS,
        samples=samples,
        concurrency=concurrency,
        latency=latency,
        fault_rate=fault_rate,
        seed=seed,
        data_dir=data_dir,
    )
    console = terminal.console()
    console.print(*sdg_bench.render(results), sep="\n")
    console.print(f"machine: {results['machine']}")
    if json_out:
        _write_json(json_out, results)


@app.command("adapters")
def adapters(
    adapter: list[str] = typer.Option(
        [], "--adapter", help="Adapter stand-in to measure (repeatable; default: all installed)."
    ),
    env: list[str] = typer.Option([], "--env", help="Domain (repeatable; default: both)."),
    tasks: int = typer.Option(
        5, "--tasks", min=1, max=10_000, help="Test tasks per adapter and domain."
    ),
    repeat: int = typer.Option(
        3, "--repeat", min=1, max=100, help="Rounds of the tasks; the lowest CPU is kept."
    ),
    agent_option: list[str] = typer.Option(
        [], "--agent-option", help="KEY=VALUE added to every adapter's options (repeatable)."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON."),
    markdown: bool = typer.Option(False, help="Also print the table as Markdown."),
) -> None:
    """Each hosted adapter's own CPU per turn against its local stand-in (concurrency 1)."""
    import os

    from tau_bench import terminal
    from tau_bench.benchmarks import adapters as bench
    from tau_bench.cli.errors import fail
    from tau_bench.data.paths import resolve_data_dir

    _check_json(json_out)
    domains = tuple(env) or bench.DOMAINS
    unknown = [d for d in domains if d not in bench.DOMAINS]
    if unknown:
        fail(f"unknown --env {unknown[0]!r}: choose {' or '.join(bench.DOMAINS)}")
    extra: dict[str, str] = {}
    for item in agent_option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--agent-option expects KEY=VALUE, got {item!r}")
        extra[key.strip()] = value
    root = resolve_data_dir(data_dir)
    try:
        rows = bench.run(adapter or None, domains, tasks, str(root), extra, repeat)
    except ValueError as exc:
        fail(str(exc))
    terminal.console(width=150).print(bench.render(rows))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {_machine()}; load average {load}")
    if markdown:
        print(bench.markdown(rows))
    if json_out:
        _write_json(json_out, bench.as_json(rows))
