"""Hostile HTTP bots: real TCP servers on 127.0.0.1 that speak HTTP/1.1 by hand, so they
can misbehave the way a real peer does (drip bytes, stream keep-alives forever, redirect,
answer binary, huge or absurdly nested replies).

Each bot is an async handler `(request_body, writer)`; the server reads one request per
connection, calls it, and closes. It runs on the test's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

Handler = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return await reader.readexactly(length) if length else b""


@contextlib.asynccontextmanager
async def hostile_server(handler: Handler) -> AsyncIterator[str]:
    """Serve `handler` on an ephemeral port; yields the base URL. On exit the server and
    every handler still misbehaving are stopped."""
    tasks: set[asyncio.Task[None]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            body = await _read_request(reader)
            await handler(body, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client gave up on us: that is the point
        finally:
            tasks.discard(task)
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def head(status: str = "200 OK", content_type: str = "application/json", **extra: str) -> bytes:
    """A response head without Content-Length (the body runs until the connection
    closes), plus any `extra` headers (underscores become dashes)."""
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", "Connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reply(body: bytes, status: str = "200 OK", content_type: str = "application/json") -> Handler:
    """A bot that answers `body` at once, whole."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head(status, content_type, Content_Length=str(len(body))) + body)
        await writer.drain()

    return handle


def drip(every: float, byte: bytes = b" ") -> Handler:
    """A bot that sends a 200 head, then one byte every `every` seconds, forever (each
    read succeeds, so no per-read timeout ever fires)."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head(Content_Length="1000000"))
        while True:
            writer.write(byte)
            await writer.drain()
            await asyncio.sleep(every)  # the peer's pace, not synchronisation

    return handle


def sse_keepalive(every: float) -> Handler:
    """An event stream that only ever sends keep-alive comments."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head(content_type="text/event-stream"))
        while True:
            writer.write(b": keep-alive\n\n")
            await writer.drain()
            await asyncio.sleep(every)  # the peer's pace, not synchronisation

    return handle


def endless(chunk: int = 64 * 1024) -> Handler:
    """A reply with no length that never stops growing (a huge reply)."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head() + b'{"reply": "')
        block = b"x" * chunk
        while True:
            writer.write(block)
            await writer.drain()

    return handle


def then_hang(first: bytes) -> Handler:
    """A bot that sends `first` (a head and the start of a body), then holds the
    connection open without another byte until the server is stopped."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(first)
        await writer.drain()
        await asyncio.Event().wait()  # never set: cancelled when the server stops

    return handle


def pieces(*chunks: bytes, content_type: str = "text/event-stream") -> Handler:
    """A bot that answers a 200 head, then `chunks` written one by one, then closes."""

    async def handle(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head(content_type=content_type))
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()

    return handle
