"""Downloading upstream files for `tau data pull`: raw GitHub URLs, retries, progress.

Connection errors and 5xx are retried (`RETRY_DELAYS`); other statuses fail at once with
a hint for offline machines. Checking what arrived is the caller's job (`pinned`).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from tau_bench.data.errors import PullError
from tau_bench.data.pinned import Source
from tau_bench.data.upstream import PINNED_COMMIT, UPSTREAM_REPO

RAW_BASE = "https://raw.githubusercontent.com"
# Pause before each retry of a download that failed on the connection or with a 5xx.
RETRY_DELAYS: tuple[float, ...] = (1.0, 2.0, 4.0)
TIMEOUT = httpx.Timeout(60.0, connect=15.0)
_OFFLINE_HINT = (
    "on an offline machine, set TAU_BENCH_DATA (or --data-dir) to a τ-bench data directory"
)


def raw_url(path: str, commit: str = PINNED_COMMIT, repo: str = UPSTREAM_REPO) -> str:
    return f"{RAW_BASE}/{repo}/{commit}/{path}"


class Progress:
    """Byte progress on stderr (rich), or nothing."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self._progress: Any = None
        self._task: Any = None
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from tau_bench import terminal

        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=terminal.console(stderr=True),
        )
        self._task = self._progress.add_task(label, total=total)

    def __enter__(self) -> Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def grow(self, n: int) -> None:
        if self._progress is not None:
            total = self._progress.tasks[0].total or 0
            self._progress.update(self._task, total=total + n)

    def describe(self, label: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=label)


def download(client: httpx.Client, url: str, source: Source, progress: Progress) -> bytes:
    """GET `url`; retried on connection errors and 5xx, failing fast on other statuses."""
    attempts = len(RETRY_DELAYS) + 1
    problem = ""
    for attempt in range(attempts):
        received = 0
        try:
            with client.stream("GET", url) as response:
                if response.status_code == 200:
                    if source.size is None and response.headers.get("content-length"):
                        progress.grow(int(response.headers["content-length"]))
                    chunks = []
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        received += len(chunk)
                        progress.advance(len(chunk))
                    return b"".join(chunks)
                if response.status_code < 500:
                    raise PullError(
                        f"download failed: HTTP {response.status_code} for {url} "
                        f"(upstream file {source.path}); {_OFFLINE_HINT}"
                    )
                problem = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        progress.advance(-received)
        if attempt + 1 < attempts:
            time.sleep(RETRY_DELAYS[attempt])
    raise PullError(
        f"download failed after {attempts} attempts ({problem}) for {url} "
        f"(upstream file {source.path}); {_OFFLINE_HINT}"
    )
