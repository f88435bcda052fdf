"""Fakes of the services a run talks to, for tests and benchmarks (never for results)."""

from tau_bench.fakes.openai_server import ChatReply, ChatRequest, Faults, OpenAIServer
from tau_bench.fakes.process import OpenAIServerProcess

__all__ = ["ChatReply", "ChatRequest", "Faults", "OpenAIServer", "OpenAIServerProcess"]
