"""`tau_adapters.bounded_http`: bodies are decoded by the transport and counted after
decoding, so a small compressed body never becomes a large one in memory."""

from __future__ import annotations

import asyncio
import gzip
import time
import zlib

import httpcore
import httpx
import pytest
import uvicorn

from tau_adapters.bounded_http import (
    KEEPALIVE_EXPIRY,
    BodyTooLarge,
    BoundedSyncTransport,
    BoundedTransport,
)
from tau_adapters.protocol import AdapterProtocolError

LIMIT = 64 * 1024
BOMB = gzip.compress(b"\0" * (256 * 1024 * 1024), compresslevel=9)  # 256 MiB in ~250 KiB


def _client(body: bytes, *, limit: int = LIMIT, chunk: int | None = None, **headers: str):
    seen: dict[str, str] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen.update(request.headers)
        pieces = (
            [body] if chunk is None else [body[i : i + chunk] for i in range(0, len(body), chunk)]
        )
        return httpx.Response(
            200,
            headers={k.replace("_", "-"): v for k, v in headers.items()},
            stream=httpx.ByteStream(b"".join(pieces)) if chunk is None else _Chunks(pieces),
        )

    inner = httpx.MockTransport(answer)
    transport = BoundedTransport(limit, label="bot", inner=inner)
    return httpx.AsyncClient(transport=transport), seen


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for piece in self.pieces:
            yield piece


async def _chunks(client: httpx.AsyncClient) -> list[int]:
    sizes: list[int] = []
    async with client.stream("GET", "http://bot.test/chat?token=s3cret") as response:
        async for chunk in response.aiter_bytes():
            sizes.append(len(chunk))
    return sizes


async def test_a_compression_bomb_stops_at_the_limit_without_growing() -> None:
    # One network chunk of 64 KiB of this bomb is ~64 MiB once decoded; httpx's own decoder
    # would hand it over whole. Here no piece is ever more than one byte past the limit.
    client, seen = _client(BOMB, chunk=64 * 1024, Content_Encoding="gzip")
    sizes: list[int] = []
    with pytest.raises(BodyTooLarge, match=r"bot: the answer from http://bot.test/chat is larger"):
        async with client.stream("GET", "http://bot.test/chat?token=s3cret") as response:
            async for chunk in response.aiter_bytes():
                sizes.append(len(chunk))
    assert max(sizes, default=0) <= LIMIT + 1
    assert seen["accept-encoding"] == "deflate, gzip"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "x-gzip"])
async def test_compressed_bodies_under_the_limit_are_decoded_whole(encoding: str) -> None:
    text = b'{"reply": "' + b"hello " * 5000 + b'"}'
    body = zlib.compress(text) if encoding == "deflate" else gzip.compress(text)
    client, _ = _client(body, chunk=7, Content_Encoding=encoding)
    async with client:
        response = await client.get("http://bot.test/chat")
    assert response.content == text
    assert "content-encoding" not in response.headers


async def test_a_plain_body_past_the_limit_fails_at_that_byte() -> None:
    client, _ = _client(b"x" * (LIMIT + 1), chunk=1000)
    with pytest.raises(BodyTooLarge):
        await _chunks(client)
    client, _ = _client(b"x" * LIMIT, chunk=1000)
    assert sum(await _chunks(client)) == LIMIT


async def test_a_declared_length_past_the_limit_fails_before_reading() -> None:
    client, _ = _client(b"{}", Content_Length=str(LIMIT + 1))
    with pytest.raises(BodyTooLarge):
        await client.get("http://bot.test/chat")


async def test_undecodable_and_unknown_encodings_are_protocol_errors() -> None:
    client, _ = _client(b"not gzip at all", Content_Encoding="gzip")
    with pytest.raises(AdapterProtocolError, match="undecodable compressed answer"):
        await client.get("http://bot.test/chat")
    client, _ = _client(b"....", Content_Encoding="br")
    with pytest.raises(AdapterProtocolError, match="unsupported Content-Encoding 'br'"):
        await client.get("http://bot.test/chat?token=s3cret")


