"""The τ³ trajectory of an episode, rebuilt from the conversation when it ends.

The evaluator replays the trajectory's tool calls, so every call that ran on the episode's
environment must be in it, in its place. Most calls come through the conversation loop
(their ids and order are the conversation's). An agent with server-side tools runs its
calls itself, through the tool server: they never appear in the conversation, only in the
environment's log. Each logged call therefore carries how many agent texts preceded it;
a call no conversation message accounts for is placed just before the agent's next text
(after the user message it answered), as the original records an agent's tool calls
before its reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau_bench.tau3.messages import Message, ToolCall

__all__ = ["LoggedCall", "rebuild"]


@dataclass(frozen=True)
class LoggedCall:
    """One call made on the environment, its tool message, and its place in the episode.

    `ran` is False for a call whose arguments were not a JSON object: it was answered with
    an error without running, so it is left out of the trajectory, whose calls the
    evaluator replays (the original cannot hold such a call: its `ToolCall` takes a dict)."""

    call: ToolCall
    result: Message
    agent_texts: int
    ran: bool = True

    def messages(self, call_id: str | None = None) -> tuple[Message, Message]:
        """The (call, tool) message pair the trajectory holds for it."""
        call = self.call
        if call_id is not None:
            call = ToolCall(call_id, call.name, call.arguments, call.requestor)
        role = "user" if call.requestor == "user" else "assistant"
        tool = Message(
            role="tool",
            content=self.result.content,
            id=call.id,
            requestor=call.requestor,
            error=self.result.error,
        )
        return Message(role=role, content=None, tool_calls=[call]), tool


def _matches(log: list[LoggedCall], messages: list[dict[str, Any]]) -> dict[tuple[int, int], int]:
    """(message index, call index) -> log index, for the calls the conversation made: the
    first unused logged call with the same name on the same side, in order."""
    used: set[int] = set()
    found: dict[tuple[int, int], int] = {}
    for mi, m in enumerate(messages):
        if m.get("role") not in ("assistant", "user"):
            continue
        for ci, raw in enumerate(m.get("tool_calls") or []):
            side = raw.get("requestor") or ("user" if m["role"] == "user" else "assistant")
            name = (raw.get("function") or {}).get("name")
            for li, entry in enumerate(log):
                if li not in used and entry.call.name == name and entry.call.requestor == side:
                    used.add(li)
                    found[(mi, ci)] = li
                    break
    return found


def rebuild(
    start: list[Message], log: list[LoggedCall], messages: list[dict[str, Any]]
) -> list[Message]:
    """The trajectory: `start` (history or greeting), then the conversation with every
    logged call in its place."""
    out = list(start)
    matched = _matches(log, messages)
    direct = sorted(i for i in set(range(len(log))) - set(matched.values()) if log[i].ran)
    pending: dict[str, Message] = {}
    texts = 0

    def flush(upto: int | None) -> None:
        while direct and (upto is None or log[direct[0]].agent_texts <= upto):
            out.extend(log[direct.pop(0)].messages())

    for mi, m in enumerate(messages):
        role = m.get("role")
        text = m.get("content")
        if role == "system":
            continue
        if role in ("assistant", "user") and m.get("tool_calls"):
            if role == "assistant":
                flush(texts)
                texts += bool(text)
            calls = []
            for ci, raw in enumerate(m["tool_calls"]):
                li = matched.get((mi, ci))
                if li is None or not log[li].ran:
                    continue
                call_message, tool = log[li].messages(str(raw.get("id") or log[li].call.id))
                calls.extend(call_message.tool_calls or [])
                pending[str(tool.id)] = tool
            out.append(Message(role=str(role), content=text or None, tool_calls=calls or None))
        elif role == "tool":
            tool_message = pending.pop(str(m.get("tool_call_id")), None)
            if tool_message is not None:
                out.append(tool_message)
        elif role in ("assistant", "user") and text is not None:
            if role == "assistant":
                flush(texts)
                texts += 1
            out.append(Message(role=str(role), content=str(text)))
    flush(None)
    return out
