"""The human user: you play the customer in the terminal.

The task instruction is shown first, then the agent's greeting; every agent message is
printed and your typed line is sent back. `/stop` (or ###STOP###) ends the conversation;
end of input (Ctrl-D, a closed pipe) is not an answer: the episode ends with an error and
is not scored (`--resume` runs it again). Input is read in a worker thread so the event loop keeps
serving other work (progress display, timeouts) while you type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from tau_adapters.protocol import STOP_TOKEN, Usage
from tau_bench import terminal
from tau_bench.users.prompts import GREETING

STOP_WORDS = frozenset({"/stop", "/quit", "/exit", STOP_TOKEN.lower()})


class InputEnded(Exception):
    """The person's input ended before they stopped the conversation."""

    retryable = True


class HumanUser:
    """A `UserSimulator` backed by a person at the terminal (no model, no cost)."""

    def __init__(
        self,
        console: Console | None = None,
        input_fn: Callable[[str], str] | None = None,
    ) -> None:
        self.console = console or terminal.console()
        self._input = input_fn or input
        self._usage = Usage()
        self.turns = 0

    @property
    def usage(self) -> Usage:
        return self._usage

    async def start(self, instruction: str) -> str:
        self.turns = 0
        self.console.print(Panel(Text(instruction), title="Your task as the customer"))
        self.console.print("Type /stop to end the conversation.", style="dim")
        return await self.reply(GREETING)

    async def reply(self, agent_message: str) -> str:
        self.console.print(Text.assemble(("agent: ", "bold cyan"), agent_message))
        try:
            line = await asyncio.to_thread(self._input, "you: ")
        except EOFError:
            raise InputEnded(
                "the human user's input ended before /stop: the episode is not scored"
            ) from None
        self.turns += 1
        text = line.strip()
        if text.lower() in STOP_WORDS:
            return STOP_TOKEN
        return text
