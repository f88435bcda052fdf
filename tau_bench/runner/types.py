"""What a run hands around: progress hooks, its outcome, a provider's and a run's secrets,
and the per-provider episode slots (small pieces `core` and the Ray driver share)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from tau_adapters.redaction import environment_secrets, secret_values
from tau_adapters.registry import AgentProvider
from tau_bench.config import RunConfig
from tau_bench.config.run_config import secret_option_names
from tau_bench.records import EpisodeRecord
from tau_bench.runner.plan import RunPlan


class RunTerminated(Exception):
    """The run got SIGTERM and stopped as on Ctrl-C: the finished episodes are written
    (log, results, summary with `interrupted: true`) and `runner.outcome` is set."""


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
    API keys), masked in every record; a single string is one secret (not its letters).
    A provider that fails to say declares none (`provider_problem` refused, before the
    run, the shapes that would silently mask nothing)."""
    try:
        found = getattr(provider, "secrets", None) or ()
        if isinstance(found, str | bytes):
            found = [found]
        return [s.decode() if isinstance(s, bytes) else str(s) for s in found if s]
    except Exception:
        return []


def provider_problem(provider: object) -> str | None:
    """Why what an adapter's builder returned cannot serve a run, or None: not a provider
    at all (`None`, an adapter class), or `secrets` of a shape that would mask nothing (a
    one-shot iterator, used up by the first record; a number)."""
    if not isinstance(provider, AgentProvider):
        return (
            f"its builder returned {type(provider).__name__}, not a provider "
            "(an object with new_adapter() and async aclose())"
        )
    try:
        secrets = getattr(provider, "secrets", None)
    except Exception as exc:
        return f"its `secrets` cannot be read: {type(exc).__name__}: {exc}"
    if secrets is None or isinstance(secrets, str):
        return None
    if not isinstance(secrets, Collection) or iter(secrets) is secrets:
        return (
            f"its `secrets` is a {type(secrets).__name__}: give a list, tuple or set of "
            "strings (an iterator would be used up by the first record, masking nothing after)"
        )
    return None


def config_secrets(config: RunConfig) -> list[str]:
    """The secrets of every model a run calls besides the agent provider's own: the user
    simulators' and the NL judge's API keys (they read them from the environment:
    OPENAI_API_KEY..., so every secret-looking environment value), secret-looking agent
    and user options, and the passwords of the model endpoints' URLs. A model may echo
    any of them (a user simulator or a judge repeating its request), so records mask them
    as they mask the provider's."""
    found = set(environment_secrets()) | secret_values(config.agent_options)
    for name in secret_option_names(config.agent_strategy):  # marked secret by the adapter
        found |= secret_values(config.agent_options.get(name), under_secret=True)
    for model in config.user_models or [config.user_model]:
        try:
            found |= secret_values(config.user_options(model))
        except Exception:  # a user that cannot be configured fails the run elsewhere
            continue
    for url in (config.api_base, config.user_api_base):
        found.update(p for p in [_url_password(url)] if p)
    return sorted(found)


def _url_password(url: str | None) -> str | None:
    """The password of `https://user:PASS@host/...`, if any."""
    try:
        return urlsplit(url).password if url and "@" in url else None
    except ValueError:
        return None


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
