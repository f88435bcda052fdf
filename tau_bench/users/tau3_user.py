"""The τ³ user simulator: the original's guidelines and scenario, its stop tokens, its tools.

System prompt = the original's template (extracted at `tau data pull` time) filled with
a guideline file from `data/tau2/user_simulator/` (no persona guidelines at run time: the
placeholder is emptied) and the task's scenario as the original renders it
(`Tau3Task.instruction`). The model answers the agent's greeting first; roles are
flipped as in the original. `###STOP###`, `###TRANSFER###` and `###OUT-OF-SCOPE###` end
the conversation (`user_stop`).

On a domain where the user has tools (telecom, mock: `bind_episode` hands them over),
the original switches to `simulation_guidelines_tools.md` and offers the tools to the
model as function tools (`tool_choice` auto). A reply with tool calls goes back to the
loop as a `UserReply`; the loop runs them on the user's side and hands the observations
to this user only (`tool_results`), as `tool` messages in its own history; it answers
again until it says something, which is all the agent sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tau_adapters import jsonsafe
from tau_adapters.protocol import (
    AdapterConfigError,
    ToolCall,
    ToolResult,
    UserOutput,
    UserReply,
    UserSimulator,
)
from tau_bench.data.errors import DataDirError
from tau_bench.data.files import read_text
from tau_bench.llm import Completion, LLMConfig, complete
from tau_bench.tau3.data import PULL_HINT, prompt_text, resolve_tau3_data_dir
from tau_bench.users import prompts
from tau_bench.users.llm_users import LLMUser

__all__ = ["STOP_TOKENS", "Tau3User", "build_tau3_user", "tau3_user_system_prompt"]

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
GUIDELINES = Path("data/tau2/user_simulator/simulation_guidelines.md")
GUIDELINES_TOOLS = Path("data/tau2/user_simulator/simulation_guidelines_tools.md")
DEFAULT_MODEL = "gpt-4.1-2025-04-14"


def tau3_user_system_prompt(
    root: Path, scenario: str, guidelines: str = "", *, tools: bool = False
) -> str:
    """The original's user system prompt for `scenario` (rendered persona + instructions);
    with `tools`, the guidelines for a user that has tools of its own."""
    template = prompt_text(root, "user_system_prompt")
    path = Path(root) / (GUIDELINES_TOOLS if tools else GUIDELINES)
    text = guidelines or read_text(path, PULL_HINT)
    return template.replace(
        "{global_user_sim_guidelines_with_persona}", text.replace("<PERSONA_GUIDELINES>", "")
    ).replace("{instructions}", scenario)


class Tau3User(LLMUser):
    """One model call per turn, with the τ³ prompt and stop tokens; with the episode's
    user tools, the model may call them before it answers the agent."""

    stop_tokens = STOP_TOKENS

    def __init__(self, config: LLMConfig, root: Path) -> None:
        super().__init__(config)
        self.root = root
        self.tools: list[dict[str, Any]] = []
        self.tool_calls_made = 0

    def bind_episode(self, task: Any, tools: list[dict[str, Any]]) -> None:
        """The user's tool schemas for this episode (empty: a user without tools)."""
        self.tools = [dict(t) for t in tools]

    def system_prompt(self, instruction: str) -> str:
        return tau3_user_system_prompt(self.root, instruction, tools=bool(self.tools))

    async def start(self, instruction: str) -> UserOutput:  # type: ignore[override]
        self.instruction = instruction
        self.messages = [{"role": "system", "content": self.system_prompt(instruction)}]
        self.history = []
        return await self.reply(prompts.GREETING)

    async def reply(self, agent_message: str) -> UserOutput:  # type: ignore[override]
        self.messages.append({"role": "user", "content": agent_message})
        self.history.append(("agent", agent_message))
        return await self._answer()

    async def tool_results(self, results: list[ToolResult]) -> UserOutput:
        """Observations of this user's own calls (in call order): its next answer."""
        for result in results:
            self.messages.append(
                {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
            )
        return await self._answer()

    async def call(self, messages: list[dict[str, Any]]) -> Completion:
        if not self.tools:
            return await super().call(messages)
        completion = await complete(self.config, messages, tools=self.tools, tool_choice="auto")
        self._usage.add(completion.usage)
        self.retries.extend(r.to_dict() for r in completion.retries)
        return completion

    async def _answer(self) -> UserOutput:
        completion = await self.call(self.messages)
        calls = [self._tool_call(c) for c in completion.tool_calls] if self.tools else []
        if not calls:
            self.messages.append({"role": "assistant", "content": completion.content})
            text = completion.content.strip()
            self.history.append(("customer", text))
            return text
        self.messages.append(
            {
                "role": "assistant",
                "content": completion.message.get("content") or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ],
            }
        )
        return UserReply(text=completion.content.strip(), tool_calls=calls)

    def _tool_call(self, raw: dict[str, Any]) -> ToolCall:
        self.tool_calls_made += 1
        function = raw.get("function") or {}
        return ToolCall(
            id=str(raw.get("id") or f"user_call_{self.tool_calls_made}"),
            name=str(function.get("name") or ""),
            arguments=_decode(function.get("arguments")),
            raw=raw,
        )


def _decode(text: Any) -> Any:
    """Arguments as JSON; undecodable text is passed on (the tool answers with an error)."""
    if not isinstance(text, str):
        return text if text is not None else {}
    return jsonsafe.loads_or_text(text) if text.strip() else {}


def build_tau3_user(**options: Any) -> UserSimulator:
    """`--user-strategy tau3`: options as the other LLM users (`model` default gpt-4.1)."""
    from tau_bench.users.llm_users import _config

    opts = dict(options)
    opts.setdefault("model", DEFAULT_MODEL)
    try:
        root = resolve_tau3_data_dir(opts.get("data_dir"))
        prompt_text(root, "user_system_prompt")
    except DataDirError as exc:
        raise AdapterConfigError(str(exc)) from None
    return Tau3User(_config(opts), root)
