"""An httpx transport whose response bodies stop at a byte limit, counted after decoding.

Why: httpx decodes gzip and deflate one network chunk at a time with no limit, so a
64 KiB chunk of a compression bomb is ~64 MiB in memory before a caller can count it.
Adapters that read untrusted agents give their httpx client this transport instead: it
asks only for encodings it decodes itself (gzip, deflate), decodes them never more than
one byte past the limit, and fails a body (a whole SSE stream included) at the byte that
crosses it. Bodies in any other encoding are refused.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx

from tau_adapters.protocol import AdapterProtocolError

__all__ = ["ACCEPTED_ENCODINGS", "BodyTooLarge", "BoundedTransport"]

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


class _BoundedStream(httpx.AsyncByteStream):
    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        owner: BoundedTransport,
        request: httpx.Request,
        gz: bool,
    ):
        self._inner, self._owner, self._request = inner, owner, request
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

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if self._decoder is None:
                yield self._count(chunk)
                continue
            data = self._decode(chunk)
            while True:
                if data:
                    yield self._count(data)
                if not self._decoder.unconsumed_tail:
                    break
                data = self._decode(self._decoder.unconsumed_tail)
        if self._decoder is not None:
            rest = self._decoder.flush()
            if rest:
                yield self._count(rest)

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
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
        self.limit = limit
        self.label = label
        self._too_large_class = too_large_class
        self._inner = inner or httpx.AsyncHTTPTransport()

    def too_large(self, url: str) -> BodyTooLarge:
        return self._too_large_class(
            f"{self.label}: the answer from {url} is larger than the {self.limit} bytes "
            "allowed (max_response_bytes)",
            self.limit,
            url,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        identity = encoding in ("", "identity")
        declared = response.headers.get("content-length", "").strip()
        if identity and declared.isdigit() and int(declared) > self.limit:
            await response.aclose()
            raise self.too_large(_shown_url(request))
        if not identity and encoding not in _DECODED:
            await response.aclose()
            raise AdapterProtocolError(
                f"{self.label}: unsupported Content-Encoding {encoding!r} from "
                f"{_shown_url(request)}"
            )
        if not identity:
            del response.headers["content-encoding"]  # decoded here, within the bound
            response.headers.pop("content-length", None)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        # The same response, its body read through the bound (a new Response and headers
        # copy cost as much again as the bound itself, on every model call).
        response.stream = _BoundedStream(response.stream, self, request, gz=not identity)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
