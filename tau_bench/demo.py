"""The README's offline main job (`make demo`): real τ-bench tasks through the hosted-agent
adapters, against local stand-ins, with no API keys.

1. Installation check: every test task's ground truth replays to reward 1.0.
2. Dialogflow CX: the local gRPC emulator (oracle brain) serves a "decibel" agent; the
   Dialogflow CX adapter talks to it exactly as it talks to Google (DetectIntent, function
   tool calls, ToolCallResult), with the scripted user.
3. HTTP: the reference bot (generic-json preset, oracle brain) on 127.0.0.1; the HTTP
   adapter drives it from a config file.
Results land in `results/demo/` in the normal formats; a table compares the runs.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEMO_ENVS = ("airline", "retail")


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
        run_name=f"demo-{strategy}-{env}",
        quiet=True,
    )


async def _dialogflow_runs(log_dir: Path) -> list[tuple[str, Any]]:
    from adapters.dialogflow.emulator import Emulator
    from tau_bench.runner import run

    emulator = Emulator(brain="oracle", env="airline")
    address = await emulator.start()
    outcomes = []
    try:
        for env in DEMO_ENVS:
            options = {"emulator": address, "project_id": "demo-project", "agent_id": "demo-agent"}
            outcomes.append(
                (
                    f"decibel (Dialogflow CX emulator) / {env}",
                    await run(_config(env, "decibel", options, log_dir)),
                )
            )
    finally:
        await emulator.stop()
    return outcomes


async def _http_runs(log_dir: Path, workdir: Path) -> list[tuple[str, Any]]:
    from adapters.http.presets import preset_text
    from adapters.http.reference_bot import create_bot_app
    from adapters.http.toolserver.background import BackgroundServer
    from tau_bench.runner import run

    token = secrets.token_urlsafe(16)
    server = BackgroundServer(create_bot_app(brain="oracle", token=token))
    url = server.start()
    os.environ["BOT_URL"], os.environ["BOT_TOKEN"] = url, token
    config_path = workdir / "bot.yaml"
    config_path.write_text(preset_text("generic-json"), encoding="utf-8")
    outcomes = []
    try:
        for env in DEMO_ENVS:
            options = {"http_config": str(config_path)}
            outcomes.append(
                (f"http (reference bot) / {env}", await run(_config(env, "http", options, log_dir)))
            )
    finally:
        server.stop()
    return outcomes


def _verify(console: Any) -> bool:
    from tau_bench.domains import load_domain
    from tau_bench.verify import verify_tasks

    started = time.perf_counter()
    total = ok = 0
    for env in DEMO_ENVS:
        domain = load_domain(env)
        results = verify_tasks(domain, domain.tasks("test"))
        total += len(results)
        ok += sum(1 for r in results if r.reward.reward == 1.0)
    console.print(
        f"[bold]1. Installation check[/bold]: {ok}/{total} test tasks replay to reward 1.0 "
        f"({time.perf_counter() - started:.2f} s)"
    )
    return ok == total


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from rich.console import Console
    from rich.table import Table

    from tau_bench.data.paths import DataDirError

    console = Console(width=140)
    log_dir = Path("results") / "demo"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        if not _verify(console):
            console.print(
                "[red]ground-truth verification failed: see `tau tasks verify --env all`[/red]"
            )
            return 1
    except DataDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    console.print(
        "[bold]2. Dialogflow CX adapter[/bold] against the local gRPC emulator (oracle brain) …"
    )
    outcomes = asyncio.run(_dialogflow_runs(log_dir))
    console.print("[bold]3. HTTP adapter[/bold] against the local reference bot (oracle brain) …")
    with tempfile.TemporaryDirectory() as tmp:
        outcomes += asyncio.run(_http_runs(log_dir, Path(tmp)))
    table = Table(
        title="τ-bench test split through the hosted-agent adapters (scripted user, offline)"
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
        console.print(f"  {label}: {os.path.relpath(outcome.plan.results_path)}", markup=False)
    console.print(
        "Every episode ran through a real adapter (gRPC / HTTP), its tool calls executed on the "
        "local domain DB and scored by the DB hash. Next: point the same commands at your own "
        "agent (README, docs/dialogflow.md, docs/http-adapter.md)."
    )
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
