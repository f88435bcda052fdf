"""τ³ tasks: typed task objects and the split-aware loader (spec §1.4).

`load_tasks(root, "airline")` reads `tasks.json` and filters it by the domain's default
split (`base`; mock: all tasks), keeping the file's order. `split="all"`/None-like values
are explicit via `split=None`. An unknown split is a one-line `ValueError` that lists the
valid ones. Field names and defaults mirror the original's task model so that
`Action.model_dump()` / `EnvAssertion.model_dump()` print like its `RewardInfo`.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tau_bench.tau3.domain import get_domain
from tau_bench.tau3.messages import Message, messages_from_dicts

__all__ = [
    "Action",
    "EnvAssertion",
    "EnvFunctionCall",
    "EvaluationCriteria",
    "InitialState",
    "Task",
    "load_splits",
    "load_tasks",
]

DEFAULT_REWARD_BASIS = ["DB", "COMMUNICATE"]
_ALL = object()


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Action(_Model):
    """An expected tool call; `compare_args` None = compare the call's own argument keys."""

    action_id: str
    requestor: str = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None

    def matches(self, name: str, arguments: dict[str, Any]) -> bool:
        """The original's `compare_with_tool_call` (spec §6.3)."""
        if self.name != name:
            return False
        keys = list(arguments) if self.compare_args is None else self.compare_args
        if not keys:
            return True
        got = {k: v for k, v in arguments.items() if k in keys}
        want = {k: v for k, v in self.arguments.items() if k in keys}
        return got == want


class EnvFunctionCall(_Model):
    env_type: str
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class EnvAssertion(EnvFunctionCall):
    assert_value: bool = True
    message: str | None = None


class InitializationData(_Model):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Model):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[dict[str, Any]] | None = None


class EvaluationCriteria(_Model):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] = Field(default_factory=lambda: list(DEFAULT_REWARD_BASIS))


class Task(_Model):
    """One τ³ task; unknown keys are ignored, the raw dict is kept in `raw`."""

    id: str
    description: dict[str, Any] | None = None
    user_scenario: dict[str, Any] | None = None
    ticket: str | None = None
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    user_tools: list[str] | None = None
    raw: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        task = cls.model_validate(data)
        task.raw = data
        return task

    def history(self) -> list[Message]:
        """The task's `initial_state.message_history` as messages (empty if none)."""
        if self.initial_state is None or not self.initial_state.message_history:
            return []
        return messages_from_dicts(self.initial_state.message_history)

    @property
    def expected_actions(self) -> list[Action]:
        crit = self.evaluation_criteria
        return list(crit.actions or []) if crit is not None else []

    @property
    def reward_basis(self) -> list[str]:
        crit = self.evaluation_criteria
        return list(crit.reward_basis) if crit is not None else []


_PARSED: dict[tuple[str, int, int], Any] = {}


def _read(path: Path) -> Any:
    """The parsed JSON file, once per process per file version (callers must not mutate)."""
    if not path.is_file():
        raise FileNotFoundError(f"τ³ task file not found: {path}")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        text = path.read_text(encoding="utf-8")
        # A task file is large (telecom: 14 MB, ~10^6 containers) and cached for the life of
        # the process. Parsing makes no reference cycles, so the cycle collector is paused
        # meanwhile (it would run full passes over the growing heap), and afterwards every
        # live object is moved out of its reach (`gc.freeze`): otherwise each later full
        # collection, e.g. during a verification of all 2,285 telecom tasks, traverses the
        # whole cached file again (~0.1 s each). Only collection work changes, no result.
        enabled = gc.isenabled()
        gc.disable()
        try:
            _PARSED[key] = json.loads(text)
        finally:
            if enabled:
                gc.enable()
        gc.freeze()
    return _PARSED[key]


def load_splits(root: Path, domain: str) -> dict[str, list[str]]:
    """The domain's `split_<tasks>.json`: split name -> task ids."""
    spec = get_domain(domain)
    tasks_path = spec.domain_dir(root) / spec.tasks_file
    split_path = tasks_path.with_name(f"split_{tasks_path.stem}.json")
    data: dict[str, list[str]] = _read(split_path)
    return data


def load_tasks(root: Path, domain: str, split: Any = _ALL) -> list[Task]:
    """Tasks of `domain` in file order, filtered by `split` (default: the domain's own)."""
    spec = get_domain(domain)
    raw = _read(spec.domain_dir(root) / spec.tasks_file)
    if isinstance(raw, dict):
        raw = raw.get("tasks", [])
    name = spec.default_split if split is _ALL else split
    if name is None:
        every = [Task.from_dict(t) for t in raw]
        gc.freeze()  # the tasks are long-lived too (see `_read`)
        return every
    splits = load_splits(root, domain)
    if name not in splits:
        raise ValueError(
            f"unknown split {name!r} for τ³ {domain}; valid splits: {', '.join(splits)}"
        )
    wanted = set(splits[name])
    # Only the split's tasks are validated (telecom: 114 of 2,285 for the default split).
    tasks = [Task.from_dict(t) for t in raw if isinstance(t, dict) and t.get("id") in wanted]
    gc.freeze()  # the tasks are long-lived too (see `_read`)
    return tasks
