"""The scripted user: deterministic and offline, for plumbing tests without model costs.

Its first message is the task instruction verbatim. To an agent message that asks
something (contains "?") it answers a fixed affirmative; to one that asks nothing it
answers ###STOP###. After `max_turns` user turns it stops.
"""

from __future__ import annotations

from tau_adapters.protocol import STOP_TOKEN, Usage

DEFAULT_AFFIRMATIVE = "Yes, please go ahead."


class ScriptedUser:
    def __init__(self, affirmative: str = DEFAULT_AFFIRMATIVE, max_turns: int = 10) -> None:
        self.affirmative = affirmative
        self.max_turns = max_turns
        self.turns = 0
        self._usage = Usage()

    async def start(self, instruction: str) -> str:
        self.turns = 1
        return instruction

    async def reply(self, agent_message: str) -> str:
        self.turns += 1
        if self.turns > self.max_turns or "?" not in agent_message:
            return STOP_TOKEN
        return self.affirmative

    @property
    def usage(self) -> Usage:
        return self._usage
