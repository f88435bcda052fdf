"""τ³ tasks: typed task objects and the split-aware loader (spec §1.4).

`load_tasks(root, "airline")` reads `tasks.json` and filters it by the domain's default
split (`base`; mock: all tasks), keeping the file's order. `split="all"`/None-like values
are explicit via `split=None`. An unknown split is a one-line `ValueError` that lists the
valid ones. A damaged file is a `DataDirError` naming it, never a smaller task set: an
entry that is not an object with a string id (checked even outside the split), two tasks
with one id, a split id the tasks file does not have. Field names and defaults mirror the original's task model so that
`Action.model_dump()` / `EnvAssertion.model_dump()` print like its `RewardInfo`.
"""

from __future__ import annotations

import gc
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from tau_bench.data.errors import DataDirError
from tau_bench.data.files import damaged, read_json
from tau_bench.task_files import validation_summary
from tau_bench.tau3.data import PULL_HINT
from tau_bench.tau3.domain import get_domain
from tau_bench.tau3.message_schema import Message as OriginalMessage
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

RewardType = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
DEFAULT_REWARD_BASIS: list[RewardType] = ["DB", "COMMUNICATE"]
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
    # The original's `RewardType`: a misspelt component is refused when the task loads,
    # not found out as a harness error once every episode of it has run.
    reward_basis: list[RewardType] = Field(default_factory=lambda: list(DEFAULT_REWARD_BASIS))


class _StructuredInstructions(_Model):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str


class _UserScenario(_Model):
    persona: str | None = None
    # Text, or the structured form: an error names the form the value was meant as.
    instructions: Annotated[
        Annotated[_StructuredInstructions, Tag("object")] | Annotated[str, Tag("text")],
        Discriminator(lambda value: "object" if isinstance(value, dict) else "text"),
    ]


def _user_scenario(value: dict[str, Any]) -> dict[str, Any]:
    """The scenario as given (code reads it as a mapping), once it has the original's
    shape: the user simulator has nothing to act on without its instructions."""
    try:
        _UserScenario.model_validate(value)
    except ValidationError as exc:
        summary = validation_summary(exc)
        raise PydanticCustomError("user_scenario", "{summary}", {"summary": summary}) from None
    return value


class Task(_Model):
    """One τ³ task; unknown keys are ignored, the raw dict is kept in `raw`."""

    id: str
    description: dict[str, Any] | None = None
    user_scenario: Annotated[dict[str, Any], AfterValidator(_user_scenario)]
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
        """The task's `initial_state.message_history` as messages (empty if none).

        A message the original's message model refuses (an unknown role, text that is not
        a string, tool arguments that are not an object) is a `ValueError`: the original
        never runs such a task, so it must not score here either."""
        if self.initial_state is None or not self.initial_state.message_history:
            return []
        history = self.initial_state.message_history
        _check_history(history)
        return messages_from_dicts(history)

    @property
    def expected_actions(self) -> list[Action]:
        crit = self.evaluation_criteria
        return list(crit.actions or []) if crit is not None else []

    @property
    def reward_basis(self) -> list[str]:
        crit = self.evaluation_criteria
        return list(crit.reward_basis) if crit is not None else []


@cache
def _history_model() -> TypeAdapter[Any]:
    """The original's message union (`message_schema`), built once."""
    return TypeAdapter(list[OriginalMessage])


def _check_history(history: list[Any]) -> None:
    """Refuse a message history the original's `Task` model would refuse (one line)."""
    try:
        _history_model().validate_python(history)
    except ValidationError as exc:
        raise ValueError(f"message_history: {validation_summary(exc)}") from None


_PARSED: dict[tuple[str, int, int], Any] = {}
_CHECKED: set[int] = set()
"""ids of the `_PARSED` split files found well-formed (they live as long as the process)."""


