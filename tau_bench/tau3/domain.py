"""How a τ³ domain is described, and the registry of domains by name.

A domain is data, not code paths in the environment: a `DomainSpec` says where its files
live under a data root (laid out like `shared/datasets/tau2-bench`), how to load its agent
DB and optional user DB, which toolkit classes serve them, how its policy text is built,
and an optional `sync(env)` hook that the environment runs after every successful tool
call, env function call and `set_state` (telecom's device/line synchronisation).

Register a domain at import time of its package:

    register(DomainSpec(name="telecom", agent_toolkit=TelecomTools, agent_db=load_agent_db,
                        user_toolkit=TelecomUserTools, user_db=load_user_db,
                        policy=telecom_policy, sync=sync, data_subdir="telecom",
                        user_tools_json="telecom/user_tools.json"))

`load_domain(name, root)` gives a `LoadedDomain`: the per-process state (base DBs, policy,
tool schemas) that every episode shares; the DBs and the user's tool schemas are read
(and checked) as it loads, so a damaged file is one `DataDirError` before any episode. It is cached per (name, root), so a DB file is
parsed once per process; episodes get private views via `DBSource.fresh()`.

DB loaders return a `DBSource` (see `tau_bench.tau3.store`): `TableSource` for large
dict-of-tables JSON DBs (copy-on-write), `PydanticSource` for small pydantic-model DBs.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tau_bench.data.errors import DataDirError
from tau_bench.data.files import read_text, read_tool_schemas
from tau_bench.tau3.data import PULL_HINT
from tau_bench.tau3.toolkit import Toolkit

if TYPE_CHECKING:
    from tau_bench.tau3.environment import Environment

__all__ = [
    "DBSource",
    "DomainSpec",
    "LoadedDomain",
    "domain_names",
    "get_domain",
    "load_domain",
    "register",
]

DOMAINS_SUBDIR = Path("data/tau2/domains")

# Domains whose packages register themselves on import; looked up lazily by name.
_BUILTIN_MODULES = {
    "airline": "tau_bench.tau3.domains.airline",
    "retail": "tau_bench.tau3.domains.retail",
    "mock": "tau_bench.tau3.domains.mock",
    "telecom": "tau_bench.tau3.domains.telecom",
    "telecom-workflow": "tau_bench.tau3.domains.telecom",
}


class DBSource(Protocol):
    """A DB loaded once per process; `fresh()` makes an episode's private, pristine DB."""

    def fresh(self) -> Any: ...


PolicyReader = Callable[[Path, bool], str]
"""(domain data dir, solo mode) -> policy text."""


def policy_file(name: str, solo_name: str | None = None) -> PolicyReader:
    """A policy reader for a domain whose policy is one file (and maybe a solo variant)."""

    def read(domain_dir: Path, solo: bool) -> str:
        if solo and solo_name is None:
            raise ValueError(f"{domain_dir.name} has no solo-mode policy")
        return read_text(domain_dir / (solo_name if solo and solo_name else name), PULL_HINT)

    return read


@dataclass(frozen=True)
class DomainSpec:
    """Everything the environment, task loader and evaluator need to know about a domain."""

    name: str
    agent_toolkit: type[Toolkit]
    agent_db: Callable[[Path], DBSource]
    """(domain data dir) -> source of the agent DB."""
    policy: PolicyReader
    user_toolkit: type[Toolkit] | None = None
    user_db: Callable[[Path], DBSource] | None = None
    sync: Callable[[Environment], bool | None] | None = None
    """Post-call hook; returns False when it changed nothing (None/True: it may have)."""
    data_subdir: str | None = None
    """Folder under data/tau2/domains; defaults to `name` (telecom-workflow uses telecom)."""
    tasks_file: str = "tasks.json"
    default_split: str | None = "base"
    """Split used when none is asked for; None = all tasks (mock)."""
    tools_json: str | None = None
    """Agent tool schemas relative to the data root; default `<subdir>/tools.json`."""
    user_tools_json: str | None = None
    supports_solo: bool = False

    @property
    def subdir(self) -> str:
        return self.data_subdir or self.name

    def domain_dir(self, root: Path) -> Path:
        return Path(root) / DOMAINS_SUBDIR / self.subdir

    def tools_json_path(self, root: Path) -> Path:
        return Path(root) / (self.tools_json or f"{self.subdir}/tools.json")

    def user_tools_json_path(self, root: Path) -> Path | None:
        return None if self.user_tools_json is None else Path(root) / self.user_tools_json


_REGISTRY: dict[str, DomainSpec] = {}
_LOADED: dict[tuple[str, str], LoadedDomain] = {}
_LOCK = threading.Lock()


def register(spec: DomainSpec) -> None:
    """Add (or replace) a domain under `spec.name`."""
    _REGISTRY[spec.name] = spec


def domain_names() -> list[str]:
    """Every domain that is registered or can register itself, sorted."""
    for name in list(_BUILTIN_MODULES):
        _try_import(name)
    return sorted(_REGISTRY)


def _try_import(name: str) -> None:
    module = _BUILTIN_MODULES.get(name)
    if module is None or name in _REGISTRY:
        return
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module.startswith(exc.name):
            raise


def get_domain(name: str) -> DomainSpec:
    """The registered domain `name`; a one-line error listing known ones otherwise."""
    _try_import(name)
    spec = _REGISTRY.get(name)
    if spec is None:
        raise ValueError(f"unknown τ³ domain {name!r}; known: {', '.join(domain_names())}")
    return spec


@dataclass
class LoadedDomain:
    """A domain's per-process state for one data root; shared by all its episodes."""

    spec: DomainSpec
    root: Path
    agent_source: DBSource
    user_source: DBSource | None
    _policies: dict[bool, str] = field(default_factory=dict)
    _schemas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def domain_dir(self) -> Path:
        return self.spec.domain_dir(self.root)

    def policy(self, solo: bool = False) -> str:
        if solo not in self._policies:
            self._policies[solo] = self.spec.policy(self.domain_dir, solo)
        return self._policies[solo]

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The agent's tool schemas, exactly as `tools.json` (read, never regenerated)."""
        return self._schema("agent", self.spec.tools_json_path(self.root))

    def user_tool_schemas(self) -> list[dict[str, Any]] | None:
        path = self.spec.user_tools_json_path(self.root)
        return None if path is None else self._schema("user", path)

    def _schema(self, key: str, path: Path) -> list[dict[str, Any]]:
        if key not in self._schemas:
            schemas = read_tool_schemas(path, PULL_HINT)
            self._schemas[key] = schemas
        return self._schemas[key]


def load_domain(name: str, root: Path) -> LoadedDomain:
    """Domain `name` loaded from data root `root`, once per process (thread-safe)."""
    spec = get_domain(name)
    root = Path(root)
    key = (name, str(root.resolve()))
    loaded = _LOADED.get(key)
    if loaded is not None:
        return loaded
    with _LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            ddir = spec.domain_dir(root)
            if not ddir.is_dir():
                raise DataDirError(
                    f"τ³ data for {name!r} not found: {ddir} is missing; {PULL_HINT}"
                )
            user = spec.user_db(ddir) if spec.user_db is not None else None
            loaded = LoadedDomain(spec, root, spec.agent_db(ddir), user)
            # Every episode gives the user its tools: a damaged file is found now, once,
            # not as a failure of each episode.
            loaded.user_tool_schemas()
            _LOADED[key] = loaded
    return loaded
