"""The scripted user: deterministic and offline, for plumbing tests without model costs.

Its first message is the task instruction verbatim. To an agent message that asks
something (contains "?") it answers a fixed affirmative; to one that asks nothing it
answers ###STOP###. After `max_turns` such answers it stops.

With tools of its own (τ³ telecom: `bind_episode` gives it the task and the user's tool
schemas) it also plays the task's user-side expected actions, in order, when the agent
asks for them: an agent message that names the next pending action's tool (as a whole
word, once per time it is asked) gets that tool call, one call per turn, with the
ground-truth arguments; once nothing more it was asked for is pending, it answers the
affirmative. So the oracle agent (`tau_bench.agents.oracle.ask_user`), local or behind a
hosted platform, runs a telecom task offline.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from tau_adapters.protocol import STOP_TOKEN, ToolCall, ToolResult, Usage, UserReply

DEFAULT_AFFIRMATIVE = "Yes, please go ahead."


class ScriptedUser:
    def __init__(self, affirmative: str = DEFAULT_AFFIRMATIVE, max_turns: int = 10) -> None:
        self.affirmative = affirmative
        self.max_turns = max_turns
        self.turns = 0
        self._usage = Usage()
        self._pending: list[Any] = []  # the task's user-side actions not yet performed
        self._asked: Counter[str] = Counter()  # tool name -> times the agent asked for it
        self._calls = 0

    def bind_episode(self, task: Any, tools: list[dict[str, Any]]) -> None:
        """The episode's task and the user's tools: with tools, play its user actions."""
        names = {t.get("function", {}).get("name") for t in tools}
        actions = list(getattr(task, "user_actions", None) or []) if tools else []
        self._pending = [a for a in actions if a.name in names]
        self._asked.clear()

    async def start(self, instruction: str) -> str:
        self.turns = 1
        return instruction

    async def reply(self, agent_message: str) -> str | UserReply:
        self._asked = Counter({a.name: _mentions(agent_message, a.name) for a in self._pending})
        call = self._next_call()
        if call is not None:
            return UserReply(tool_calls=[call])
        self.turns += 1
        if self.turns > self.max_turns or "?" not in agent_message:
            return STOP_TOKEN
        return self.affirmative

    async def tool_results(self, results: list[ToolResult]) -> str | UserReply:
        """After one of its own calls: the next one it was asked for, or the affirmative."""
        call = self._next_call()
        return UserReply(tool_calls=[call]) if call is not None else self.affirmative

    def _next_call(self) -> ToolCall | None:
        if not self._pending or self._asked[self._pending[0].name] <= 0:
            return None
        action = self._pending.pop(0)
        self._asked[action.name] -= 1
        self._calls += 1
        return ToolCall(id=f"user_{self._calls}", name=action.name, arguments=dict(action.kwargs))

    @property
    def usage(self) -> Usage:
        return self._usage


def _mentions(text: str, name: str) -> int:
    """How many times `name` appears in `text` as a whole word (underscores included)."""
    return len(re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", text or ""))