def _read(path: Path) -> Any:
    """The parsed JSON file, once per process per file version (callers must not mutate);
    a missing or damaged file is a `DataDirError` naming it."""
    if not path.is_file():
        problem = "is a directory, not a file" if path.is_dir() else "is missing"
        raise DataDirError(f"τ³ task file {path} {problem}; {PULL_HINT}")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        # A task file is large (telecom: 14 MB, ~10^6 containers) and cached for the life of
        # the process. Parsing makes no reference cycles, so the cycle collector is paused
        # meanwhile (it would run full passes over the growing heap), and afterwards every
        # live object is moved out of its reach (`gc.freeze`): otherwise each later full
        # collection, e.g. during a verification of all 2,285 telecom tasks, traverses the
        # whole cached file again (~0.1 s each). Only collection work changes, no result.
        enabled = gc.isenabled()
        gc.disable()
        try:
            _PARSED[key] = read_json(path, PULL_HINT)
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
    if id(data) not in _CHECKED:  # parsed files are cached for the process: check once
        if not (
            isinstance(data, dict)
            and all(
                isinstance(ids, list) and all(isinstance(i, str) for i in ids)
                for ids in data.values()
            )
        ):
            raise damaged(
                split_path, "is not a JSON object of split names to lists of task ids", PULL_HINT
            )
        _CHECKED.add(id(data))
    return data


def load_tasks(root: Path, domain: str, split: Any = _ALL) -> list[Task]:
    """Tasks of `domain` in file order, filtered by `split` (default: the domain's own)."""
    spec = get_domain(domain)
    path = spec.domain_dir(root) / spec.tasks_file
    raw = _read(path)
    if isinstance(raw, dict):
        raw = raw.get("tasks", [])
    if not isinstance(raw, list):
        raise damaged(path, 'is not a JSON array of tasks (nor {"tasks": [...]})', PULL_HINT)
    name = spec.default_split if split is _ALL else split
    if name is None:
        every = [_task(path, i, t) for i, t in enumerate(raw)]
        _unique(path, every)
        gc.freeze()  # the tasks are long-lived too (see `_read`)
        return every
    splits = load_splits(root, domain)
    if name not in splits:
        raise ValueError(
            f"unknown split {name!r} for τ³ {domain}; valid splits: {', '.join(splits)}"
        )
    wanted = set(splits[name])
    # Only the split's tasks are validated (telecom: 114 of 2,285 for the default split),
    # but every entry must at least be an object with a string id, so that none is left
    # out of a split unnoticed; each id of the split must be found, once.
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, t in enumerate(raw):
        if not (isinstance(t, dict) and isinstance(t.get("id"), str)):
            _task(path, i, t)  # raises: the model refuses it (not an object, no string id)
            raise damaged(path, f"has an invalid task {i} (id: not a string)", PULL_HINT)
        ident = t["id"]
        if ident in seen:
            raise damaged(path, f"has two tasks with the id {ident!r}", PULL_HINT)
        seen.add(ident)
        if ident in wanted:
            tasks.append(_task(path, i, t))
    missing = [i for i in splits[name] if i not in seen]
    if missing:
        split_path = path.with_name(f"split_{path.stem}.json")
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise damaged(
            split_path,
            f"lists task {missing[0]!r}{more} in split {name!r}, which {path.name} does not have",
            PULL_HINT,
        )
    gc.freeze()  # the tasks are long-lived too (see `_read`)
    return tasks


def _unique(path: Path, tasks: list[Task]) -> None:
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise damaged(path, f"has two tasks with the id {task.id!r}", PULL_HINT)
        seen.add(task.id)


def _task(path: Path, index: int, data: Any) -> Task:
    """Task `index` of the data directory's file `path`; one `DataDirError` if invalid."""
    try:
        return Task.from_dict(data)
    except ValidationError as exc:
        ident = data.get("id") if isinstance(data, dict) else None
        which = f"task {ident!r}" if isinstance(ident, str) else f"task {index}"
        raise damaged(
            path, f"has an invalid {which} ({validation_summary(exc)})", PULL_HINT
        ) from None
