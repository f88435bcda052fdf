"""What the generator and the quality report need of a benchmark domain, whatever its suite.

The pipeline was written against τ-bench v1; τ³-bench (`tau3/airline`, `tau3/retail`) has
the same customers and records but another environment, scoring and task format. A
`Target` is the one place that knows the difference: the base DB tables users are sampled
from, the tools and which of them write, a fresh sandbox environment, the task format and
the replay that proves a task solvable. Everything else in `tau_bench.sdg` reads a target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from tau_adapters.protocol import ToolOutput
from tau_bench.sdg.answers import ProposedAction

__all__ = [
    "ANNOTATOR",
    "GENERATION_FAMILIES",
    "GENERATOR",
    "SandboxEnv",
    "Target",
    "TaskParts",
    "UnsupportedDomainError",
]

GENERATOR = "tau sdg"
ANNOTATOR = "sdg"
GENERATION_FAMILIES = ("airline", "retail")
"""Domains with customers and records to sample scenarios from (in either suite)."""


class UnsupportedDomainError(ValueError):
    """Generation was asked of a domain it cannot sample scenarios from."""


class SandboxEnv(Protocol):
    """A fresh episode environment the sandbox runs a proposed sequence on."""

    @property
    def db(self) -> Any:
        """The episode's DB (`tau_bench.db.EpisodeDB`), which the constraints read."""
        ...

    def execute(self, name: str, kwargs: Any) -> ToolOutput: ...

    def data_hash(self) -> str: ...

    def is_terminate(self, name: str) -> bool:
        """True for a tool that ends the conversation (it may only come last)."""
        ...


@dataclass(frozen=True)
class TaskParts:
    """A validated scenario with its instruction, before the suite's task format."""

    index: int
    user_id: str
    summary: str
    draft: Any  # answers.InstructionDraft (v1) or answers.ScenarioInstructions (τ³)
    actions: Sequence[ProposedAction]
    outputs: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)


class Target(Protocol):
    """One domain of one suite, as `tau sdg` uses it."""

    domain: Any
    env: str
    """The `--env` name: `retail`, `tau3/retail`."""
    family: str
    """The domain's own name (`retail`, `airline`, `mock`...): which context builder,
    constraints and identity rules apply."""
    suite: str
    benchmark: str
    """How prompts name the benchmark (τ-bench, τ³-bench)."""
    instruction_format: str
    """`v1` (one instruction text) or `tau3` (structured user-scenario instructions)."""

    @property
    def draft_model(self) -> type[BaseModel]:
        """The pydantic model of the instruction stage's answer."""
        ...

    tool_schemas: list[dict[str, Any]]
    tool_names: frozenset[str]
    policy: str
    writes: frozenset[str]

    @property
    def tables(self) -> Mapping[str, Mapping[str, Any]]:
        """The pristine DB's tables (users, orders, reservations...), read-only."""
        ...

    def supports_generation(self) -> str | None:
        """None, or why `tau sdg generate` cannot make tasks for this domain."""
        ...

    def sandbox_env(self) -> SandboxEnv: ...

    def style_examples(self) -> list[str]:
        """Instructions of shipped tasks, shown to the model for the style."""
        ...

    def build_task(self, parts: TaskParts) -> Any:
        """The task in the suite's format (its `model_dump(mode="json")` is the JSON line)."""
        ...

    def replay_problems(self, task: Any, index: int) -> list[str]:
        """Why replaying the task's ground truth does not prove it solvable (empty: it does)."""
        ...

    def load_tasks(self, path: Path) -> list[Any]: ...

    def verification(self, tasks: Sequence[Any]) -> dict[str, Any]:
        """`tau sdg stats`' replay report of a whole file."""
        ...
