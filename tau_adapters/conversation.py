"""The conversation step machine: the one place that knows how a conversation advances.

Two drivers move it: `run_episode` (an `AgentAdapter` answers) and the gym environment
(a policy being trained answers, one action per `step`). Both feed it the same events -
what the user said, the agent's tool calls, the agent's message - and it keeps the
trajectory (OpenAI-style messages), counts steps exactly as the original benchmark
counted them (every tool call and every message to the user is one step) and decides
when the conversation is over and why (`stop_reason`).

Nothing here knows a benchmark: tools run through a `ToolExecutor`, whose outputs are
typed (`ToolOutput.is_error`), so no caller inspects observation text. A user side that
calls tools of its own (τ³ telecom) fits the same machine: `user_tool_calls` runs them on
the user's executor and records them with `requestor: "user"`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import STOP_TOKEN, ToolCall, ToolExecutor, ToolResult

DEFAULT_MAX_STEPS = 30

# Why a conversation ended. `max_steps` is the only cut-off: such an episode is not
# finished and scores 0, as in the original.
USER_STOP = "user_stop"
AGENT_END = "agent_end"
AGENT_HANDOFF = "agent_handoff"
TERMINATE_TOOL = "terminate_tool"
MAX_STEPS = "max_steps"
MAX_USER_TURNS = "max_user_turns"
ERROR = "error"


def json_arguments(arguments: Any) -> str:
    """Tool-call arguments as the JSON text of an OpenAI message."""
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError):
        return json.dumps(str(arguments))


@dataclass
class Conversation:
    """One conversation's state. Feed it events; read `messages`, `steps`, `stop_reason`."""

    executor: ToolExecutor
    max_steps: int = DEFAULT_MAX_STEPS
    user_executor: ToolExecutor | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    user_turns: int = 0
    stop_reason: str = ""
    stop_tokens: tuple[str, ...] = (STOP_TOKEN,)
    """What ends the conversation in a user message (τ³ adds ###TRANSFER###, ###OUT-OF-SCOPE###)."""

    @property
    def done(self) -> bool:
        return bool(self.stop_reason)

    @property
    def cut_off(self) -> bool:
        """Ended by the step limit: not finished, so it scores 0 whatever the DB says."""
        return self.stop_reason == MAX_STEPS

    def system(self, policy: str) -> None:
        if policy:
            self.messages.append({"role": "system", "content": policy})

    def end(self, reason: str) -> None:
        self.stop_reason = reason

    def user_said(self, text: str) -> bool:
        """Record the user's words; True when they end the conversation (###STOP###)."""
        self.user_turns += 1
        self.messages.append({"role": "user", "content": text})
        if any(token in text for token in self.stop_tokens):
            self.end(USER_STOP)
            return True
        return False

    def agent_tool_calls(self, calls: list[ToolCall], text: str = "") -> list[ToolResult]:
        """Run the agent's calls in order on the executor and record them.

        Stops early at the step limit (the remaining calls are not run) or after a
        terminate tool; `stop_reason` then says which.
        """
        # With a user that has tools (dual control), both sides' calls say who made them.
        requestor = "assistant" if self.user_executor is not None else None
        self.messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [_tool_call_message(c, requestor) for c in calls],
            }
        )
        if text:
            self.executor.respond(text)
        results: list[ToolResult] = []
        for call in calls:
            if self.steps >= self.max_steps:
                break
            output = self.executor.execute(call.name, call.arguments)
            self.steps += 1
            results.append(ToolResult(call.id, call.name, output.content, output.is_error))
            message = {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.name,
                "content": output.content,
            }
            if requestor is not None:
                message["requestor"] = requestor
            self.messages.append(message)
            if self.executor.is_terminate(call.name):
                self.end(TERMINATE_TOOL)
                return results
        if self.steps >= self.max_steps:
            self.end(MAX_STEPS)
        return results

    def agent_message(self, text: str, *, end: bool = False, handoff: bool = False) -> bool:
        """Record a message to the user; True when the conversation is over after it."""
        self.messages.append({"role": "assistant", "content": text})
        self.executor.respond(text)
        self.steps += 1
        if handoff:
            self.end(AGENT_HANDOFF)
        elif end:
            self.end(AGENT_END)
        elif self.steps >= self.max_steps:
            self.end(MAX_STEPS)
        return self.done

    def agent_signal(self, *, end: bool = False, handoff: bool = False) -> bool:
        """After a tool-call turn: the agent may also have ended or handed off."""
        if not self.done and (end or handoff):
            self.end(AGENT_HANDOFF if handoff else AGENT_END)
        return self.done

    def user_tool_calls(self, calls: list[ToolCall], text: str = "") -> list[ToolResult]:
        """Run the user's own tool calls (dual control) on the user's executor.

        The observations go back to the user only; the agent never sees them. They are
        recorded with `requestor: "user"` and do not count as agent steps.
        """
        if self.user_executor is None:
            raise ValueError("this conversation's user has no tools")
        self.messages.append(
            {
                "role": "user",
                "content": text or None,
                "tool_calls": [_tool_call_message(c, requestor="user") for c in calls],
            }
        )
        results: list[ToolResult] = []
        for call in calls:
            output = self.user_executor.execute(call.name, call.arguments)
            results.append(ToolResult(call.id, call.name, output.content, output.is_error))
            self.messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.name,
                    "content": output.content,
                    "requestor": "user",
                }
            )
        return results


def _tool_call_message(call: ToolCall, requestor: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": json_arguments(call.arguments)},
    }
    if requestor is not None:
        out["requestor"] = requestor
    return out
