"""How a τ³ task's user scenario is shown to the user simulator (spec §7).

`render_scenario(task)` is the text the original puts between `<scenario>` tags:
an optional `Persona:` block, then `Instructions:`, each body indented by a tab;
structured instructions list `Domain`, `Reason for call`, `Known info`, `Unknown info`
and `Task instructions` (absent parts omitted). `render_instructions(task)` is the
instructions part alone (what the scripted user says first).
"""

from __future__ import annotations

import textwrap
from typing import Any

from tau_bench.tau3.tasks import Task

__all__ = ["render_instructions", "render_scenario"]

TAB = "\t"


def _instructions_text(instructions: Any) -> str:
    if not isinstance(instructions, dict):
        return "" if instructions is None else str(instructions)
    lines = [
        f"Domain: {instructions.get('domain')}",
        f"Reason for call:\n{textwrap.indent(str(instructions.get('reason_for_call')), TAB)}",
    ]
    for key, label in (("known_info", "Known info"), ("unknown_info", "Unknown info")):
        if instructions.get(key) is not None:
            lines.append(f"{label}:\n{textwrap.indent(str(instructions[key]), TAB)}")
    body = textwrap.indent(str(instructions.get("task_instructions")), TAB)
    lines.append(f"Task instructions:\n{body}")
    return "\n".join(lines)


def render_instructions(task: Task) -> str:
    """The scenario's instructions as text (structured ones rendered as the original)."""
    scenario = task.user_scenario or {}
    return _instructions_text(scenario.get("instructions"))


def render_scenario(task: Task) -> str:
    """Persona and instructions, as the original's `str(UserScenario)`."""
    scenario = task.user_scenario or {}
    lines = []
    if scenario.get("persona") is not None:
        lines += ["Persona:", textwrap.indent(str(scenario["persona"]), TAB)]
    lines += ["Instructions:", textwrap.indent(render_instructions(task), TAB)]
    return "\n".join(lines)
