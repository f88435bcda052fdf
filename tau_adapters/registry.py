"""Find agent providers by name through the `tau_adapters` entry-point group.

A package registers `name = "module:build"` under `[project.entry-points.tau_adapters]`;
`build(options)` returns an `AgentProvider`: built once per run (shared clients, caches),
it makes one fresh `AgentAdapter` per episode. Nothing in the core names a concrete
adapter; this repository's own baselines and adapters register the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol, runtime_checkable

from tau_adapters.extras import MissingExtraError, extra_for
from tau_adapters.protocol import AgentAdapter

GROUP = "tau_adapters"


@runtime_checkable
class AgentProvider(Protocol):
    """Makes adapters for a run; `aclose` releases what they shared.

    Optional attributes the harness reads with `getattr`: `tool_server` (a
    `ToolServerRequest`: the agent calls tools itself over the network), an async
    `preflight()` (one cheap real call that proves credentials and endpoint work),
    `display_name` (a str naming this agent in tables and run names, e.g. the HTTP
    config's `name:`, so two bots of one strategy are told apart) and `config_digest`
    (a str hash of the agent's configuration with secrets removed, recorded in the run
    manifest so that runs of differently configured agents are told apart) and `secrets`
    (the values to mask wherever they reappear, e.g. a token the bot echoes back: the
    runner masks them in every episode record, so in every file made from records).
    """

    def new_adapter(self) -> AgentAdapter: ...

    async def aclose(self) -> None: ...


class SimpleProvider:
    """An `AgentProvider` around a zero-argument adapter factory."""

    def __init__(self, factory: Callable[[], AgentAdapter]) -> None:
        self._factory = factory

    def new_adapter(self) -> AgentAdapter:
        return self._factory()

    async def aclose(self) -> None:
        return None


Builder = Callable[[Mapping[str, Any]], AgentProvider]


class UnknownAdapterError(LookupError):
    pass


_extra: dict[str, Builder] = {}


def register(name: str, builder: Builder) -> None:
    """Register a builder in-process (tests, notebooks); entry points are the normal way."""
    _extra[name] = builder


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def available() -> list[str]:
    return sorted(set(_entry_points()) | set(_extra))


def load_builder(name: str) -> Builder:
    if name in _extra:
        return _extra[name]
    eps = _entry_points()
    if name not in eps:
        raise UnknownAdapterError(
            f"unknown agent strategy {name!r}; available: {', '.join(available()) or 'none'}"
        )
    try:
        builder = eps[name].load()
    except ModuleNotFoundError as exc:
        extra = extra_for(exc.name)
        if extra is None:
            raise
        raise MissingExtraError(extra, exc.name or name) from None
    if not callable(builder):
        raise UnknownAdapterError(f"entry point {name!r} does not name a callable")
    return builder  # type: ignore[no-any-return]


def build_provider(name: str, options: Mapping[str, Any]) -> AgentProvider:
    """The provider registered as `name`, built with `options`."""
    return load_builder(name)(options)
