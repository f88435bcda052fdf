"""One episode as readable HTML: messages, tool calls with arguments, observations,
and on failure why it failed (the DB diff against the ground truth, missing outputs).

Everything from a trajectory is escaped: agents and users write arbitrary text.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from typing import Any

from tau_bench.analysis.reasons import failure_reason
from tau_bench.analysis.reasons import outcome as outcome_of
from tau_bench.records import EpisodeRecord, is_success

LONG_OBSERVATION = 1200


def _json(value: Any) -> str:
    """One line when short, indented when not (tool arguments are mostly short)."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if len(flat) <= 100:
        return flat
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _arguments(raw: Any) -> str:
    """Tool-call arguments pretty-printed (they are a JSON string in OpenAI messages)."""
    if isinstance(raw, str):
        try:
            return _json(json.loads(raw))
        except json.JSONDecodeError:
            return raw
    return _json(raw)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _pre(text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<pre{attr}>{escape(text)}</pre>"


def _observation(text: str) -> str:
    if len(text) <= LONG_OBSERVATION:
        return _pre(text, "obs")
    return (
        f"<details><summary>{escape(text[:160])}… ({len(text)} chars)</summary>"
        f"{_pre(text, 'obs')}</details>"
    )


def message_html(message: dict[str, Any], system_ref: str | None = None) -> str:
    role = str(message.get("role", ""))
    content = _text(message.get("content"))
    if role == "system":
        if system_ref:  # shown once at the top of its run, not in each of its episodes
            return (
                f'<div class="msg system sysref">system prompt ({len(content)} chars): '
                f"{escape(system_ref)}, shown above the run's tasks</div>"
            )
        return (
            f'<details class="msg system"><summary>system prompt ({len(content)} chars)'
            f"</summary>{_pre(content)}</details>"
        )
    if role == "tool":
        name = escape(str(message.get("name", "tool")))
        return (
            f'<div class="msg tool"><div class="who">tool ← <code>{name}</code></div>'
            f"{_observation(content)}</div>"
        )
    parts = []
    if content:
        parts.append(f'<div class="text md">{markdown_html(content)}</div>')
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        name = escape(str(fn.get("name", call.get("name", "?"))))
        args = _arguments(fn.get("arguments", call.get("arguments", {})))
        parts.append(f'<div class="call"><span class="fn">→ {name}</span>{_pre(args)}</div>')
    who = {"user": "user", "assistant": "agent"}.get(role, role or "?")
    cls = "agent" if role == "assistant" else escape(role)
    return f'<div class="msg {cls}"><div class="who">{escape(who)}</div>{"".join(parts)}</div>'


def markdown_html(text: str) -> str:
    """Agents and users write markdown (lists, **bold**, tables): rendered, with raw
    HTML in it escaped (never interpreted), unsafe link targets dropped, and images not
    loaded: `![x](url)` is `!` and a link to the url (a bot could plant a tracking
    image in the self-contained report)."""
    return _markdown().render(text)


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # commonmark with html off: `<script>` in a message is shown as text. Tables on;
    # single newlines kept as line breaks, as a chat message means them. No images.
    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")
    return md.disable("image")


def _diff_table(diffs: list[dict[str, Any]]) -> str:
    rows = "".join(
        "<tr>"
        f"<td>{escape(str(d.get('table', '')))}</td>"
        f"<td>{escape(str(d.get('record', '')))}</td>"
        f"<td>{escape(str(d.get('path') or '(whole record)'))}</td>"
        f"<td>{_pre(_json(d.get('agent')))}</td>"
        f"<td>{_pre(_json(d.get('expected')))}</td>"
        "</tr>"
        for d in diffs
    )
    return (
        '<table class="diff"><thead><tr><th>table</th><th>record</th><th>field</th>'
        f"<th>agent's DB</th><th>expected</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def verdict_html(record: EpisodeRecord) -> str:
    """Why the episode scored what it did."""
    if record.error:
        err = record.error
        return (
            '<div class="verdict error"><b>error</b> '
            f"({escape(str(err.get('source', '')))}, {escape(str(err.get('kind', '')))}): "
            f"{escape(str(err.get('message', '')))}</div>"
        )
    info = record.reward_info or {}
    lines = [f"<b>reward {record.reward if record.reward is not None else '-'}</b>"]
    r_actions = info.get("r_actions", (info.get("info") or {}).get("r_actions"))
    if r_actions is not None:
        lines.append(f"database {'matches' if r_actions == 1 else 'differs from'} the ground truth")
    outputs = info.get("outputs") or (info.get("info") or {}).get("outputs") or {}
    missing = [o for o, found in outputs.items() if not found]
    if missing:
        lines.append("outputs not said: " + ", ".join(escape(str(o)) for o in missing))
    elif outputs:
        lines.append("all required outputs said")
    parts = [f'<div class="verdict {outcome_of(record)}">' + " · ".join(lines) + "</div>"]
    diffs = info.get("db_diff") or []
    if diffs and not is_success(record.reward):
        parts.append(f"<h5>Database difference ({len(diffs)} fields)</h5>{_diff_table(diffs)}")
    actions = info.get("actions") or record.task.get("actions") or []
    if actions and not is_success(record.reward):
        calls = "".join(
            f'<div class="call"><span class="fn">{escape(str(a.get("name", "?")))}</span>'
            f"{_pre(_json(a.get('kwargs', {})))}</div>"
            for a in actions
        )
        parts.append(
            f"<details><summary>expected actions ({len(actions)})</summary>{calls}</details>"
        )
    return "".join(parts)


def episode_html(
    record: EpisodeRecord, anchor: str, system_refs: dict[str, str] | None = None
) -> str:
    """A closed `<details>` for one (task, trial): header line, messages, verdict."""
    outcome = outcome_of(record)
    cost = record.agent_cost + record.user_cost
    bits = [
        f"trial {record.trial}",
        f"<span class='badge {outcome}'>{outcome}</span>",
        f"reward {record.reward if record.reward is not None else '-'}",
    ]
    if record.stop_reason:
        bits.append(escape(record.stop_reason))
    if record.duration:
        bits.append(f"{record.duration:.1f}s")
    bits.append(f"${cost:.4f}")
    head = " · ".join(bits)
    reason = failure_reason(record)
    if reason:  # why, readable without opening the episode
        head += f' · <span class="why">{escape(reason)}</span>'

    refs = system_refs or {}
    messages = "".join(
        message_html(m, refs.get(_text(m.get("content"))) if m.get("role") == "system" else None)
        for m in record.messages
    )
    if not record.messages:
        messages = '<p class="muted">no trajectory recorded</p>'
    warnings = "".join(f'<div class="warn">{escape(w)}</div>' for w in record.warnings)
    return (
        f'<details class="episode" id="{anchor}" data-outcome="{outcome}" '
        f'data-trial="{record.trial}"><summary>{head}</summary>'
        f'<div class="conv">{messages}</div>{warnings}{verdict_html(record)}</details>'
    )
