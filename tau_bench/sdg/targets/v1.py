"""τ-bench v1 as a generation target (`--env airline|retail`): the original behaviour."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tau_bench.domains import Domain
from tau_bench.env import Env
from tau_bench.sdg.answers import InstructionDraft
from tau_bench.sdg.targets.base import ANNOTATOR, GENERATION_FAMILIES, TaskParts
from tau_bench.tasks import Action, Task, load_tasks
from tau_bench.verify import verify_task

__all__ = ["V1Target"]


class V1Target:
    """A v1 domain: instruction-text tasks scored by DB hash and outputs."""

    suite = "tau-bench"
    benchmark = "τ-bench"
    instruction_format = "v1"
    draft_model = InstructionDraft

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.env = domain.name
        self.family = domain.name
        self.tool_schemas = domain.tool_schemas
        self.tool_names = frozenset(domain.tools)
        self.policy = domain.policy
        self.writes = frozenset(n for n, t in domain.tools.items() if t.writes)

    @property
    def tables(self) -> Mapping[str, Mapping[str, Any]]:
        return self.domain.base_db.tables

    def supports_generation(self) -> str | None:
        if self.family in GENERATION_FAMILIES:
            return None
        return f"tau sdg generate has no user sampling for {self.env}"

    def sandbox_env(self) -> Env:
        return Env(self.domain)

    def style_examples(self) -> list[str]:
        return [t.instruction for t in self.domain.tasks("test")]

    def build_task(self, parts: TaskParts) -> Task:
        return Task.model_validate(
            {
                "user_id": parts.user_id,
                "instruction": parts.draft.instruction.strip(),
                "actions": [Action(name=a.name, kwargs=a.kwargs) for a in parts.actions],
                "outputs": parts.outputs,
                "annotator": ANNOTATOR,
                "provenance": parts.provenance,
            }
        )

    def replay_problems(self, task: Any, index: int) -> list[str]:
        reward = verify_task(self.domain, task, index).reward.reward
        return [] if reward == 1.0 else [f"replaying the task scored {reward}"]

    def load_tasks(self, path: Path) -> list[Any]:
        return list(load_tasks(path))

    def verification(self, tasks: Sequence[Any]) -> dict[str, Any]:
        failed = [
            i for i, t in enumerate(tasks) if verify_task(self.domain, t, i).reward.reward != 1.0
        ]
        return {"checked": len(tasks), "passed": len(tasks) - len(failed), "failed": failed}
