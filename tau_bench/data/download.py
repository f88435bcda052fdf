"""Downloading upstream files for `tau data pull`: raw GitHub URLs, retries, progress.

Connection errors and 5xx are retried (`RETRY_DELAYS`); other statuses fail at once with
a hint for offline machines. Checking what arrived is the caller's job (`pinned`), but
two bounds hold while it arrives:

* size: a body longer than the file's pinned size (`UNPINNED_LIMIT` for a file with no
  pinned size) is stopped as soon as it passes it, and not retried: the URL names a
  file of a pinned commit, so a server sending more is not sending that file;
  The size counts the file's bytes: the body is asked for uncompressed, and one sent
  compressed anyway (gzip, deflate) is decoded here never more than one byte past the
  bound (httpx would decode a whole network chunk of a compression bomb first);
* time: each file has `DEADLINE` seconds, all attempts and pauses included. Timeouts
  (`TIMEOUT`) only bound each wait for the connection or for the next bytes, so a
  server that trickles a byte at a time would otherwise hold a pull for weeks. The
  deadline is checked whenever bytes arrive or an attempt ends, and no wait of an
  attempt is longer than what is left of it when the attempt starts (`MIN_WAIT` at
  least), so a pull ends within `DEADLINE` plus the time left at its last attempt's
  start, at most one read timeout (60 s) after it.
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import httpx

from tau_bench.data.errors import PullError, TooLargeError
from tau_bench.data.pinned import Source
from tau_bench.data.upstream import PINNED_COMMIT, UPSTREAM_REPO

RAW_BASE = "https://raw.githubusercontent.com"
# Pause before each retry of a download that failed on the connection or with a 5xx.
RETRY_DELAYS: tuple[float, ...] = (1.0, 2.0, 4.0)
TIMEOUT = httpx.Timeout(60.0, connect=15.0)
# Seconds one file may take, retries included: ~16 KB/s for the largest (14 MB) file.
DEADLINE = 900.0
# The shortest wait an attempt is given, however little of the deadline is left (a
# shorter one would fail a server that answers at once).
MIN_WAIT = 1.0
# Bytes a file with no pinned size may have (those are upstream Python modules of a few KB).
UNPINNED_LIMIT = 16 * 1024 * 1024


def _offline_hint(url: str) -> str:
    """What to do without internet, for the benchmark `url` belongs to (τ-bench v1's
    repository, else τ³'s)."""
    if f"/{UPSTREAM_REPO}/" in url:
        return (
            "on an offline machine, set TAU_BENCH_DATA (or --data-dir) to a τ-bench data directory"
        )
    return "on an offline machine, set TAU3_BENCH_DATA (or --data-dir) to a τ³ data directory"


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


def _clock() -> float:
    return time.monotonic()


def download(client: httpx.Client, url: str, source: Source, progress: Progress) -> bytes:
    """GET `url`; retried on connection errors and 5xx, failing fast on other statuses, on
    a body longer than `source.size` (or `UNPINNED_LIMIT`), and once `DEADLINE` passed."""
    attempts = len(RETRY_DELAYS) + 1
    limit = source.size if source.size is not None else UNPINNED_LIMIT
    started = _clock()
    problem = ""
    for attempt in range(attempts):
        received = 0
        left = max(MIN_WAIT, started + DEADLINE - _clock())
        timeout = httpx.Timeout(min(TIMEOUT.read or left, left), connect=min(15.0, left))
        try:
            with client.stream(
                "GET", url, headers={"Accept-Encoding": "identity"}, timeout=timeout
            ) as response:
                if response.status_code == 200:
                    declared = _declared_length(response)
                    if declared is not None and declared > limit:
                        raise _too_large(url, source, limit, declared)
                    if source.size is None and declared is not None:
                        progress.grow(declared)
                    decoder = _decoder(response, url, source)
                    chunks = []
                    for raw in response.iter_raw():
                        chunk = decoder.decode(raw, limit - received + 1)
                        received += len(chunk)
                        if received > limit:
                            raise _too_large(url, source, limit)
                        chunks.append(chunk)
                        progress.advance(len(chunk))
                        _check_deadline(started, url, source, received)
                    decoder.finish()
                    return b"".join(chunks)
                if response.status_code < 500:
                    raise PullError(
                        f"download failed: HTTP {response.status_code} for {url} "
                        f"(upstream file {source.path}); {_offline_hint(url)}"
                    )
                problem = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except BaseException:
            progress.advance(-received)
            raise
        progress.advance(-received)
        _check_deadline(started, url, source, 0, problem)
        if attempt + 1 < attempts:
            time.sleep(min(RETRY_DELAYS[attempt], max(0.0, started + DEADLINE - _clock())))
            _check_deadline(started, url, source, 0, problem)
    raise PullError(
        f"download failed after {attempts} attempts ({problem}) for {url} "
        f"(upstream file {source.path}); {_offline_hint(url)}"
    )


class _Identity:
    def decode(self, raw: bytes, at_most: int) -> bytes:
        return raw

    def finish(self) -> None:
        pass


class _Inflate:
    """A gzip or deflate body decoded never more than `at_most` bytes at a time."""

    def __init__(self, coding: str, url: str, source: Source) -> None:
        self._inflate = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib, by header
        self._what = f"{coding} body from {url}"
        self._url = url
        self._source = source

    def decode(self, raw: bytes, at_most: int) -> bytes:
        try:
            return self._inflate.decompress(raw, max(1, at_most))
        except zlib.error as exc:
            raise self._error(str(exc)) from None

    def finish(self) -> None:
        if not self._inflate.eof:
            raise self._error("it ends before its compressed stream does")

    def _error(self, why: str) -> PullError:
        return PullError(
            f"download failed: undecodable {self._what} ({why}) "
            f"(upstream file {self._source.path}); {_offline_hint(self._url)}"
        )


def _decoder(response: httpx.Response, url: str, source: Source) -> _Identity | _Inflate:
    """How to turn the body as sent into the file's bytes, a bounded amount at a time. A
    body in an encoding other than gzip or deflate is refused: none was asked for."""
    coding = response.headers.get("content-encoding", "identity").strip().lower()
    if coding in ("", "identity"):
        return _Identity()
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise PullError(
            f"download failed: {url} answered in the {coding!r} content encoding, which "
            f"was not asked for (upstream file {source.path}); {_offline_hint(url)}"
        )
    return _Inflate(coding, url, source)


def _declared_length(response: httpx.Response) -> int | None:
    """The body's length as the server announces it, when that is the length of what
    `iter_bytes` yields (no content coding: a gzip body may be longer than the file)."""
    if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
        return None
    value = response.headers.get("content-length", "")
    return int(value) if value.isdigit() and len(value) < 19 else None


def _too_large(url: str, source: Source, limit: int, declared: int | None = None) -> TooLargeError:
    pinned = (
        "its pinned size" if source.size is not None else "the limit for a file with no pinned size"
    )
    said = f" (it announces {declared:,})" if declared is not None else ""
    return TooLargeError(
        f"upstream file {source.path}",
        f"download stopped: {url} sends more than {limit:,} bytes{said}, {pinned} "
        f"(upstream file {source.path}); this is not the pinned file, so it is not "
        f"retried; nothing was written to the data directory; {_offline_hint(url)}",
        source.sha256 or "",
    )


def _check_deadline(
    started: float, url: str, source: Source, received: int, problem: str = ""
) -> None:
    if _clock() - started <= DEADLINE:
        return
    last = f" (last attempt: {problem})" if problem else ""
    got = f" after {received:,} bytes" if received else ""
    raise PullError(
        f"download timed out: {url} did not arrive within {DEADLINE:.0f} s{got}{last} "
        f"(upstream file {source.path}); {_offline_hint(url)}"
    )
