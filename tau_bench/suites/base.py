"""What a benchmark suite is, as the runner, the gym, the service and the tools see it.

A *suite* is one benchmark version (τ-bench v1, τ³-bench): where its data comes from,
its domains, their task sets and splits, a per-episode environment (the agent's tools;
optionally the user's), how an episode is scored, and its user-simulator prompts. The
layers above name no suite: they get a `Domain` from `tau_bench.suites.load_domain` and
use only what is declared here. docs/suites.md explains how to add one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tau_adapters.protocol import ToolExecutor
from tau_bench.errors import UnknownDomainError, UnknownSplitError

__all__ = [
    "Domain",
    "EpisodeEnv",
    "Reward",
    "Suite",
    "Task",
    "UnknownDomainError",
    "UnknownSplitError",
]


@runtime_checkable
class Reward(Protocol):
    """An episode's score: the number, whether the episode was cut off, and the details
    (named components, a readable failure diff) as JSON for the record."""

    reward: float
    unfinished: bool

    def to_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class Task(Protocol):
    """A task as the harness needs it: what the simulated user is told, and its JSON."""

    @property
    def instruction(self) -> str: ...

    @property
    def user_id(self) -> str | None: ...

    def model_dump(self, **kwargs: Any) -> dict[str, Any]: ...


@runtime_checkable
class EpisodeEnv(ToolExecutor, Protocol):
    """One episode's private environment: runs the agent's tools, then scores the episode."""

    def reward(self) -> Reward: ...

    def data_hash(self) -> str: ...


@runtime_checkable
class Verified(Protocol):
    """One task's ground-truth replay: its id in the list and the reward it earned."""

    @property
    def task_id(self) -> int | str: ...

    @property
    def reward(self) -> Reward: ...


@runtime_checkable
class Domain(Protocol):
    """One domain of a suite, loaded once per process and shared by its episodes.

    `name` is what users select (`airline` for v1, `tau3/airline` for τ³); `suite` names
    the suite. Task sets are lists; a task's id in a run is its index in the list.
    """

    name: str
    suite: str
    tool_schemas: list[dict[str, Any]]
    policy: str
    terminate_tools: frozenset[str]

    @property
    def splits(self) -> tuple[str, ...]: ...

    @property
    def default_split(self) -> str: ...

    def tasks(self, split: str | None = None) -> Sequence[Any]: ...

    def load_tasks_file(self, path: Path) -> Sequence[Any]: ...

    def new_env(self, task: Any = None) -> EpisodeEnv: ...

    def data_version(self) -> dict[str, Any]: ...

    def verify(self, tasks: Sequence[Any]) -> Sequence[Verified]:
        """Replay each task's ground truth as an agent would (`tau tasks verify`)."""
        ...


@runtime_checkable
class Suite(Protocol):
    """A benchmark version: its name, its domains, and how to load one of them.

    Registered under the `tau_bench.suites` entry-point group as `name = "module:OBJ"`.
    `prefix` is how its domains are spelled on the command line (`""`: bare names, as
    τ-bench v1's `airline`; `"tau3/"`: `tau3/airline`).
    """

    name: str
    prefix: str

    def domain_names(self) -> tuple[str, ...]: ...

    def load_domain(self, name: str, data_dir: str | Path | None = None) -> Domain: ...