# -- the same bounds on a synchronous client (`BoundedSyncTransport`) ----------------------


class _SyncChunks(httpx.SyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self):  # type: ignore[no-untyped-def]
        yield from self.pieces


def _sync_client(body: bytes, *, chunk: int = 64 * 1024, **headers: str) -> httpx.Client:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "deflate, gzip"
        pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
        return httpx.Response(
            200,
            headers={k.replace("_", "-"): v for k, v in headers.items()},
            stream=_SyncChunks(pieces),
        )

    transport = BoundedSyncTransport(LIMIT, label="bot", inner=httpx.MockTransport(answer))
    return httpx.Client(transport=transport)


def test_a_sync_client_stops_a_compression_bomb_at_the_limit() -> None:
    sizes: list[int] = []
    with (
        _sync_client(BOMB, Content_Encoding="gzip") as client,
        pytest.raises(BodyTooLarge, match=r"bot: the answer from http://bot.test/chat is larger"),
        client.stream("GET", "http://bot.test/chat?token=s3cret") as response,
    ):
        sizes.extend(len(chunk) for chunk in response.iter_bytes())
    assert max(sizes, default=0) <= LIMIT + 1


def test_a_sync_client_decodes_and_bounds_as_the_async_one() -> None:
    text = b'{"reply": "' + b"hello " * 5000 + b'"}'
    with _sync_client(gzip.compress(text), chunk=7, Content_Encoding="gzip") as client:
        response = client.get("http://bot.test/chat")
    assert response.content == text and "content-encoding" not in response.headers
    with _sync_client(b"x" * LIMIT) as client:
        assert len(client.get("http://bot.test/chat").content) == LIMIT
    with _sync_client(b"x" * (LIMIT + 1), chunk=1000) as client, pytest.raises(BodyTooLarge):
        client.get("http://bot.test/chat")
    with (
        _sync_client(b"{}", Content_Length=str(LIMIT + 1)) as client,
        pytest.raises(BodyTooLarge),
    ):
        client.get("http://bot.test/chat")
    with (
        _sync_client(b"....", Content_Encoding="br") as client,
        pytest.raises(AdapterProtocolError, match="unsupported Content-Encoding 'br'"),
    ):
        client.get("http://bot.test/chat?token=s3cret")


# -- idle connections --------------------------------------------------------------------


class _Clock:
    """httpcore's clock moved forward on demand: a connection's idle time without waiting."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


async def _keep_alive_server() -> tuple[asyncio.Server, list[int]]:
    """Answers every request with 200 and keeps the connection; counts connections."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0), accepted


async def test_a_connection_idle_past_4_s_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn and Node close a connection idle for 5 s; httpx reused one for 5 s, so a
    request could go out on a connection the server was closing (a reset, a network
    error the A2A adapter may not retry). The SDK's transports drop it a second before."""
    clock = _Clock()
    monkeypatch.setattr(httpcore._async.http11, "time", clock)
    server, accepted = await _keep_alive_server()
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(transport=BoundedTransport(1024, label="bot")) as client:
            for idle in (0.0, 3.5, 4.5):
                clock.offset += idle
                assert (await client.get(f"http://127.0.0.1:{port}/")).text == "ok"
    finally:
        server.close()
        await server.wait_closed()
    assert len(accepted) == 2  # reused after 3.5 s idle, a new one after 4.5 s


def test_the_sync_transport_keeps_idle_connections_as_briefly() -> None:
    sync = BoundedSyncTransport(1024, label="bot")
    assert sync._inner._pool._keepalive_expiry == KEEPALIVE_EXPIRY  # type: ignore[attr-defined]
    assert uvicorn.Config(app=None).timeout_keep_alive - 1 >= KEEPALIVE_EXPIRY
