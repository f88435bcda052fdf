"""Fixtures: an in-process CES emulator on an ephemeral 127.0.0.1 port, providers for it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.ces.adapter import CesProvider, load_options
from adapters.ces.harness.emulator import Emulator

from ...conftest import DATA_DIR

APP = "projects/proj/locations/us/apps/app-1"
FAST_RETRIES = {"retry_initial": 0.001, "retry_max": 0.005}


def provider_for(address: str, **options: Any) -> CesProvider:
    opts: dict[str, Any] = {"app_id": APP, "emulator": address, **FAST_RETRIES}
    opts.update(options)
    return CesProvider(load_options(opts))


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    emu = Emulator(env="retail", data_dir=DATA_DIR)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def provider(emulator: Emulator) -> AsyncIterator[CesProvider]:
    prov = provider_for(emulator.address)
    yield prov
    await prov.aclose()


class ThreadedEmulator:
    """An emulator in its own thread and loop, for synchronous callers (CLI, conformance)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = {"data_dir": DATA_DIR, **kwargs}
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.emulator: Emulator | None = None
        self.error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    async def _main(self) -> None:
        try:
            self.emulator = Emulator(**self.kwargs)
            await self.emulator.start()
            self._stop = asyncio.Event()
        except BaseException as exc:
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        await self._stop.wait()
        await self.emulator.stop()

    def __enter__(self) -> Emulator:
        self.thread.start()
        if not self.ready.wait(30):
            raise TimeoutError("emulator did not start within 30 s")
        if self.error is not None:
            raise self.error
        assert self.emulator is not None
        return self.emulator

    def __exit__(self, *exc: Any) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
        self.loop.close()
