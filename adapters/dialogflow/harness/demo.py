"""The Dialogflow CX part of `make demo`: the local gRPC emulator with the oracle brain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


class DialogflowDemo:
    """The `decibel` adapter talks to the emulator exactly as it talks to Google."""

    title = "Dialogflow CX adapter against the local gRPC emulator (oracle brain)"
    label = "decibel (Dialogflow CX emulator)"
    strategy = "decibel"

    @asynccontextmanager
    async def serve(self, workdir: Path) -> AsyncIterator[dict[str, Any]]:
        from adapters.dialogflow.harness.emulator import Emulator

        emulator = Emulator(brain="oracle", env="airline")
        address = await emulator.start()
        try:
            yield {"emulator": address, "project_id": "demo-project", "agent_id": "demo-agent"}
        finally:
            await emulator.stop()


demo = DialogflowDemo()
