"""The README's offline main job (`make demo`): real τ-bench tasks through the hosted-agent
adapters, against local stand-ins, with no API keys.

1. Installation check: every test task's ground truth replays to reward 1.0.
2. Every installed adapter harness's demo (entry-point group `tau_adapters.demos`): a
   local stand-in of the hosted platform (the Dialogflow CX gRPC emulator, the reference
   HTTP bot, ...) with the oracle brain, driven by the adapter exactly as it drives the
   real service, with the scripted user. The core names no adapter.
Results land in `results/demo/` in the normal formats; a table compares the runs.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

# τ³ first (retail; telecom, where the customer acts on their own phone), then τ-bench v1.
DEMO_ENVS = ("tau3/retail", "tau3/telecom", "airline", "retail")


def _config(env: str, strategy: str, agent_options: dict[str, Any], log_dir: Path) -> Any:
    from tau_bench.config import RunConfig

    return RunConfig(
        env=env,
        agent_strategy=strategy,
        user_strategy="scripted",
        task_split="test",
        max_concurrency=16,
        log_dir=str(log_dir),
        agent_options=agent_options,
        judge_model="assume-met",  # offline: NL assertions marked met, and every record says so
        run_name=f"demo-{strategy}-{env.replace('/', '-')}",
        quiet=True,
    )


DEMOS_GROUP = "tau_adapters.demos"


class DemoTarget(Protocol):
    """A hosted-agent adapter's local stand-in, registered by its harness."""

    title: str
    label: str
    strategy: str

    def serve(self, workdir: Path) -> AbstractAsyncContextManager[dict[str, Any]]: ...


def demo_targets() -> list[DemoTarget]:
    """Every installed adapter harness's demo (entry-point group `tau_adapters.demos`)."""
    from tau_adapters.registry import group_entry_points

    found = []
    for ep in sorted(group_entry_points(DEMOS_GROUP), key=lambda e: e.name):
        try:
            found.append(ep.load())
        except ImportError:
            continue  # that adapter's optional dependencies are not installed
    return found


async def _runs(target: DemoTarget, log_dir: Path, workdir: Path) -> list[tuple[str, Any]]:
    from tau_bench.runner import run

    outcomes = []
    async with target.serve(workdir) as options:
        for env in DEMO_ENVS:
            config = _config(env, target.strategy, options, log_dir)
            outcomes.append((f"{target.label} / {env}", await run(config)))
    return outcomes


def _verify(console: Any) -> bool:
    from rich.text import Text

    from tau_bench.config import RunConfig
    from tau_bench.runner.plan import for_run
    from tau_bench.suites import load_domain

    started = time.perf_counter()
    total = ok = 0
    for env in DEMO_ENVS:
        domain = for_run(load_domain(env), RunConfig(env=env, judge_model="assume-met"))
        results = domain.verify(domain.tasks("test"))
        total += len(results)
        ok += sum(1 for r in results if r.reward is not None and r.reward.reward == 1.0)
    console.print(
        Text.assemble(
            ("1. Installation check", "bold"),
            f": {ok}/{total} test tasks replay to reward 1.0 "
            f"({time.perf_counter() - started:.2f} s)",
        )
    )
    return ok == total


def main() -> int:
    from rich.table import Table

    from tau_bench import terminal
    from tau_bench.data.paths import DataDirError

    console = terminal.console(width=140)
    log_dir = Path("results") / "demo"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        if not _verify(console):
            console.print(
                "ground-truth verification failed: see `tau tasks verify --env all`", style="red"
            )
            return 1
    except DataDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    outcomes: list[tuple[str, Any]] = []
    for number, target in enumerate(demo_targets(), start=2):
        console.print(f"{number}. {target.title} …", style="bold")
        with tempfile.TemporaryDirectory() as tmp:
            outcomes += asyncio.run(_runs(target, log_dir, Path(tmp)))
    table = Table(
        title="τ³ and τ-bench test splits through the hosted-agent adapters (scripted user, offline)"
    )
    for col in ("run", "tasks", "episodes", "avg reward", "pass^1", "errors", "agent p50 latency"):
        table.add_column(col, justify="left" if col == "run" else "right")
    all_ok = True
    for label, outcome in outcomes:
        s = outcome.summary
        avg = s.get("avg_reward")
        pass1 = (s.get("pass_hat_k") or {}).get("1")
        errors = s.get("errors", 0)
        latency = ((s.get("latency") or {}).get("agent_turn") or {}).get("p50")
        all_ok = all_ok and avg == 1.0 and not errors
        table.add_row(
            label,
            str(len({r.task_id for r in outcome.records})),
            str(len(outcome.records)),
            "-" if avg is None else f"{avg:.3f}",
            "-" if pass1 is None else f"{pass1:.3f}",
            str(errors),
            "-" if latency is None else f"{latency * 1000:.1f} ms",
        )
    console.print(table)
    for label, outcome in outcomes:
        console.print(f"  {label}: {os.path.relpath(outcome.plan.results_path)}")
    console.print(
        "Every episode ran through a real adapter (gRPC / HTTP / A2A), its tool calls executed on "
        "the local domain DB (τ³ telecom: the customer's phone actions too) and scored as the "
        "original benchmarks score them. Next: point the same commands at your "
        "own agent (README; `tau adapters NAME` lists an adapter's flags)."
    )
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
