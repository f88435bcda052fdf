"""The A2A part of `make demo`: the reference A2A agent (oracle brain) on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

# The agent learns its task from the first message's metadata (docs/a2a.md).
TASK_METADATA = ["env={env}", "task_id={task_id}", "task_split={task_split}"]


class A2ADemo:
    """The `a2a` adapter talks to the agent over real A2A (card, message/stream, DataParts)."""

    title = "A2A adapter against the local reference A2A agent (oracle brain)"
    label = "a2a (reference agent)"
    strategy = "a2a"

    @asynccontextmanager
    async def serve(self, workdir: Path) -> AsyncIterator[dict[str, Any]]:
        from adapters.a2a.harness.reference_agent import ReferenceExecutor
        from adapters.a2a.harness.server import LoopbackServer, a2a_app, agent_card
        from tau_bench.agents.oracle import OracleAgent

        def app(url: str) -> Any:
            return a2a_app(ReferenceExecutor(OracleAgent), agent_card(url))

        server = LoopbackServer(app)
        url = await asyncio.to_thread(server.start)
        try:
            yield {"agent_url": url, "message_metadata": TASK_METADATA}
        finally:
            await asyncio.to_thread(server.stop)


demo = A2ADemo()
