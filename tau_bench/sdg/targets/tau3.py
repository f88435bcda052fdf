"""τ³-bench as a generation target (`--env tau3/airline|tau3/retail`; stats on every domain).

Users, orders and reservations are sampled from the τ³ DB (the same records as v1's, with
τ³'s normalisation), proposed calls run on a fresh τ³ episode environment (`new_env()`,
the agent's toolkit with its exact error texts), tasks are written in τ³'s format
(`tau3_format`) and proven solvable by `tau tasks verify`'s replay (`tau3_check`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tau_adapters.protocol import ToolOutput
from tau_bench.sdg.answers import ScenarioInstructions
from tau_bench.sdg.targets.base import GENERATION_FAMILIES, TaskParts
from tau_bench.sdg.targets.tau3_check import check_tasks, report
from tau_bench.sdg.targets.tau3_format import task_record
from tau_bench.suites.tau3 import Tau3Domain
from tau_bench.suites.tau3_env import Tau3Env, Tau3Task
from tau_bench.tau3.tasks import Task
from tau_bench.tau3.toolkit import ToolKind

__all__ = ["TRANSFER", "Tau3SandboxEnv", "Tau3Target"]

TRANSFER = "transfer_to_human_agents"


class Tau3SandboxEnv:
    """A τ³ episode environment as the sandbox drives it."""

    def __init__(self, env: Tau3Env) -> None:
        self._env = env

    @property
    def db(self) -> Any:
        return self._env.env.tools.db

    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        return self._env.execute(name, kwargs)

    def data_hash(self) -> str:
        return self._env.data_hash()

    def is_terminate(self, name: str) -> bool:
        """τ³'s loop never ends on a tool, but a transfer hands the customer over: last only."""
        return name == TRANSFER


class Tau3Target:
    """A τ³ domain: structured user scenarios scored by DB and communicated facts."""

    suite = "tau3"
    benchmark = "τ³-bench"
    instruction_format = "tau3"
    draft_model = ScenarioInstructions

    def __init__(self, domain: Tau3Domain) -> None:
        self.domain = domain
        self.env = domain.name
        self.family = domain.loaded.name
        self.tool_schemas = domain.tool_schemas
        spec = domain.loaded.spec
        self.tool_names = frozenset(spec.agent_toolkit.tool_names())
        self.policy = domain.policy
        kits = [k for k in (spec.agent_toolkit, spec.user_toolkit) if k is not None]
        self.writes = frozenset(
            n for k in kits for n in k.tool_names() if k.tool_kind(n) is ToolKind.WRITE
        )

    @property
    def tables(self) -> Mapping[str, Mapping[str, Any]]:
        base = getattr(self.domain.loaded.agent_source, "base", None)
        tables = getattr(base, "tables", None)
        if not isinstance(tables, Mapping):
            raise ValueError(f"{self.env} has no table DB to sample users from")
        return tables

    def supports_generation(self) -> str | None:
        if self.family in GENERATION_FAMILIES:
            return None
        return (
            f"tau sdg generate supports tau3/airline and tau3/retail, not {self.env}: user "
            "sampling and policy checks exist for those domains only "
            f"(tau sdg stats validates {self.env} task files)"
        )

    def sandbox_env(self) -> Tau3SandboxEnv:
        return Tau3SandboxEnv(self.domain.new_env())

    def style_examples(self) -> list[str]:
        out = []
        for task in self.domain.tasks():
            instructions = (task.task.user_scenario or {}).get("instructions")
            if isinstance(instructions, dict):
                shown = {k: v for k, v in instructions.items() if k != "domain"}
                out.append(json.dumps(shown, ensure_ascii=False))
        return out

    def build_task(self, parts: TaskParts) -> Tau3Task:
        return Tau3Task(Task.from_dict(task_record(self.family, parts)))

    def replay_problems(self, task: Any, index: int) -> list[str]:
        (check,) = check_tasks(self.domain, [task])
        return [p.describe() for p in check.problems]

    def load_tasks(self, path: Path) -> list[Any]:
        return list(self.domain.load_tasks_file(path))

    def verification(self, tasks: Sequence[Any]) -> dict[str, Any]:
        return report(check_tasks(self.domain, tasks))
