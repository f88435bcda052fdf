"""The tool-calling agent: the model's native function calling, the policy as system prompt.

Every tool call of the model's message is returned (the loop's
`max_tool_calls_per_turn` may cut them; upstream kept only the first). When the results
cover only a prefix of the calls, the uncovered calls are removed from the history, as
the protocol asks: the model then sees a conversation in which it never made them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
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
from tau_bench.llm import Completion, LLMConfig, ToolSchemas, complete


def agent_config(options: Mapping[str, Any]) -> LLMConfig:
    """The model config of a local agent from the run options (`model`, `model_provider`...)."""
    opts = dict(options)
    if opts.get("temperature") is None:
        opts["temperature"] = 0.0
    return LLMConfig.from_options(opts, model_key="model", provider_key="model_provider")


def episode_config(config: LLMConfig, session: SessionContext) -> LLMConfig:
    """`config` with the episode's seed (`session.metadata["seed"]`, set by the runner
    per (task, trial)) in place of the run seed, so trials are different samples."""
    seed = session.metadata.get("seed")
    if seed is None:
        return config
    return dataclasses.replace(config, seed=int(seed))


def decode_arguments(text: Any) -> Any:
    """Tool-call arguments as JSON; an undecodable string is passed on as is (the env
    then answers with an error observation the model can react to)."""
    if not isinstance(text, str):
        return text
    return jsonsafe.loads_or_text(text) if text.strip() else {}


class ToolCallingAgent:
    """Keeps the OpenAI-format conversation and asks the model for the next message."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.messages: list[dict[str, Any]] = []
        self.tools = ToolSchemas(())
        self._open_calls: list[str] = []

    def system_prompt(self, session: SessionContext) -> str:
        return session.policy

    async def start(self, session: SessionContext) -> None:
        self.config = episode_config(self.config, session)
        self.messages = [{"role": "system", "content": self.system_prompt(session)}]
        self.tools = ToolSchemas(session.tools)  # their JSON is encoded once
        self._open_calls = []

    def _keep_only(self, call_ids: list[str]) -> None:
        """Drop the last assistant message's tool calls that got no result."""
        if not self._open_calls or call_ids == self._open_calls:
            self._open_calls = []
            return
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                kept = [c for c in message.get("tool_calls") or [] if c["id"] in call_ids]
                if kept:
                    message["tool_calls"] = kept
                else:
                    message.pop("tool_calls", None)
                    message["content"] = message.get("content") or ""
                break
        self._open_calls = []

    def _observe(self, turn: AgentInput) -> None:
        if isinstance(turn, UserTurn):
            self._keep_only([])
            self.messages.append({"role": "user", "content": turn.text})
            return
        if isinstance(turn, ToolResults):
            self._keep_only([r.call_id for r in turn.results])
            for result in turn.results:
                self.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": result.call_id,
                        "name": result.name,
                        "content": result.content,
                    }
                )

    async def send(self, turn: AgentInput) -> AgentTurn:
        self._observe(turn)
        completion = await complete(self.config, self.messages, tools=self.tools or None)
        self.messages.append(completion.message)
        return self._turn(completion)

    def _turn(self, completion: Completion) -> AgentTurn:
        calls = [
            ToolCall(
                id=c["id"],
                name=c["function"]["name"],
                arguments=decode_arguments(c["function"]["arguments"]),
                raw=c,
            )
            for c in completion.tool_calls
        ]
        self._open_calls = [c.id for c in calls]
        text = completion.content
        return AgentTurn(
            messages=[text] if text or not calls else [],
            tool_calls=calls,
            raw=[completion.raw],
            usage=completion.usage,
            extra=completion.extra(),
        )

    async def close(self) -> None:
        self._open_calls = []


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `tool-calling`: options model, model_provider, api_base, temperature, seed."""
    config = agent_config(options)
    return SimpleProvider(lambda: ToolCallingAgent(config))
