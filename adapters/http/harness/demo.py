"""The HTTP part of `make demo`: the reference bot (generic-json preset, oracle brain)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


class HttpDemo:
    """The `http` adapter drives the bot on 127.0.0.1 from a preset config file."""

    title = "HTTP adapter against the local reference bot (oracle brain)"
    label = "http (reference bot)"
    strategy = "http"

    @asynccontextmanager
    async def serve(self, workdir: Path) -> AsyncIterator[dict[str, Any]]:
        from adapters.http.harness.reference_bot import create_bot_app
        from adapters.http.presets import preset_text
        from tau_bench.toolserver.background import BackgroundServer

        token = secrets.token_urlsafe(16)
        server = BackgroundServer(create_bot_app(brain="oracle", token=token))
        url = server.start()
        os.environ["BOT_URL"], os.environ["BOT_TOKEN"] = url, token
        config_path = workdir / "bot.yaml"
        config_path.write_text(preset_text("generic-json"), encoding="utf-8")
        try:
            yield {"http_config": str(config_path)}
        finally:
            server.stop()


demo = HttpDemo()
