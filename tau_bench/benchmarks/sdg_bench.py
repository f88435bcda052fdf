"""SDG throughput: `tau sdg` generation against a mock model server with real latency.

A real OpenAI-compatible HTTP server on 127.0.0.1 (uvicorn in a thread) answers every
chat completion after `--latency` seconds with the offline fake model, which reads the
prompt's user context and answers like a careful model - except for a seeded share of
users (`--fault-rate`) for whom it makes one of its scripted mistakes (malformed JSON,
foreign ids, unknown tools, ...). The generator runs through litellm exactly as in
production, at `--concurrency` samples at once. Reported per domain and difficulty:
scenarios validated per minute, tasks written per minute, validation rate.

    tau bench sdg [--samples 48] [--concurrency 8] [--latency 0.5]
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DOMAINS = ("airline", "retail")
LEVELS = ("easy", "medium", "hard")


def fault_picker(rate: float, seed: int) -> Any:
    """Each (stage, user) makes one scripted mistake with probability `rate`."""
    from tau_bench.sdg.fake import INSTRUCTION_FAULTS, SCENARIO_FAULTS

    def pick(stage: str, view: dict[str, Any]) -> str | None:
        rng = random.Random(f"{seed}:{stage}:{view.get('user_id')}")
        if rng.random() >= rate:
            return None
        return rng.choice(SCENARIO_FAULTS if stage == "scenario" else INSTRUCTION_FAULTS)

    return pick


async def _one(
    domain: Any, level: str, base_url: str, samples: int, concurrency: int, seed: int, out: Path
) -> dict[str, Any]:
    from tau_bench.sdg.difficulty import Difficulty
    from tau_bench.sdg.pipeline import GenerateOptions, generate

    options = GenerateOptions(
        env=domain.name,
        difficulty=Difficulty(level),
        num_samples=samples,
        output_file=out / f"{domain.name}-{level}.jsonl",
        model="openai/fake-sdg",
        api_base=base_url,
        max_concurrency=concurrency,
        seed=seed,
        llm_extra={"api_key": "local-fake-server"},
    )
    report = await generate(options, domain=domain)
    return report.to_dict()


def run(
    *,
    domains: Sequence[str] = DOMAINS,
    levels: Sequence[str] = LEVELS,
    samples: int = 48,
    concurrency: int = 8,
    latency: float = 0.5,
    fault_rate: float = 0.2,
    seed: int = 0,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Generate `samples` per (domain, level); the per-run reports and the totals."""
    from tau_bench.llm.runtime import litellm

    litellm()  # configured and imported up front: its import time is not generation time

    from tau_bench.domains import load_domain
    from tau_bench.fakes import OpenAIServer
    from tau_bench.sdg.fake import FakeModel

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sdg-bench-") as tmp:
        for name in domains:
            domain = load_domain(name, data_dir)
            _ = domain.base_db.data_hash  # the one-off hash index is not generation time
            model = FakeModel(domain, fault_picker(fault_rate, seed))
            with OpenAIServer(model.respond, latency=latency) as server:
                for level in levels:
                    results.append(
                        asyncio.run(
                            _one(
                                domain,
                                level,
                                server.base_url,
                                samples,
                                concurrency,
                                seed,
                                Path(tmp),
                            )
                        )
                    )
    elapsed = sum(r["elapsed"] for r in results)
    validated = sum(r["validated"] for r in results)
    total_samples = sum(r["samples"] for r in results)
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "settings": {
            "samples": samples,
            "concurrency": concurrency,
            "latency": latency,
            "fault_rate": fault_rate,
            "seed": seed,
        },
        "runs": results,
        "total": {
            "samples": total_samples,
            "validated": validated,
            "written": sum(r["written"] for r in results),
            "validation_rate": validated / total_samples if total_samples else 0.0,
            "scenarios_per_minute": validated * 60.0 / elapsed if elapsed else 0.0,
            "model_calls": sum(r["usage"]["calls"] for r in results),
            "elapsed": elapsed,
        },
    }


def render(results: dict[str, Any]) -> list[Any]:
    """The throughput table, then one line of rejection reasons per run."""
    from rich.table import Table

    s = results["settings"]
    table = Table(
        title=f"tau sdg throughput: mock model {s['latency'] * 1000:.0f} ms/call, "
        f"concurrency {s['concurrency']}, {s['fault_rate']:.0%} of users get a faulty answer"
    )
    columns = ("env", "level", "samples", "validated", "written", "calls", "elapsed", "scen./min")
    for col in columns:
        table.add_column(
            col, justify="left" if col in ("env", "level") else "right", overflow="fold"
        )
    lines = []
    for r in results["runs"]:
        table.add_row(
            r["env"],
            r["difficulty"],
            str(r["samples"]),
            f"{r['validated']} ({r['validation_rate']:.0%})",
            str(r["written"]),
            str(r["usage"]["calls"]),
            f"{r['elapsed']:.1f} s",
            f"{r['scenarios_per_minute']:.0f}",
        )
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["rejected"].items())) or "none"
        lines.append(f"rejected {r['env']}/{r['difficulty']}: {reasons}")
    t = results["total"]
    table.add_row(
        "all",
        "",
        str(t["samples"]),
        f"{t['validated']} ({t['validation_rate']:.0%})",
        str(t["written"]),
        str(t["model_calls"]),
        f"{t['elapsed']:.1f} s",
        f"{t['scenarios_per_minute']:.0f}",
    )
    return [table, *lines]
