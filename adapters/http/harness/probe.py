"""`tau http check --probe`: one real message to the bot, and the turn as the adapter
read it, so a config can be debugged before a run. Everything shown is redacted and
escaped (a bot's control bytes never reach the terminal raw)."""

from __future__ import annotations

import json
import uuid

from adapters.http.adapter import HttpProvider, for_checks
from adapters.http.config import LoadedConfig
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import SessionContext, UserTurn
from tau_adapters.redaction import truncate

MAX_SHOWN = 20
"""Messages, and tool calls, the probe prints at most: a reply may hold 200,000 of them."""
MAX_SHOWN_CHARS = 2_000
"""Characters of one message, tool name, arguments or id printed at most."""


def _tools(env: str) -> list[dict[str, object]]:
    """The domain's tool schemas (what a run would declare); none if it cannot load."""
    try:
        from tau_bench.suites import load_domain

        return list(load_domain(env).tool_schemas)
    except Exception:
        return []


def _task_id(task_id: str | None) -> int | str | None:
    """The probe's `{{ task_id }}`: a number, as in a run, when it is one (`"0"` -> 0);
    null without one (no task: a made-up id would be refused by a bot that plays tasks)."""
    if task_id is None:
        return None
    text = task_id.strip()
    index = text.isascii() and text.isdigit() and len(text) <= 9
    return int(text) if index else task_id


async def probe_bot(
    loaded: LoadedConfig, message: str, env: str, *, task_id: str | None = None
) -> list[str]:
    """Start a session (naming task `task_id` of `env`, or none), send `message`, close;
    the lines describing the parsed turn. Raises the adapter's error (`AdapterError`)
    when the bot or the mapping fails."""
    provider = HttpProvider(for_checks(loaded))  # a bot that is down: said in seconds
    redact = provider.redactor.text
    session = SessionContext(
        session_id=f"tau-probe-{uuid.uuid4().hex[:12]}",
        domain=env,
        tools=_tools(env),
        policy="",
        task_id=_task_id(task_id),
        user_id="probe_user",
    )
    adapter = provider.new_adapter()
    try:
        await adapter.open(session, tool_endpoint=False)
        try:
            turn = await adapter.send(UserTurn(message))
        finally:
            await adapter.close()
    finally:
        await provider.aclose()
    lines = [f"probe: sent {message!r}"]
    for call in turn.extra.get("http", []):
        lines.append(
            f"  {call['method']} {redact(call['url'])} -> {call['status']} "
            f"in {call['latency'] * 1000:.0f} ms ({call['attempts']} attempt(s))"
        )

    def shown(text: str) -> str:
        return truncate(printable(redact(text)), MAX_SHOWN_CHARS)

    for text in turn.messages[:MAX_SHOWN]:
        lines.append(f"  message   : {shown(text)}")
    if len(turn.messages) > MAX_SHOWN:
        lines.append(f"  ... and {len(turn.messages) - MAX_SHOWN:,} more messages")
    for tc in turn.tool_calls[:MAX_SHOWN]:
        args = json.dumps(tc.arguments, ensure_ascii=True, default=str)
        lines.append(f"  tool call : {shown(tc.name)}({shown(args)}) id={shown(tc.id)}")
    if len(turn.tool_calls) > MAX_SHOWN:
        lines.append(f"  ... and {len(turn.tool_calls) - MAX_SHOWN:,} more tool calls")
    if not turn.messages and not turn.tool_calls:
        lines.append("  (no message and no tool call)")
    flags = [name for name, on in (("end", turn.end_conversation), ("handoff", turn.handoff)) if on]
    if flags:
        lines.append(f"  flags     : {', '.join(flags)}")
    if turn.usage is not None:
        lines.append(
            f"  usage     : {turn.usage.prompt_tokens} prompt, "
            f"{turn.usage.completion_tokens} completion tokens"
        )
    return lines
