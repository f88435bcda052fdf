"""The CX Agent Studio part of `make demo`: the local CES emulator (gRPC, oracle brain)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

DEMO_APP = "projects/demo-project/locations/us/apps/demo-app"


class CesDemo:
    """The `ces` adapter talks to the emulator exactly as it talks to Google (RunSession)."""

    title = "CX Agent Studio (CES) adapter against the local gRPC emulator (oracle brain)"
    label = "ces (CES emulator)"
    strategy = "ces"

    @asynccontextmanager
    async def serve(self, workdir: Path) -> AsyncIterator[dict[str, Any]]:
        from adapters.ces.harness.emulator import Emulator

        emulator = Emulator(env="retail")
        address = await emulator.start()
        try:
            yield {"app_id": DEMO_APP, "emulator": address}
        finally:
            await emulator.stop()


demo = CesDemo()
