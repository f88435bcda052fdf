"""The benchmark's domains (airline, retail): data, tools, policy and tasks, loaded once."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau_bench.data.files import damaged, read_json, read_text, read_tool_schemas
from tau_bench.data.paths import resolve_data_dir
from tau_bench.db import BaseDB
from tau_bench.domains.tool import Tool
from tau_bench.errors import UnknownDomainError, UnknownSplitError
from tau_bench.tasks import Task, load_tasks

if TYPE_CHECKING:
    from tau_bench.env import Env
    from tau_bench.verify import VerifiedTask

DOMAIN_NAMES = ("airline", "retail")
TABLES = {
    "airline": ("flights", "reservations", "users"),
    "retail": ("orders", "products", "users"),
}
SPLITS = {"airline": ("test",), "retail": ("test", "train", "dev")}
TERMINATE_TOOLS = frozenset({"transfer_to_human_agents"})


@dataclass
class Domain:
    """Everything an episode of one domain needs; shared read-only across episodes."""

    name: str
    data_dir: Path
    base_db: BaseDB
    tools: dict[str, Tool]
    tool_schemas: list[dict[str, Any]]
    policy: str
    rules: list[str]
    terminate_tools: frozenset[str] = TERMINATE_TOOLS
    suite: str = "tau-bench"
    _splits: dict[str, list[Task]] = field(default_factory=dict)

    @property
    def splits(self) -> tuple[str, ...]:
        return SPLITS[self.name]

    @property
    def default_split(self) -> str:
        return "test"

    def new_env(self, task: Task | None = None) -> Env:
        """A fresh episode environment (copy-on-write over the shared DB)."""
        from tau_bench.env import Env

        return Env(self, task)

    def load_tasks_file(self, path: Path) -> list[Task]:
        """Tasks of this domain from a JSON file of v1-shaped tasks (e.g. `tau sdg`)."""
        return load_tasks(Path(path))

    def verify(self, tasks: Sequence[Task]) -> list[VerifiedTask]:
        """Replay each task's ground truth (`tau_bench.verify`)."""
        from tau_bench.verify import verify_tasks

        return verify_tasks(self, list(tasks))

    def data_version(self) -> dict[str, Any]:
        """Where the data came from: the pinned upstream commit and the files' sha256."""
        from tau_bench.data.version import data_version

        return data_version(self.data_dir, self.name)

    def tasks(self, split: str | None = None) -> list[Task]:
        split = split or self.default_split
        if split not in SPLITS[self.name]:
            raise UnknownSplitError(
                f"unknown task split {split!r} for {self.name} "
                f"(available: {', '.join(SPLITS[self.name])})"
            )
        if split not in self._splits:
            self._splits[split] = load_tasks(self.data_dir / self.name / "tasks" / f"{split}.json")
        return self._splits[split]


_cache: dict[tuple[str, Path], Domain] = {}
_lock = threading.Lock()


def _read_table(path: Path) -> dict[str, Any]:
    """A DB table file: a JSON object of records keyed by id."""
    table = read_json(path)
    if not isinstance(table, dict):
        raise damaged(path, "is not a JSON object of records keyed by id")
    return table


def _read_rules(path: Path) -> list[str]:
    """`rules.json`: extra policy lines some agents append to the prompt."""
    if not path.exists():
        return []
    rules = read_json(path)
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise damaged(path, "is not a JSON list of strings")
    return rules


def load_domain(name: str, data_dir: str | Path | None = None) -> Domain:
    """The domain `name`, loaded once per process and data directory."""
    if name not in DOMAIN_NAMES:
        raise UnknownDomainError(f"unknown env {name!r} (available: {', '.join(DOMAIN_NAMES)})")
    root = resolve_data_dir(data_dir).resolve()
    key = (name, root)
    with _lock:
        if key in _cache:
            return _cache[key]
        ddir = root / name
        tables = {t: _read_table(ddir / "db" / f"{t}.json") for t in TABLES[name]}
        module = importlib.import_module(f"tau_bench.domains.{name}.tools")
        tools: dict[str, Tool] = {t.name: t for t in module.TOOLS}
        schemas = read_tool_schemas(ddir / "tools.json")
        domain = Domain(
            name=name,
            data_dir=root,
            base_db=BaseDB(tables),
            tools=tools,
            tool_schemas=schemas,
            policy=read_text(ddir / "policy.md"),
            rules=_read_rules(ddir / "rules.json"),
        )
        _cache[key] = domain
        return domain
