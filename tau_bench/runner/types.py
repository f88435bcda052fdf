"""What a run hands around: progress hooks, its outcome, a provider's secrets, and the
per-provider episode slots (small pieces `core` and the Ray driver share)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Protocol

from tau_adapters.registry import AgentProvider
from tau_bench.records import EpisodeRecord
from tau_bench.runner.plan import RunPlan


class RunObserver(Protocol):
    """Progress hooks (the CLI's progress bar); all optional no-ops by default."""

    def started(self, total: int, done: list[EpisodeRecord]) -> None: ...

    def episode_done(self, record: EpisodeRecord) -> None: ...

    def finished(self) -> None: ...


@dataclass(repr=False)
class RunOutcome:
    plan: RunPlan
    records: list[EpisodeRecord]
    summary: dict[str, Any]
    ran: int
    interrupted: bool = False

    def __repr__(self) -> str:
        # Short on purpose: Python 3.11's asyncio.run formats the main task's result
        # when it restores the SIGINT handler, and a full repr of 10,000 records
        # took seconds of CPU at the end of every run.
        return (
            f"RunOutcome(run_name={self.plan.run_name!r}, records={len(self.records)}, "
            f"ran={self.ran}, interrupted={self.interrupted})"
        )


def provider_secrets(provider: AgentProvider) -> list[str]:
    """The values a provider declares secret (optional `secrets` attribute: its tokens,
    API keys), masked in every record; a provider that fails to say declares none."""
    try:
        found = getattr(provider, "secrets", None) or ()
        return [str(s) for s in found if s]
    except Exception:
        return []


class ProviderSlots:
    """At most N live episodes per named provider."""

    def __init__(self, limits: dict[str, int], keys: list[str | None]) -> None:
        wanted = sorted({k for k in keys if k and k in limits})
        self._sems = [asyncio.Semaphore(limits[k]) for k in wanted]

    @contextlib.asynccontextmanager
    async def hold(self) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            for sem in self._sems:  # fixed order: no deadlock between episodes
                await stack.enter_async_context(sem)
            yield
