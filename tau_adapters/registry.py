"""Find agent providers by name through the `tau_adapters` entry-point group.

A package registers `name = "module:build"` under `[project.entry-points.tau_adapters]`;
`build(options)` returns an `AgentProvider`: built once per run (shared clients, caches),
it makes one fresh `AgentAdapter` per episode. Nothing in the core names a concrete
adapter; this repository's own baselines and adapters register the same way.

Third-party code is untrusted here: a plugin that fails to import or to build becomes one
`AdapterLoadError`/`AdapterBuildError` line naming it (secrets masked, control characters
escaped), and a plugin named like one of this package's own entry points never replaces
it (`resolve`: the built-in wins, the other is listed as shadowed). Nor can broken metadata
of any installed distribution: one whose entry_points.txt cannot be parsed (which makes
`importlib.metadata.entry_points` fail for every group) or declares a plug-in that is not
`module:attribute` is skipped (`group_entry_points`) and named (`metadata_problems`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import Distribution, EntryPoint, distributions, entry_points
from typing import Any, Protocol, runtime_checkable

from tau_adapters.extras import MissingExtraError, extra_for
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import AdapterConfigError, AdapterError, AgentAdapter
from tau_adapters.redaction import environment_secrets, mask_values, secret_values

GROUP = "tau_adapters"

OWN_DISTRIBUTION = "tau-adapters"
"""The distribution whose entry points are built in: they win over a plugin's of one name."""


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


class AdapterLoadError(UnknownAdapterError):
    """An installed strategy whose entry point cannot be loaded (its module raises on
    import, has a syntax error, lacks the attribute...). An `UnknownAdapterError`, so every
    caller that reports an unknown strategy in one line reports this one the same way."""


class AdapterBuildError(AdapterConfigError):
    """A strategy's builder raised: its message, secrets masked, on one line. An
    `AdapterConfigError`, so the CLI and the runner show it as a configuration error."""


_extra: dict[str, Builder] = {}


def register(name: str, builder: Builder) -> None:
    """Register a builder in-process (tests, notebooks); entry points are the normal way."""
    _extra[name] = builder


def is_builtin(ep: EntryPoint) -> bool:
    """Whether `ep` ships with this package (its own baselines, adapters and commands)."""
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) or ""
    return name.lower().replace("_", "-").replace(".", "-") == OWN_DISTRIBUTION


def distribution_name(ep: EntryPoint) -> str:
    """The distribution that declares `ep` (for messages), or "?" when unknown."""
    return str(getattr(getattr(ep, "dist", None), "name", None) or "?")


def resolve(group: str) -> tuple[dict[str, EntryPoint], list[tuple[EntryPoint, EntryPoint]]]:
    """The entry point each name of `group` means, and the (shadowed, winner) pairs.

    Installing a plugin must never silently replace a built-in (`oracle`, `http`): this
    package's own entry point wins; between two plugins the first on sys.path wins (the
    one Python itself would import). Identical duplicates are not reported.
    """
    chosen: dict[str, EntryPoint] = {}
    shadowed: list[tuple[EntryPoint, EntryPoint]] = []
    for ep in group_entry_points(group):
        current = chosen.get(ep.name)
        if current is None:
            chosen[ep.name] = ep
        elif current.value == ep.value and is_builtin(current) == is_builtin(ep):
            continue
        elif is_builtin(ep) and not is_builtin(current):
            chosen[ep.name] = ep
            shadowed.append((current, ep))
        else:
            shadowed.append((ep, current))
    return chosen, shadowed


def group_entry_points(group: str) -> list[EntryPoint]:
    """`importlib.metadata.entry_points(group=group)` that one broken distribution cannot
    break: a distribution whose entry_points.txt cannot be parsed (a line that is not
    `name = value`, bytes that are not UTF-8) is skipped rather than failing every lookup,
    and an entry point whose value is not `module:attribute` is left out."""
    try:
        found: Iterable[EntryPoint] = entry_points(group=group)
    except Exception:  # importlib.metadata parses every distribution's file at once
        found = (ep for dist in _distributions() for ep in _parsed(dist) or ())
    return [ep for ep in found if ep.group == group and _well_formed(ep)]


@dataclass(frozen=True)
class MetadataProblem:
    """An installed distribution whose plug-in metadata is broken, as one line."""

    message: str
    unparsable: bool  # its entry_points.txt: pydantic's own plug-in discovery fails on it


def metadata_problems(prefixes: Iterable[str]) -> list[MetadataProblem]:
    """The installed distributions whose entry_points.txt cannot be parsed, or declares
    an entry point that is not `module:attribute` in a group named `PREFIX` or
    `PREFIX.*`: what `group_entry_points` skips, for the CLI to name in one line each."""
    wanted = tuple(prefixes)
    problems = []
    for dist in _distributions():
        eps = _parsed(dist)
        if eps is None:
            message = f"{_named(dist)}: {_parse_problem(dist)}; its entry points are ignored"
            problems.append(MetadataProblem(one_line(_clipped(message)), unparsable=True))
            continue
        bad = [ep for ep in eps if _in_groups(ep.group, wanted) and not _well_formed(ep)]
        if bad:
            shown = ", ".join(f"[{ep.group}] {ep.name} = {ep.value}" for ep in bad[:3])
            message = f"{_named(dist)}: entry point(s) not `module:attribute` ignored: {shown}"
            problems.append(MetadataProblem(one_line(_clipped(message)), unparsable=False))
    return problems


def _in_groups(group: str, prefixes: tuple[str, ...]) -> bool:
    return any(group == p or group.startswith(p + ".") for p in prefixes)


