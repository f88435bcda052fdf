"""tau-adapters SDK: the AgentAdapter protocol and the episode loop (no τ-bench import)."""

from tau_adapters.loop import EpisodeError, EpisodeResult, run_episode
from tau_adapters.protocol import (
    STOP_TOKEN,
    AdapterAuthError,
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    AgentAdapter,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolExecutor,
    ToolResult,
    ToolResults,
    Usage,
    UserSimulator,
    UserTurn,
)
from tau_adapters.registry import AgentProvider, SimpleProvider, build_provider

__all__ = [
    "STOP_TOKEN",
    "AdapterAuthError",
    "AdapterConfigError",
    "AdapterError",
    "AdapterProtocolError",
    "AgentAdapter",
    "AgentInput",
    "AgentProvider",
    "AgentTurn",
    "EpisodeError",
    "EpisodeResult",
    "SessionContext",
    "SimpleProvider",
    "ToolCall",
    "ToolExecutor",
    "ToolResult",
    "ToolResults",
    "Usage",
    "UserSimulator",
    "UserTurn",
    "build_provider",
    "run_episode",
]
