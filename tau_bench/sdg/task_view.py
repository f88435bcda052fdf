"""A task of either suite as the quality report reads it.

v1 tasks carry `actions` (name, kwargs), an `instruction`, `outputs` and the extra key
`provenance`; τ³ tasks carry expected actions (name, arguments, requestor), structured
user-scenario instructions, `communicate_info` and the same `provenance` key. The report
compares actions, instruction text and outputs, so both are read into one shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau_bench.suites.tau3_env import Tau3Task

__all__ = ["TaskView", "view_of"]


@dataclass(frozen=True)
class TaskView:
    """What `tau sdg stats` reads of a task."""

    actions: list[tuple[str, dict[str, Any]]]
    instruction: str
    outputs: list[str]
    provenance: dict[str, Any]


def _prov(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tau3_text(task: Tau3Task) -> str:
    """The scenario's own words (labels left out: every task has the same ones)."""
    scenario = task.task.user_scenario or {}
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):
        parts = [v for k, v in instructions.items() if k != "domain" and isinstance(v, str)]
    else:
        parts = [str(instructions or "")]
    if scenario.get("persona"):
        parts.insert(0, str(scenario["persona"]))
    return " ".join(parts)


def view_of(task: Any) -> TaskView:
    """The view of a v1 `tau_bench.tasks.Task` or a τ³ `Tau3Task`."""
    if isinstance(task, Tau3Task):
        return TaskView(
            actions=[(a.name, dict(a.arguments)) for a in task.task.expected_actions],
            instruction=_tau3_text(task),
            outputs=task.outputs,
            provenance=_prov(task.task.raw.get("provenance")),
        )
    return TaskView(
        actions=[(a.name, dict(a.kwargs)) for a in task.actions],
        instruction=task.instruction,
        outputs=list(task.outputs),
        provenance=_prov((task.model_extra or {}).get("provenance")),
    )