def _distributions() -> list[Distribution]:
    """Installed distributions as `importlib.metadata.entry_points` sees them: the first
    of each name on sys.path (a later one of the same name is never read)."""
    seen: set[str] = set()
    unique = []
    for dist in distributions():
        key = _normalized(dist)
        if key not in seen:
            seen.add(key)
            unique.append(dist)
    return unique


def _normalized(dist: Distribution) -> str:
    """The distribution's name as importlib.metadata compares names (PEP 503)."""
    try:
        found = getattr(dist, "_normalized_name", None)  # importlib's own, from the path
        name = found if isinstance(found, str) else dist.metadata["Name"]
    except Exception:  # no metadata at all: never the same as another
        return f"<{id(dist)}>"
    return re.sub(r"[-_.]+", "_", str(name or f"<{id(dist)}>")).lower()


def _parsed(dist: Distribution) -> list[EntryPoint] | None:
    """The distribution's entry points, or None when its entry_points.txt cannot be
    parsed (importlib.metadata raises TypeError, ValueError or UnicodeDecodeError)."""
    try:
        return list(dist.entry_points)
    except Exception:
        return None


def _well_formed(ep: EntryPoint) -> bool:
    """Whether `ep.load()` can resolve the value (`module`, `module:attr`, extras)."""
    return bool(ep.name.strip()) and EntryPoint.pattern.match(ep.value) is not None


def _named(dist: Distribution) -> str:
    """`installed distribution NAME VERSION (in SITE)` for messages."""
    name: str | None = None
    version: str | None = None
    try:
        name, version = dist.metadata["Name"], dist.metadata["Version"]
    except Exception:  # no metadata: named by where it is
        pass
    try:
        where = str(dist.locate_file(""))
    except Exception:
        where = "?"
    return f"installed distribution {name or '?'} {version or '?'} (in {where})"


def _parse_problem(dist: Distribution) -> str:
    """What is wrong with an entry_points.txt that importlib.metadata cannot parse."""
    try:
        text = dist.read_text("entry_points.txt") or ""
    except UnicodeDecodeError:
        return "entry_points.txt is not UTF-8"
    except Exception as exc:
        return f"entry_points.txt cannot be read: {describe_exception(exc)}"
    in_section = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            in_section = True
        elif in_section and "=" not in line:
            why = (
                "a section header without its `]`" if line.startswith("[") else "not `name = value`"
            )
            return f"entry_points.txt line {number} is {why}: {_clipped(line, 80)!r}"
    return "entry_points.txt cannot be parsed"


def _clipped(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _entry_points() -> dict[str, EntryPoint]:
    return resolve(GROUP)[0]


def available() -> list[str]:
    return sorted(set(_entry_points()) | set(_extra))


def shadowed() -> list[tuple[EntryPoint, EntryPoint]]:
    """(shadowed, winner) pairs of `tau_adapters` entry points sharing a name."""
    return resolve(GROUP)[1]


def one_line(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` safe for one terminal line: `secrets` and the environment's masked, control
    characters and newlines escaped (third-party messages are untrusted)."""
    masked = mask_values(text, [*secrets, *environment_secrets()])
    return printable(str(masked)).replace("\n", "\\n")


def describe_exception(exc: BaseException, secrets: Iterable[str | None] = ()) -> str:
    """`Type: message` of a plugin's exception, on one safe line."""
    message = str(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return one_line(text, secrets)


def load_entry_point(ep: EntryPoint, what: str) -> Any:
    """`ep.load()`; a missing optional dependency is a MissingExtraError, any other failure
    an AdapterLoadError naming `what`, the entry point's value and the error."""
    try:
        return ep.load()
    except ModuleNotFoundError as exc:
        extra = extra_for(exc.name)
        if extra is not None:
            raise MissingExtraError(extra, exc.name or ep.name) from None
        error = describe_exception(exc)
    except Exception as exc:  # SyntaxError, AttributeError, whatever the module raises
        error = describe_exception(exc)
    raise AdapterLoadError(one_line(f"{what} ({ep.value}) failed to load: {error}"))


def load_builder(name: str) -> Builder:
    if name in _extra:
        return _extra[name]
    eps = _entry_points()
    if name not in eps:
        raise UnknownAdapterError(
            f"unknown agent strategy {name!r}; available: {', '.join(available()) or 'none'}"
        )
    builder = load_entry_point(eps[name], f"agent strategy {name!r}")
    if not callable(builder):
        raise UnknownAdapterError(f"entry point {name!r} does not name a callable")
    return builder  # type: ignore[no-any-return]


def build_provider(name: str, options: Mapping[str, Any]) -> AgentProvider:
    """The provider registered as `name`, built with `options`.

    A builder is third-party code: anything it raises but an ImportError (a missing
    dependency, told as such by the callers) becomes an AdapterBuildError whose message has
    the options' and the environment's secrets masked.
    """
    builder = load_builder(name)
    try:
        return builder(options)
    except ImportError:
        raise
    except Exception as exc:
        raise AdapterBuildError(_build_message(name, exc, secret_values(options))) from None


def _build_message(name: str, exc: Exception, secrets: Iterable[str]) -> str:
    """An expected configuration error keeps its own text; anything else is a plugin bug
    and says which entry point raised what."""
    if isinstance(exc, AdapterError | ValueError | KeyError):
        return str(mask_values(str(exc), [*secrets, *environment_secrets()]))
    where = name
    ep = _entry_points().get(name)
    if name not in _extra and ep is not None:
        where = ep.value
    return f"{one_line(where)} raised {describe_exception(exc, secrets)}"
