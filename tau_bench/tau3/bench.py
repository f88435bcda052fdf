"""Speed and memory of the τ³ core (`tau bench core` prints this table).

Per domain: first load (parse + normalise, once per process), ground-truth verification
of every task of the default split (replay + full evaluation), environment reset, DB hash
(pristine and after a write), memory per live episode (tracemalloc over live replayed
environments), and an estimate of the original's per-task cost: it builds a fresh
environment — json parse + pydantic validation of the whole DB — four times per verified
task (live run, tool-type lookup, predicted and gold environments) and hashes the full
dump twice; we time exactly those operations here with an equivalent whole-DB model.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, create_model

from tau_adapters.jsonsafe import printable
from tau_bench.data.errors import DataDirError
from tau_bench.tau3.domain import domain_names, load_domain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.judge import AssumeMetJudge
from tau_bench.tau3.replay import replay_task
from tau_bench.tau3.store import PydanticSource, TableSource, hash_json, load_structured
from tau_bench.tau3.tasks import load_tasks

__all__ = ["format_table", "main", "run_bench"]

DEFAULT_DOMAINS = ("airline", "retail", "mock")


def _timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    start = time.perf_counter()
    result = None
    for _ in range(repeat):
        result = fn()
    return (time.perf_counter() - start) / repeat, result


def _original_task_cost(source: Any, db_path: Path) -> float | None:
    """Seconds the original spends per verified task on DB loads and full hashes."""
    if isinstance(source, TableSource):
        fields: dict[str, Any] = {
            name: (dict[str, m], ...)  # type: ignore[valid-type]
            for name, m in source.models.items()
        }
        model: type[BaseModel] = create_model("WholeDB", **fields)
    elif isinstance(source, PydanticSource):
        model = source.model
    else:
        return None
    load_s, db = _timed(lambda: model.model_validate(load_structured(db_path)))
    hash_s, _ = _timed(lambda: hash_json(db.model_dump()))
    return 4 * load_s + 2 * hash_s


def _bench_domain(root: Path, name: str) -> dict[str, Any]:
    load_s, loaded = _timed(lambda: load_domain(name, root))
    tasks = load_tasks(root, name)
    judge = AssumeMetJudge()
    replay_task(loaded, tasks[0], judge)  # warm the hash index outside the timing
    start = time.perf_counter()
    rewards = [replay_task(loaded, t, judge, with_hashes=False) for t in tasks]
    verify_s = time.perf_counter() - start
    passed = sum(1 for r in rewards if r.reward == 1.0)
    reset_s, env = _timed(lambda: Environment(loaded), repeat=200)
    hash_s, _ = _timed(env.agent_db_hash, repeat=50)
    writer = next(
        (t for t in tasks if any(env.is_mutating(a.name) for a in t.expected_actions)), tasks[0]
    )
    live = Environment(loaded)
    for action in writer.expected_actions:
        live.call(action.name, action.arguments, action.requestor)
    index = getattr(getattr(live.tools.db, "base", None), "_json_index", None)
    if index is not None:
        index._memo.clear()  # time a real incremental hash, not a memo hit
    hash_written_s, _ = _timed(live.agent_db_hash)
    gc.collect()
    tracemalloc.start()
    base_mem = tracemalloc.get_traced_memory()[0]
    keep = []
    for t in tasks[:20]:
        e = Environment(loaded)
        for action in t.expected_actions:
            e.call(action.name, action.arguments, action.requestor)
        keep.append(e)
    gc.collect()
    per_episode = (tracemalloc.get_traced_memory()[0] - base_mem) / max(1, len(keep))
    tracemalloc.stop()
    db_file = next(
        (loaded.domain_dir / f for f in ("db.json", "db.toml") if (loaded.domain_dir / f).exists()),
        None,
    )
    original = _original_task_cost(loaded.agent_source, db_file) if db_file else None
    per_task = verify_s / max(1, len(tasks))
    return {
        "domain": name,
        "tasks": len(tasks),
        "passed": passed,
        "load_s": load_s,
        "verify_s": verify_s,
        "per_task_ms": per_task * 1000,
        "reset_ms": reset_s * 1000,
        "hash_ms": hash_s * 1000,
        "hash_after_write_ms": hash_written_s * 1000,
        "episode_kb": per_episode / 1024,
        "original_per_task_ms": None if original is None else original * 1000,
        "speedup": None if original is None else original / per_task,
    }


def run_bench(root: Path, domains: Sequence[str] = DEFAULT_DOMAINS) -> list[dict[str, Any]]:
    """Measure every domain; one row per domain (see `format_table`)."""
    return [_bench_domain(Path(root), d) for d in domains]


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a fixed-width text table."""
    head = (
        f"{'domain':<10}{'tasks':>6}{'ok':>5}{'load s':>8}{'verify s':>10}{'ms/task':>9}"
        f"{'reset ms':>10}{'hash ms':>9}{'hash+w ms':>11}{'KB/episode':>12}"
        f"{'orig ms/task*':>15}{'speedup':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        orig = "n/a" if r["original_per_task_ms"] is None else f"{r['original_per_task_ms']:.0f}"
        speed = "n/a" if r["speedup"] is None else f"{r['speedup']:.0f}x"
        lines.append(
            f"{r['domain']:<10}{r['tasks']:>6}{r['passed']:>5}{r['load_s']:>8.2f}"
            f"{r['verify_s']:>10.2f}{r['per_task_ms']:>9.1f}{r['reset_ms']:>10.3f}"
            f"{r['hash_ms']:>9.3f}{r['hash_after_write_ms']:>11.2f}{r['episode_kb']:>12.1f}"
            f"{orig:>15}{speed:>9}"
        )
    lines.append(
        "* estimated: 4 whole-DB loads (json + pydantic) + 2 full hashes per task, as the "
        "original does"
    )
    return "\n".join(lines)


USAGE = "usage: python -m tau_bench.tau3.bench DATA_DIR [DOMAIN ...]"


def main(argv: list[str] | None = None) -> int:
    """`python -m tau_bench.tau3.bench DATA_DIR [DOMAIN ...]`: print the table; a missing
    argument or a bad data directory is one line on stderr and exit 2, not a traceback."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not args or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    unknown = [name for name in args[1:] if name not in domain_names()]
    if unknown:
        known = ", ".join(domain_names())
        print(
            f"error: unknown τ³ domain {printable(repr(unknown[0]))}; known: {known}",
            file=sys.stderr,
        )
        return 2
    try:
        rows = run_bench(Path(args[0]), args[1:] or DEFAULT_DOMAINS)
    except DataDirError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 2
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
