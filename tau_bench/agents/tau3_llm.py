"""The τ³ LLM agent baseline (`--agent-strategy tau3-llm`): the original's `llm_agent`.

Its system prompt is the original's template filled with its agent instruction and the
domain policy (both texts extracted from the pinned upstream source at `tau data pull`
time); its conversation starts with the original's greeting as its own message; tools
are the domain's `tools.json`; messages are OpenAI-format as the original sends them
through litellm (default model gpt-4.1-2025-04-14, temperature 0). Everything else is
the tool-calling agent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau_adapters.protocol import AdapterConfigError, SessionContext
from tau_adapters.registry import AgentProvider, SimpleProvider
from tau_bench.agents.tool_calling import ToolCallingAgent, agent_config
from tau_bench.data.errors import DataDirError
from tau_bench.llm import LLMConfig
from tau_bench.tau3.data import prompt_text, resolve_tau3_data_dir
from tau_bench.tau3.replay import GREETING

__all__ = ["DEFAULT_MODEL", "Tau3LLMAgent", "build", "tau3_agent_system_prompt"]

DEFAULT_MODEL = "gpt-4.1-2025-04-14"


def tau3_agent_system_prompt(root: Path, policy: str) -> str:
    """`SYSTEM_PROMPT.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=policy)`."""
    template = prompt_text(root, "agent_system_prompt")
    instruction = prompt_text(root, "agent_instruction")
    return template.replace("{agent_instruction}", instruction).replace("{domain_policy}", policy)


class Tau3LLMAgent(ToolCallingAgent):
    """The tool-calling agent with the original's system prompt and opening greeting."""

    def __init__(self, config: LLMConfig, root: Path) -> None:
        super().__init__(config)
        self.root = root

    def system_prompt(self, session: SessionContext) -> str:
        return tau3_agent_system_prompt(self.root, session.policy)

    async def start(self, session: SessionContext) -> None:
        await super().start(session)
        self.messages.append({"role": "assistant", "content": GREETING})


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `tau3-llm`: options as `tool-calling` (model default gpt-4.1)."""
    opts = dict(options)
    if not opts.get("model"):
        opts["model"] = DEFAULT_MODEL
    config = agent_config(opts)
    try:
        root = resolve_tau3_data_dir(opts.get("data_dir"))
        tau3_agent_system_prompt(root, "")
    except DataDirError as exc:
        raise AdapterConfigError(str(exc)) from None
    return SimpleProvider(lambda: Tau3LLMAgent(config, root))
