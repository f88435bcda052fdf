"""httpx transports (async and sync) whose response bodies stop at a byte limit, counted
after decoding.

Why: httpx decodes gzip and deflate one network chunk at a time with no limit, so a
64 KiB chunk of a compression bomb is ~64 MiB in memory before a caller can count it.
Adapters that read untrusted agents give their httpx client this transport instead: it
asks only for encodings it decodes itself (gzip, deflate), decodes them never more than
one byte past the limit, and fails a body (a whole SSE stream included) at the byte that
crosses it. Bodies in any other encoding are refused.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

from tau_adapters.protocol import AdapterProtocolError

__all__ = ["ACCEPTED_ENCODINGS", "BodyTooLarge", "BoundedSyncTransport", "BoundedTransport"]

KEEPALIVE_EXPIRY = 4.0
"""Seconds an idle connection is kept for reuse by the transports made here. httpx's 5 s
equals the idle timeout of uvicorn, Node and most servers an agent runs on: a request
sent on a connection the server is closing at that instant is reset, and fails as a
network error that is not safe to retry (the agent may have acted on it). One second
less leaves the server's close to a connection the client no longer uses."""

POOL_LIMITS = httpx.Limits(
    max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY
)
"""httpx's default pool (100 connections, 20 kept idle) with `KEEPALIVE_EXPIRY`."""

# What the transport decodes itself (zlib's header autodetection reads gzip and zlib).
_DECODED = frozenset({"gzip", "x-gzip", "deflate"})
ACCEPTED_ENCODINGS = "deflate, gzip"


class BodyTooLarge(AdapterProtocolError):
    """A response body passed the transport's limit (after decoding)."""

    def __init__(self, message: str, limit: int = 0, url: str = "") -> None:
        super().__init__(message)
        self.limit = limit
        self.url = url


def _shown_url(request: httpx.Request) -> str:
    """The request's URL without its query (which may carry a key), for messages only:
    made when an error needs it (a URL copy costs a parse, on every model call)."""
    return str(request.url.copy_with(query=None))


class _Decoded:
    """One body's bytes as they are read: decoded (gzip, deflate) never more than one byte
    past the limit, and counted; the bytes that cross the limit raise `too_large`."""

    def __init__(self, owner: _Bounds, request: httpx.Request, gz: bool) -> None:
        self._owner, self._request = owner, request
        self._decoder = zlib.decompressobj(32 + zlib.MAX_WBITS) if gz else None
        self._size = 0

    @property
    def _url(self) -> str:
        return _shown_url(self._request)

    def _count(self, data: bytes) -> bytes:
        self._size += len(data)
        if self._size > self._owner.limit:
            raise self._owner.too_large(self._url)
        return data

    def _decode(self, data: bytes) -> bytes:
        assert self._decoder is not None
        try:
            # Never more than one byte past the limit: a small bomb stays small.
            return self._decoder.decompress(data, self._owner.limit - self._size + 1)
        except zlib.error as exc:
            raise AdapterProtocolError(
                f"{self._owner.label}: undecodable compressed answer from {self._url}: {exc}"
            ) from None

    def pieces(self, chunk: bytes) -> Iterator[bytes]:
        """The body's bytes in a chunk read off the wire."""
        if self._decoder is None:
            yield self._count(chunk)
            return
        data = self._decode(chunk)
        while True:
            if data:
                yield self._count(data)
            if not self._decoder.unconsumed_tail:
                break
            data = self._decode(self._decoder.unconsumed_tail)

    def rest(self) -> Iterator[bytes]:
        """The body's last bytes, once the wire has no more."""
        if self._decoder is not None:
            rest = self._decoder.flush()
            if rest:
                yield self._count(rest)


class _BoundedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, body: _Decoded) -> None:
        self._inner, self._body = inner, body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            for piece in self._body.pieces(chunk):
                yield piece
        for piece in self._body.rest():
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedSyncStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, body: _Decoded) -> None:
        self._inner, self._body = inner, body

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            yield from self._body.pieces(chunk)
        yield from self._body.rest()

    def close(self) -> None:
        self._inner.close()


class _Bounds:
    """The limit, the messages, and the screening of a response's headers that both
    transports share."""

    def __init__(self, limit: int, label: str, too_large_class: type[BodyTooLarge]) -> None:
        self.limit = limit
        self.label = label
        self._too_large_class = too_large_class

    def too_large(self, url: str) -> BodyTooLarge:
        return self._too_large_class(
            f"{self.label}: the answer from {url} is larger than the {self.limit} bytes "
            "allowed (max_response_bytes)",
            self.limit,
            url,
        )

    def refusal(self, request: httpx.Request, response: httpx.Response) -> Exception | None:
        """Why `response` is refused from its headers alone (the caller closes it and
        raises this), or None: its body is then read through `bounded_body`."""
        encoding = response.headers.get("content-encoding", "").strip().lower()
        identity = encoding in ("", "identity")
        declared = response.headers.get("content-length", "").strip()
        if identity and declared.isdigit() and int(declared) > self.limit:
            return self.too_large(_shown_url(request))
        if not identity and encoding not in _DECODED:
            return AdapterProtocolError(
                f"{self.label}: unsupported Content-Encoding {encoding!r} from "
                f"{_shown_url(request)}"
            )
        return None

    def bounded_body(self, request: httpx.Request, response: httpx.Response) -> _Decoded:
        """How `response`'s body is read (its headers made to say what is delivered)."""
        gz = response.headers.get("content-encoding", "").strip().lower() not in ("", "identity")
        if gz:
            del response.headers["content-encoding"]  # decoded here, within the bound
            response.headers.pop("content-length", None)
        return _Decoded(self, request, gz)


class BoundedTransport(_Bounds, httpx.AsyncBaseTransport):
    """Response bodies stop at `limit` decoded bytes with `too_large_class`; messages
    start with `label` (the adapter's name) and show URLs without their query."""

    def __init__(
        self,
        limit: int,
        *,
        label: str,
        too_large_class: type[BodyTooLarge] = BodyTooLarge,
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(limit, label, too_large_class)
        self._inner = inner or httpx.AsyncHTTPTransport(limits=POOL_LIMITS)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        response = await self._inner.handle_async_request(request)
        refused = self.refusal(request, response)
        if refused is not None:
            await response.aclose()
            raise refused
        assert isinstance(response.stream, httpx.AsyncByteStream)
        # The same response, its body read through the bound (a new Response and headers
        # copy cost as much again as the bound itself, on every model call).
        response.stream = _BoundedStream(response.stream, self.bounded_body(request, response))
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedSyncTransport(_Bounds, httpx.BaseTransport):
    """`BoundedTransport` for a synchronous `httpx.Client`."""

    def __init__(
        self,
        limit: int,
        *,
        label: str,
        too_large_class: type[BodyTooLarge] = BodyTooLarge,
        inner: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(limit, label, too_large_class)
        self._inner = inner or httpx.HTTPTransport(limits=POOL_LIMITS)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        response = self._inner.handle_request(request)
        refused = self.refusal(request, response)
        if refused is not None:
            response.close()
            raise refused
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _BoundedSyncStream(response.stream, self.bounded_body(request, response))
        return response

    def close(self) -> None:
        self._inner.close()
