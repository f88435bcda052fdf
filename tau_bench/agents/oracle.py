"""The oracle baseline: plays the task's ground-truth actions, then states its outputs.

A pipeline self-check: with any user simulator that lets it talk, it must score 1.0
wherever the ground truth does. It issues the ground-truth tool calls one per turn, in
order, then answers with the required outputs. A terminate tool in the ground truth is
issued last, in the same turn as the outputs message. On a τ³ task (it has an
`oracle_message`) it ends as the original's replay does: that message, then it stops.

Where the ground truth has actions of the user's (τ³ telecom: the customer's phone), it
asks the user for each run of them in one message naming every tool (`ask_user`); the
scripted user performs exactly the actions it is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_adapters.protocol import (
    AdapterConfigError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
)
from tau_adapters.registry import AgentProvider, SimpleProvider

RESPOND = "respond"


def ask_user(actions: list[Any]) -> str:
    """The oracle's request for a run of user-side actions: one line per action, each
    naming its tool, so a scripted user can tell exactly what it is asked to do."""
    lines = [
        f"- {a.name}({', '.join(f'{k}={v!r}' for k, v in dict(a.kwargs).items())})" for a in actions
    ]
    return "Could you please do the following on your phone, in this order?\n" + "\n".join(lines)


def outputs_message(outputs: list[str]) -> str:
    if not outputs:
        return "Your request has been handled."
    return "Here is what you asked for: " + "; ".join(outputs) + "."


class OracleAgent:
    """Replays `session.task.actions`; knows nothing else."""

    def __init__(self) -> None:
        self._phase = "new"
        self._actions: list[Any] = []
        self._outputs: list[str] = []
        self._terminal: list[Any] = []
        self._step = 0
        self._ends = False
        self._final: str | None = None

    async def start(self, session: SessionContext) -> None:
        task = session.task
        if task is None or not hasattr(task, "actions"):
            raise AdapterConfigError("the oracle agent needs the task in the session context")
        terminate = {"transfer_to_human_agents"} | set(session.metadata.get("terminate_tools", []))
        if hasattr(task, "oracle_message"):
            terminate = set()  # τ³: no tool ends the conversation; all run in order
        plan = getattr(task, "action_plan", None) or task.actions
        actions = [a for a in plan if a.name != RESPOND]
        self._actions = [a for a in actions if a.name not in terminate]
        self._terminal = [a for a in actions if a.name in terminate]
        self._outputs = list(getattr(task, "outputs", []) or [])
        # τ³: the original's replay says `oracle_message` (if any) and stops (agent_stop).
        self._ends = hasattr(task, "oracle_message")
        self._final = getattr(task, "oracle_message", None)
        self._phase = "tools"

    async def send(self, turn: AgentInput) -> AgentTurn:
        if self._phase == "tools":
            if self._actions and getattr(self._actions[0], "requestor", "") == "user":
                run = []
                while self._actions and getattr(self._actions[0], "requestor", "") == "user":
                    run.append(self._actions.pop(0))
                return AgentTurn(messages=[ask_user(run)])
            if self._actions:
                action = self._actions.pop(0)
                self._step += 1
                return AgentTurn(
                    tool_calls=[
                        ToolCall(
                            id=f"gt_{self._step}", name=action.name, arguments=dict(action.kwargs)
                        )
                    ]
                )
            self._phase = "answer"
        if self._phase == "answer" and self._ends:
            self._phase = "done"
            return AgentTurn(messages=[self._final] if self._final else [], end_conversation=True)
        if self._phase == "answer":
            self._phase = "done"
            message = outputs_message(self._outputs)
            if self._terminal:
                action = self._terminal[0]
                return AgentTurn(
                    messages=[message],
                    tool_calls=[
                        ToolCall(id="gt_terminal", name=action.name, arguments=dict(action.kwargs))
                    ],
                )
            return AgentTurn(messages=[message])
        return AgentTurn(messages=["Thank you, goodbye."], end_conversation=True)

    async def close(self) -> None:
        self._phase = "closed"


def build(options: Mapping[str, Any]) -> AgentProvider:
    return SimpleProvider(OracleAgent)


build.calls_model = False  # type: ignore[attr-defined]  # no pre-flight model call (preflight)
