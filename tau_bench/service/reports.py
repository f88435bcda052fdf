"""`GET /runs/{id}/report`, bounded: a few renders at once, a finished run's page cached.

Rendering the HTML report of a large run takes seconds and hundreds of MB (a 2,000-episode
run: 13 MB of HTML in 5 s); ten requests at once used to render ten copies. Now at most
`max_renders` run at once (a request beyond gets `ReportsBusy`: 503 with Retry-After),
a request for a report already being rendered waits for that render, and the page of a
finished run is kept (up to `max_bytes` in all, least recently used dropped first) under
a key that a resume changes, so it is rendered once.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["ReportCache", "ReportsBusy"]

MAX_CACHED_BYTES = 64 * 1024 * 1024
WAIT_FOR_RENDER = 300.0  # seconds a request waits for a render another one started


class ReportsBusy(RuntimeError):
    """Every render slot is taken (a 503: retry later)."""


class ReportCache:
    """Renders reports with at most `max_renders` at once; keeps finished ones."""

    def __init__(self, max_renders: int, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_renders = max_renders
        self.max_bytes = max_bytes
        self._active = 0
        self._pages: OrderedDict[Hashable, str] = OrderedDict()
        self._size = 0
        self._rendering: dict[Hashable, asyncio.Task[str]] = {}

    async def get(self, key: Hashable | None, render: Callable[[], str]) -> str:
        """The page for `key` (None: not cacheable, e.g. a run in progress): cached, the
        render in flight for it, or a new render in a worker thread."""
        if key is not None:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
                return page
            running = self._rendering.get(key)
            if running is not None:
                return await self._wait(running)
        if self._active >= self.max_renders:
            raise ReportsBusy(
                f"{self._active} report(s) are being rendered, this server's limit: retry "
                "in a few seconds"
            )
        self._active += 1
        task = asyncio.get_running_loop().create_task(self._render(key, render))
        # A client that leaves does not stop the thread: the task still frees its slot.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        if key is not None:
            self._rendering[key] = task
        return await self._wait(task)

    @staticmethod
    async def _wait(task: asyncio.Task[str]) -> str:
        try:
            return await asyncio.wait_for(asyncio.shield(task), WAIT_FOR_RENDER)
        except TimeoutError:
            raise ReportsBusy(
                f"the report is still being rendered after {WAIT_FOR_RENDER:g} s: retry later"
            ) from None

    async def _render(self, key: Hashable | None, render: Callable[[], str]) -> str:
        try:
            page = await asyncio.to_thread(render)
        finally:
            self._active -= 1
            if key is not None:
                self._rendering.pop(key, None)
        if key is not None:
            self._keep(key, page)
        return page

    def _keep(self, key: Hashable, page: str) -> None:
        size = len(page)
        if size > self.max_bytes:
            return
        self._pages[key] = page
        self._size += size
        while self._size > self.max_bytes:
            _, dropped = self._pages.popitem(last=False)
            self._size -= len(dropped)

    def forget(self, run_id: str) -> None:
        """Drop every page of `run_id` (keys start with the run id)."""
        for key in [k for k in self._pages if isinstance(k, tuple) and k and k[0] == run_id]:
            self._size -= len(self._pages.pop(key))
