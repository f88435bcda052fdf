"""Which model-call path reached a fake model server, told by the client that called
it: litellm's own HTTP client, or the openai SDK's (the direct path)."""

from __future__ import annotations

from tau_bench.fakes.openai_server import OpenAIServer

CLIENTS = {"litellm": "litellm/", "direct": "AsyncOpenAI/"}  # user agents' beginnings


def clients(server: OpenAIServer) -> set[str]:
    """The paths the server's requests came by (an unknown client by its user agent)."""
    agents = {r.headers.get("user-agent", "") for r in server.requests}
    return {p for p, start in CLIENTS.items() for a in agents if a.startswith(start)} | {
        a for a in agents if not a.startswith(tuple(CLIENTS.values()))
    }
