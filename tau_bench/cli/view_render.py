"""What `tau view` prints: the episode list with each episode's one-line failure reason,
and one episode expanded (instruction, trajectory, verdict, DB diff).

Everything taken from a trajectory is printed as plain text (rich markup off): agents
and users write arbitrary text, `[bold]` included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from tau_bench.analysis.reasons import failure_reason, outcome
from tau_bench.analysis.shown import arguments_text, masked, prompt_shown, shown, value_text
from tau_bench.cost import episode_money
from tau_bench.records import EpisodeRecord

STYLE = {"pass": "green", "fail": "red", "error": "yellow"}
ROLE_STYLE = {"user": "blue", "assistant": "green", "tool": "magenta", "system": "dim"}
LONG = 600  # characters of a tool observation or system prompt shown before clipping


def _reward(record: EpisodeRecord) -> str:
    return "-" if record.reward is None else f"{record.reward:g}"


def episode_table(records: Sequence[EpisodeRecord], title: str) -> Table:
    """One row per episode: number (for the interactive prompt), task, trial, outcome,
    reward, steps, duration, and why it did not pass."""
    table = Table(title=title, title_justify="left", expand=False)
    for name, justify in (
        ("#", "right"),
        ("task", "right"),
        ("trial", "right"),
        ("outcome", "left"),
        ("reward", "right"),
        ("steps", "right"),
        ("time", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("why", overflow="fold")
    for n, r in enumerate(records, 1):
        oc = outcome(r)
        table.add_row(
            str(n),
            str(r.task_id),
            str(r.trial),
            Text(oc, style=STYLE[oc]),
            _reward(r),
            str(r.steps),
            f"{r.duration:.1f}s" if r.duration else "-",
            failure_reason(r),
        )
    return table


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _clip(text: str, limit: int = LONG) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def message_text(message: dict[str, Any], full_system: bool = False) -> Text:
    """One message as `role: text`, tool calls as `→ name({...})`."""
    role = str(message.get("role", "?"))
    content = _text(message.get("content"))
    out = Text()
    label = {"assistant": "agent"}.get(role, role)
    if role == "tool":
        label = f"tool {shown(str(message.get('name', '')), 200)}".strip()
    out.append(f"{label}: ", style=f"bold {ROLE_STYLE.get(role, '')}".strip())
    if role == "system" and not full_system:
        preview = " ".join(content[:1000].split())
        preview = preview if len(preview) <= 100 else preview[:100] + "…"
        out.append(f"({len(content)} chars; --system shows it) {masked(preview)}", "dim")
        return out
    if role == "tool":
        out.append(_clip(masked(content)))
    else:  # a system prompt with --system: longer, still bounded
        out.append(prompt_shown(content) if role == "system" else shown(content))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        name = fn.get("name", call.get("name", "?"))
        args = arguments_text(fn.get("arguments", call.get("arguments", {})))
        out.append(f"\n  → {shown(str(name), 200)}({args})")
    return out


def diff_table(diffs: Sequence[dict[str, Any]]) -> Table:
    table = Table(title=f"DB difference ({len(diffs)} field(s))", title_justify="left")
    for name in ("table", "record", "field", "agent's DB", "expected"):
        table.add_column(name, overflow="fold")
    for d in diffs:
        table.add_row(
            shown(str(d.get("table", "")), 200),
            shown(str(d.get("record", "")), 200),
            shown(str(d.get("path") or "(whole record)"), 200),
            value_text(d.get("agent")),
            value_text(d.get("expected")),
        )
    return table


def episode_view(record: EpisodeRecord, run_label: str, full_system: bool = False) -> Group:
    """One episode expanded: header, instruction, trajectory, verdict, DB diff, actions."""
    oc = outcome(record)
    head = Text()
    head.append(f"{run_label} · task {record.task_id} · trial {record.trial} · ")
    head.append(oc, style=f"bold {STYLE[oc]}")
    head.append(
        f" · reward {_reward(record)} · {record.steps} steps · {record.duration:.1f}s"
        f" · {episode_money(record)}"
    )
    if record.stop_reason:
        head.append(f" · {shown(record.stop_reason, 200)}")
    parts: list[RenderableType] = [head]
    reason = failure_reason(record)
    if reason:
        parts.append(Text(f"why: {reason}", style=STYLE[oc]))
    instruction = str((record.task or {}).get("instruction", ""))
    if instruction:
        parts.append(Panel(Text(shown(instruction)), title="instruction", title_align="left"))
    conv = [message_text(m, full_system) for m in record.messages]
    parts.append(
        Panel(
            Text("\n").join(conv) if conv else Text("no trajectory recorded", style="dim"),
            title=f"trajectory ({len(record.messages)} messages)",
            title_align="left",
        )
    )
    info = record.reward_info or {}
    diffs = info.get("db_diff") or []
    if diffs and oc == "fail":
        parts.append(diff_table(diffs))
    actions = info.get("actions") or (record.task or {}).get("actions") or []
    if actions and oc == "fail":
        lines = [
            f"{shown(str(a.get('name', '?')), 200)}({arguments_text(a.get('kwargs', {}))})"
            for a in actions
        ]
        parts.append(Panel(Text("\n".join(lines)), title="expected actions", title_align="left"))
    for warning in record.warnings:
        parts.append(Text(f"warning: {shown(warning)}", style="yellow"))
    return Group(*parts)


def print_episode(
    console: Console, record: EpisodeRecord, run_label: str, full_system: bool = False
) -> None:
    console.print(episode_view(record, run_label, full_system))
