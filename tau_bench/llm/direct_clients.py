"""The direct path's clients: pooled `AsyncOpenAI` clients per endpoint and event loop.

On the openai SDK's aiohttp transport (`httpx-aiohttp`, i.e. `openai[aiohttp]`) one client
per endpoint pools every connection; without it, or when the environment names a proxy
for the endpoint (`proxied`), small httpx clients are sharded as for litellm
(`tau_bench.llm.clients`). TLS is set as litellm sets it (`clients.tls_settings`), and
the account headers as both paths send them (`clients.openai_account_headers`). Under
each `AsyncOpenAI`, an httpx client without the per-request work an API call never
needs (`lean_client_class`) and, on aiohttp, a leaner transport
(`lean_transport_class`): a few tenths of a ms of CPU less per call
(docs/performance.md). Every client's reply bodies are bounded (`wire.bound_client`).
Clients left open when their loop ends are closed quietly (`_drop_sessions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import urllib.parse
import urllib.request
import weakref
from typing import Any

from tau_bench.llm.clients import (
    SHARD_CALLS,
    aclose_litellm_clients,
    openai_account_headers,
    tls_settings,
)
from tau_bench.llm.config import DEFAULT_MAX_RESPONSE_BYTES


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (`HTTP_PROXY`, `HTTPS_PROXY`,
    `ALL_PROXY`, unless `NO_PROXY` exempts it), or None."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def proxied(url: str) -> bool:
    """Whether the environment names a proxy for `url` (`proxy_for`). Such an endpoint's
    direct clients run on httpx's own transport, which reads those variables as the
    litellm path's httpx clients do; aiohttp's session would ignore them."""
    return proxy_for(url) is not None


@functools.lru_cache(maxsize=1)
def lean_client_class() -> type:
    """httpx's client for the openai client, without the per-request work an API call
    never needs: a cookie jar (every response's headers copied into a urllib request to
    look for cookies), auth and redirect flows (the SDK sets its own headers and asks
    for no redirects) and event hooks. Requests go straight to the transport."""
    import httpx

    class LeanAsyncClient(httpx.AsyncClient):
        async def send(
            self, request: httpx.Request, *, stream: bool = False, **_: Any
        ) -> httpx.Response:
            response = await self._transport_for_url(request.url).handle_async_request(request)
            response.request = request
            if not stream:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
            return response

    return LeanAsyncClient


TEMPLATES_PER_CLIENT = 32
"""Request templates a `lean_openai_class` client keeps (one per timeout and retry count
in use; the oldest is dropped past this)."""


@functools.lru_cache(maxsize=1)
def lean_openai_class() -> type:
    """`openai.AsyncOpenAI` building a plain chat-completions POST from a template: the
    SDK builds each request from scratch (parsing its URL, merging its default headers
    into httpx's twice and checking each again), ~0.25 ms of CPU per call, for a request
    that differs from the previous one only in its body.

    The template is the request the SDK itself builds for the same options with an empty
    body, kept per (method, path, timeout, retry count); a call gets a copy with its own
    body and `Content-Length`. Anything else (custom headers, JSON data, query params,
    files, the SDK's debug logging on) goes through the SDK's own `_build_request`."""
    import logging

    import httpx
    import openai

    sdk_log = logging.getLogger("openai")

    class LeanAsyncOpenAI(openai.AsyncOpenAI):
        _templates: dict[tuple[Any, ...], httpx.Request]

        @property
        def user_agent(self) -> str:  # the SDK's (it names the client's class)
            return f"{openai.AsyncOpenAI.__name__}/Python {self._version}"

        def _build_request(self, options: Any, *, retries_taken: int = 0) -> httpx.Request:
            content = options.content
            if (
                type(content) is not bytes
                or options.headers
                or options.params
                or options.json_data is not None
                or options.extra_json is not None
                or options.files is not None
                or self._idempotency_header
                or sdk_log.isEnabledFor(logging.DEBUG)
            ):
                return super()._build_request(options, retries_taken=retries_taken)
            template = self._template(options, retries_taken)
            headers = [
                (key, value)
                for key, value in template.headers.raw
                if key.lower() != b"content-length"
            ]
            headers.append((b"Content-Length", str(len(content)).encode()))
            request = httpx.Request(
                template.method,
                template.url,
                headers=headers,
                stream=httpx.ByteStream(content),
                extensions={
                    name: dict(value) if isinstance(value, dict) else value
                    for name, value in template.extensions.items()
                },
            )
            request.read()  # `content` readable, as for a request built with a body
            return request

        def _template(self, options: Any, retries_taken: int) -> httpx.Request:
            key = (
                options.method,
                options.url,
                _hashable(options.timeout),
                _hashable(options.security),
                retries_taken,
            )
            templates = self.__dict__.setdefault("_templates", {})
            template = templates.get(key)
            if template is None:
                empty = options.model_copy(update={"content": b""})
                template = super()._build_request(empty, retries_taken=retries_taken)
                if len(templates) >= TEMPLATES_PER_CLIENT:
                    templates.pop(next(iter(templates)))
                templates[key] = template
            return template

    return LeanAsyncOpenAI


def _hashable(value: Any) -> Any:
    """A request option as a cache key: an `httpx.Timeout` and the security options (a
    dict) are not hashable."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, dict):
        return tuple(sorted((str(k), repr(v)) for k, v in value.items()))
    return value if isinstance(value, (int, float, type(None))) else repr(value)


@functools.lru_cache(maxsize=1)
def lean_transport_class() -> type:
    """httpx-aiohttp's transport reading each answer whole: the request's headers go to
    aiohttp as the pairs they are (not through httpx's `Headers` mapping, which re-checks
    every header's encoding on each lookup) and the body is read in one piece rather
    than through a chunk-stream adapter, never more than `max_body` bytes of it (the
    decoding is bounded above it, `wire.bound_client`). A refused connection is httpx's
    `ConnectError` (httpx-aiohttp makes it a `ConnectTimeout`: "Request timed out.").
    Anything else (a streamed request body) is left to httpx-aiohttp."""
    import aiohttp
    import httpx
    from httpx_aiohttp.transport import AiohttpTransport, map_aiohttp_exceptions

    class LeanAiohttpTransport(AiohttpTransport):  # type: ignore[misc]
        def __init__(self, *args: Any, max_body: int = DEFAULT_MAX_RESPONSE_BYTES, **kw: Any):
            super().__init__(*args, **kw)
            self.max_body = max_body

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                data = request.content or None
            except httpx.RequestNotRead:
                return await super().handle_async_request(request)
            if not isinstance(self.client, aiohttp.ClientSession):
                self.client = self.get_client()
            timeout = request.extensions.get("timeout", {})
            with map_aiohttp_exceptions(), _refused_is_connect_error():
                async with self.client.request(
                    request.method,
                    str(request.url),
                    headers=[
                        (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                    ],
                    data=data,
                    allow_redirects=False,
                    auto_decompress=False,  # httpx decodes, as for its own transport
                    compress=False,
                    timeout=aiohttp.ClientTimeout(
                        sock_connect=timeout.get("connect"),
                        sock_read=timeout.get("read"),
                        connect=timeout.get("pool"),
                    ),
                    server_hostname=request.extensions.get("sni_hostname"),
                ) as response:
                    content = await _read_within(response, self.max_body, request.url)
            extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
            if response.reason:
                extensions["reason_phrase"] = response.reason.encode()
            # A stream, not `content=`: httpx would decode a compressed body at once,
            # without a bound, before the bounded transport above could count it.
            return httpx.Response(
                response.status,
                headers=response.raw_headers,
                stream=httpx.ByteStream(content),
                request=request,
                extensions=extensions,
            )

    return LeanAiohttpTransport


@contextlib.contextmanager
def _refused_is_connect_error() -> Any:
    """aiohttp's failure to connect (refused, unreachable, DNS) as httpx's `ConnectError`,
    which the openai client reports as "Connection error."."""
    import aiohttp
    import httpx

    try:
        yield
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc)) from exc


async def _read_within(response: Any, limit: int, url: Any) -> bytes:
    """An aiohttp response's raw body, failing with `BodyTooLarge` as soon as it passes
    `limit` bytes (announced or counted)."""
    from tau_bench.llm.wire import too_large

    declared = response.content_length
    if declared is not None:
        if declared > limit:
            raise too_large(limit, _shown(url))
        return bytes(await response.read())
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large(limit, _shown(url))
        chunks.append(chunk)
    return b"".join(chunks)


def _shown(url: Any) -> str:
    """The URL without its query, for the message only (a URL copy costs a parse: not on
    every call)."""
    return str(url.copy_with(query=None))


TRANSPORT_ENV = "TAU_LLM_DIRECT_TRANSPORT"
"""`httpx`: direct clients on httpx's own transport even when aiohttp's is installed
(tests that mock httpx with respx set it)."""


def aiohttp_transport() -> bool:
    """Whether direct clients use the openai client's aiohttp transport (`httpx-aiohttp`,
    the SDK's `openai[aiohttp]`, when installed): it spends a fraction of httpcore's CPU
    per request."""
    if os.environ.get(TRANSPORT_ENV, "").strip().lower() == "httpx":
        return False
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


class ClientShards:
    """The `AsyncOpenAI` clients of one endpoint, key and account (`account`: the
    `OpenAI-Organization` / `OpenAI-Project` headers, `clients.openai_account_headers`)
    on one event loop.

    On aiohttp (`aiohttp_transport()`) that is one client whose connector pools every
    connection. On httpx's own transport each call takes the least-loaded client and a
    new one opens when all carry `SHARD_CALLS` calls: httpcore scans every connection of
    a client per request, so small pools keep that scan short (as for the litellm path's
    clients, `tau_bench.llm.clients`)."""

    def __init__(
        self,
        url: str,
        key: str,
        timeout: float | None,
        limit: int,
        account: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.url, self.key, self.timeout, self.limit = url, key, timeout, limit
        self.account = dict(account)
        self.clients: list[Any] = []
        self.load: list[int] = []
        self.aiohttp = aiohttp_transport() and not proxied(url)
        self.tls = tls_settings()  # litellm's: SSL_VERIFY, SSL_CERT_FILE, SSL_CERTIFICATE
        self.transports: list[Any] = []  # aiohttp's, closed with the loop if not before
        self.shard = 1_000_000 if self.aiohttp else SHARD_CALLS

    def _new(self) -> Any:
        import httpx

        from tau_bench.llm.wire import bound_client

        timeout = self.timeout if self.timeout is not None else 600.0
        if self.aiohttp:
            big = httpx.Limits(max_connections=100_000, max_keepalive_connections=100_000)
            transport = lean_transport_class()(**self.tls, limits=big, max_body=self.limit)
            self.transports.append(transport)
            http = lean_client_class()(timeout=timeout, transport=transport)
        else:
            http = lean_client_class()(
                timeout=timeout,
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=2 * SHARD_CALLS
                ),
                **self.tls,
            )
        return lean_openai_class()(
            base_url=self.url,
            api_key=self.key,
            organization=self.account.get("OpenAI-Organization"),
            project=self.account.get("OpenAI-Project"),
            max_retries=0,
            http_client=bound_client(http, self.limit),
        )

    def acquire(self) -> tuple[int, Any]:
        best = min(range(len(self.load)), key=self.load.__getitem__, default=-1)
        if best < 0 or self.load[best] >= self.shard:
            self.clients.append(self._new())
            self.load.append(0)
            best = len(self.load) - 1
        self.load[best] += 1
        return best, self.clients[best]

    def release(self, index: int) -> None:
        if index < len(self.load):  # closed meanwhile
            self.load[index] -= 1

    async def aclose(self) -> None:
        clients, self.clients, self.load = self.clients, [], []
        for client in clients:
            await client.close()


_ShardsKey = tuple[str, str, int, tuple[tuple[str, str], ...]]
_shards: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_ShardsKey, ClientShards]] = (
    weakref.WeakKeyDictionary()
)


