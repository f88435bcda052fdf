"""The react agent: the act agent's text format with a "Thought:" before every action.

Parsing is shared with `act` (which already keeps a thought when one is given); only
the instructions differ. The thought is recorded in the turn's `extra`, never shown
to the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_adapters.protocol import SessionContext
from tau_adapters.registry import AgentProvider, SimpleProvider
from tau_bench.agents import prompts
from tau_bench.agents.act import ActAgent
from tau_bench.agents.tool_calling import agent_config


class ReactAgent(ActAgent):
    """Thought, then Action."""

    def system_prompt(self, session: SessionContext) -> str:
        return prompts.react_system_prompt(session.policy, session.tools)


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `react`: options model, model_provider, api_base, temperature, seed."""
    config = agent_config(options)
    return SimpleProvider(lambda: ReactAgent(config))
