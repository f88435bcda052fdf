"""The act agent: tools described in the prompt, one `Action: {json}` per model reply.

For models (or servers) without native function calling. Talking to the user is the
`respond` action; any other action becomes a `ToolCall` whose result comes back as an
`Observation:` message. A reply we cannot parse - JSON nested deeper than
`jsonsafe.MAX_DEPTH` included - is sent to the user as it stands (as upstream did), and
the parse failure is noted in the turn's `extra`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tau_adapters import jsonsafe
from tau_adapters.protocol import (
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResults,
    UserTurn,
)
from tau_adapters.registry import AgentProvider, SimpleProvider
from tau_bench.agents import prompts
from tau_bench.agents.tool_calling import agent_config, episode_config
from tau_bench.llm import LLMConfig, complete

_ACTION = re.compile(r"Action\s*:", re.IGNORECASE)
_THOUGHT = re.compile(r"Thought\s*:", re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


@dataclass
class ParsedAction:
    """One decoded model reply: the action, the thought before it, and any parse problem."""

    name: str
    arguments: Any
    thought: str = ""
    error: str = ""


def _first_json_object(text: str) -> Any:
    """The first JSON value in `text` (trailing chatter after it is ignored). A value
    nested deeper than `jsonsafe.MAX_DEPTH` is a `JSONDepthError` (a ValueError: a parse
    error like any other), never a `RecursionError` from the decoder or a later walk."""
    text = _FENCE.sub("", text.strip()).strip()
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object after 'Action:'")
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except RecursionError:
        raise jsonsafe.JSONDepthError() from None
    return jsonsafe.check_depth(value)


def parse_action(text: str) -> ParsedAction:
    """Decode `[Thought: ...] Action: {"name": ..., "arguments": {...}}`."""
    parts = _ACTION.split(text)
    before = parts[0]
    thought_parts = _THOUGHT.split(before, maxsplit=1)
    thought = thought_parts[-1].strip() if len(thought_parts) > 1 else ""
    if len(parts) < 2:
        return ParsedAction(
            prompts.RESPOND, {"content": text.strip()}, thought, "no 'Action:' in reply"
        )
    action_text = parts[-1].strip()
    try:
        action = _first_json_object(action_text)
        if not isinstance(action, dict) or not isinstance(action.get("name"), str):
            raise ValueError("the action is not an object with a string 'name'")
    except ValueError as exc:
        return ParsedAction(prompts.RESPOND, {"content": action_text}, thought, str(exc))
    arguments = action.get("arguments", action.get("kwargs", {}))
    return ParsedAction(action["name"], arguments, thought)


class ActAgent:
    """Text-format agent: the whole conversation is plain chat messages."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.messages: list[dict[str, Any]] = []
        self._step = 0
        self._pending: str | None = None

    def system_prompt(self, session: SessionContext) -> str:
        return prompts.act_system_prompt(session.policy, session.tools)

    async def start(self, session: SessionContext) -> None:
        self.config = episode_config(self.config, session)
        self.messages = [{"role": "system", "content": self.system_prompt(session)}]
        self._step = 0
        self._pending = None

    def _observe(self, turn: AgentInput) -> None:
        if isinstance(turn, UserTurn):
            self.messages.append({"role": "user", "content": turn.text})
        elif isinstance(turn, ToolResults):
            result = next((r for r in turn.results if r.call_id == self._pending), None)
            if result is not None:
                content = prompts.OBSERVATION_PREFIX + result.content
                self.messages.append({"role": "user", "content": content})
        self._pending = None

    async def send(self, turn: AgentInput) -> AgentTurn:
        self._observe(turn)
        completion = await complete(self.config, self.messages)
        reply = completion.content
        self.messages.append({"role": "assistant", "content": reply})
        action = parse_action(reply)
        extra = completion.extra()
        if action.thought:
            extra["thought"] = action.thought
        if action.error:
            extra["parse_error"] = action.error
        common: dict[str, Any] = {
            "raw": [completion.raw],
            "usage": completion.usage,
            "extra": extra,
        }
        if action.name == prompts.RESPOND:
            args = action.arguments
            content = args.get("content") if isinstance(args, dict) else None
            text = content if isinstance(content, str) else json.dumps(args)
            return AgentTurn(messages=[text], **common)
        self._step += 1
        call = ToolCall(id=f"action_{self._step}", name=action.name, arguments=action.arguments)
        self._pending = call.id
        return AgentTurn(tool_calls=[call], **common)

    async def close(self) -> None:
        self._pending = None


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `act`: options model, model_provider, api_base, temperature, seed."""
    config = agent_config(options)
    return SimpleProvider(lambda: ActAgent(config))