def shards_for(url: str, key: str, timeout: float | None, limit: int) -> ClientShards:
    """The running loop's clients for an endpoint, key, reply limit (bytes) and the
    account headers the environment names now."""
    per_loop = _shards.setdefault(asyncio.get_running_loop(), {})
    account = tuple(openai_account_headers().items())
    shards = per_loop.get((url, key, limit, account))
    if shards is None:
        shards = ClientShards(url, key, timeout, limit, account)
        per_loop[(url, key, limit, account)] = shards
        weakref.finalize(asyncio.get_running_loop(), _drop_sessions, shards.transports)
    return shards


def _drop_sessions(transports: list[Any]) -> None:
    """Close, without a loop, the aiohttp sessions of a loop that ended with its direct
    clients open (a caller that never called `aclose_clients`): aiohttp would otherwise
    report every one as unclosed when it is collected."""
    for transport in transports:
        session = getattr(transport, "client", None)
        if session is None or getattr(session, "closed", True):
            continue
        connector = getattr(session, "connector", None)
        with contextlib.suppress(Exception):
            session.detach()
            if connector is not None:
                connector._close()  # the synchronous close (the loop is gone)


def direct_client_count() -> int:
    """Direct clients open on the running loop (tests, benchmarks)."""
    return sum(len(s.clients) for s in _shards.get(asyncio.get_running_loop(), {}).values())


async def aclose_direct_clients() -> None:
    """Close the running loop's direct clients (end of a run; optional)."""
    for shards in _shards.pop(asyncio.get_running_loop(), {}).values():
        await shards.aclose()


async def aclose_clients() -> None:
    """Close the running event loop's model clients, litellm's and direct (at the end of
    a run; optional: they are dropped with their loop anyway)."""
    await aclose_litellm_clients()
    await aclose_direct_clients()
