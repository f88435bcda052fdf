"""One episode as readable HTML: messages, tool calls with arguments, observations,
and on failure why it failed (the DB diff against the ground truth, missing outputs).

Everything from a trajectory is escaped: agents and users write arbitrary text.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from typing import Any

from tau_adapters.jsonsafe import MAX_DEPTH, depth_exceeds
from tau_bench.analysis.reasons import failure_reason
from tau_bench.analysis.reasons import outcome as outcome_of
from tau_bench.analysis.shown import decode_arguments, masked, prompt_shown, shown
from tau_bench.cost import episode_money
from tau_bench.records import EpisodeRecord, is_success

LONG_OBSERVATION = 1200


def _json(value: Any) -> str:
    """One line when short, indented when not (tool arguments are mostly short); masked
    and clipped (`shown`). A value nested deeper than `MAX_DEPTH` levels is named."""
    if isinstance(value, dict | list) and depth_exceeds(value, MAX_DEPTH):
        return f"<a value nested deeper than {MAX_DEPTH} levels>"
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if len(flat) <= 100:
        return masked(flat)
    return shown(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _arguments(raw: Any) -> str:
    """Tool-call arguments pretty-printed (they are a JSON string in OpenAI messages);
    text that does not decode (or is nested too deep) is shown as it is, clipped."""
    value, ok = decode_arguments(raw)
    if ok:
        return _json(value)
    return shown(value) if isinstance(value, str) else _json(value)


def raw_text(content: Any) -> str:
    """A message's content as text, as recorded."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _text(content: Any) -> str:
    """A message's content as shown: masked and clipped (`tau_bench.analysis.shown`)."""
    return shown(raw_text(content))


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
    if role == "system":
        content = raw_text(message.get("content"))
        if system_ref:  # shown once at the top of its run, not in each of its episodes
            return (
                f'<div class="msg system sysref">system prompt ({len(content)} chars): '
                f"{escape(system_ref)}, shown above the run's tasks</div>"
            )
        return (
            f'<details class="msg system"><summary>system prompt ({len(content)} chars)'
            f"</summary>{_pre(prompt_shown(content))}</details>"
        )
    content = _text(message.get("content"))
    if role == "tool":
        name = escape(shown(str(message.get("name", "tool")), 200))
        return (
            f'<div class="msg tool"><div class="who">tool ← <code>{name}</code></div>'
            f"{_observation(content)}</div>"
        )
    parts = []
    if content:
        parts.append(f'<div class="text md">{markdown_html(content)}</div>')
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        name = escape(shown(str(fn.get("name", call.get("name", "?"))), 200))
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
        f"<td>{escape(shown(str(d.get('table', '')), 200))}</td>"
        f"<td>{escape(shown(str(d.get('record', '')), 200))}</td>"
        f"<td>{escape(shown(str(d.get('path') or '(whole record)'), 200))}</td>"
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
            f"({escape(shown(str(err.get('source', '')), 200))}, "
            f"{escape(shown(str(err.get('kind', '')), 200))}): "
            f"{escape(shown(str(err.get('message', ''))))}</div>"
        )
    info = record.reward_info or {}
    lines = [f"<b>reward {record.reward if record.reward is not None else '-'}</b>"]
    r_actions = info.get("r_actions", (info.get("info") or {}).get("r_actions"))
    if r_actions is not None:
        lines.append(f"database {'matches' if r_actions == 1 else 'differs from'} the ground truth")
    outputs = info.get("outputs") or (info.get("info") or {}).get("outputs") or {}
    missing = [o for o, found in outputs.items() if not found]
    if missing:
        lines.append("outputs not said: " + ", ".join(escape(shown(str(o), 200)) for o in missing))
    elif outputs:
        lines.append("all required outputs said")
    parts = [f'<div class="verdict {outcome_of(record)}">' + " · ".join(lines) + "</div>"]
    diffs = info.get("db_diff") or []
    if diffs and not is_success(record.reward):
        parts.append(f"<h5>Database difference ({len(diffs)} fields)</h5>{_diff_table(diffs)}")
    actions = info.get("actions") or record.task.get("actions") or []
    if actions and not is_success(record.reward):
        calls = "".join(
            f'<div class="call"><span class="fn">{escape(shown(str(a.get("name", "?")), 200))}'
            f"</span>{_pre(_arguments(a.get('kwargs', {})))}</div>"
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
    bits = [
        f"trial {record.trial}",
        f"<span class='badge {outcome}'>{outcome}</span>",
        f"reward {record.reward if record.reward is not None else '-'}",
    ]
    if record.stop_reason:
        bits.append(escape(shown(record.stop_reason, 200)))
    if record.duration:
        bits.append(f"{record.duration:.1f}s")
    bits.append(episode_money(record))
    head = " · ".join(bits)
    reason = failure_reason(record)
    if reason:  # why, readable without opening the episode
        head += f' · <span class="why">{escape(reason)}</span>'

    refs = system_refs or {}
    messages = "".join(
        message_html(m, refs.get(raw_text(m.get("content"))) if m.get("role") == "system" else None)
        for m in record.messages
    )
    if not record.messages:
        messages = '<p class="muted">no trajectory recorded</p>'
    warnings = "".join(f'<div class="warn">{escape(shown(w))}</div>' for w in record.warnings)
    return (
        f'<details class="episode" id="{anchor}" data-outcome="{outcome}" '
        f'data-trial="{record.trial}"><summary>{head}</summary>'
        f'<div class="conv">{messages}</div>{warnings}{verdict_html(record)}</details>'
    )
