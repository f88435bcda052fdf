"""The bytes of a model reply: bounded in size, decoded within that bound, and checked.

Why: a model service (a gateway, a vLLM server, anything at `--api-base`) is not ours. A
reply of 50 MB, or a 500 KB gzip body that decodes to 500 MB, would otherwise be held in
memory in full (several times: bytes, text, JSON, records). Every httpx client the LLM
layer builds, on either path, sends its requests through `tau_adapters.bounded_http`'s
`BoundedTransport` (`bound_client`): at most `LLMConfig.max_response_bytes` bytes are
read off the wire and at most as many are decoded. On the litellm path, OpenAI
chat-completion replies are also checked before litellm parses them (`CheckedTransport`),
so both paths accept and refuse the same replies (`response.checked_reply`).

The clients litellm builds for itself (every other provider, through its
`AsyncHTTPHandler`, or its sync `HTTPHandler` in a thread; the OpenAI SDK route) are
bounded too (`bound_litellm_clients`):
litellm caches them per provider, not per call, so they read the bound of the call that
sends each request (`call_limit`, a context variable), not a fixed one.

What fails here reaches the caller wrapped by the SDKs (openai, litellm) that made the
request; `reply_error` finds it again in the exception's chain.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import httpx

from tau_adapters.bounded_http import BodyTooLarge, BoundedSyncTransport, BoundedTransport
from tau_adapters.protocol import AdapterProtocolError
from tau_bench.llm.config import DEFAULT_MAX_RESPONSE_BYTES
from tau_bench.llm.errors import LLMError, LLMMalformedReplyError, LLMReplyTooLargeError
from tau_bench.llm.response import checked_reply

LABEL = "model service"
"""How the size and decoding errors of `BoundedTransport` name the other side."""

_CHAIN_DEPTH = 8


def too_large(limit: int, url: str) -> BodyTooLarge:
    """The error of a body past `limit` bytes before decoding (as `BoundedTransport`'s)."""
    return BodyTooLarge(
        f"{LABEL}: the answer from {url} is larger than the {limit} bytes allowed"
        " (max_response_bytes)",
        limit,
        url,
    )


_Client = TypeVar("_Client", httpx.AsyncClient, httpx.Client)


def bound_client(
    client: httpx.AsyncClient, limit: int, *, check_chat: bool = False
) -> httpx.AsyncClient:
    """`client` with its transport and every proxy transport (mounted from the
    environment's `HTTPS_PROXY`...) wrapped in a `BoundedTransport` of `limit` bytes; with
    `check_chat`, chat-completion replies are also checked (`CheckedTransport`).

    Wrapping after construction keeps everything the client was built with (TLS, HTTP/2,
    pool limits, proxies); httpx ignores those arguments when given a transport."""
    return _wrap_transports(client, lambda inner: _bounded(inner, limit, check_chat))


def bound_to_calls(client: httpx.AsyncClient | httpx.Client) -> None:
    """Bound every transport of `client` (async or sync), per request, by the reply limit
    of the call that sends it (`call_limit`): for clients shared by calls of different
    limits."""
    if isinstance(client, httpx.Client):
        _wrap_transports(client, CallBoundedSyncTransport)
    else:
        _wrap_transports(client, CallBoundedTransport)


def _wrap_transports(client: _Client, wrap: Callable[[Any], Any]) -> _Client:
    client._transport = wrap(client._transport)
    client._mounts = {
        pattern: None if inner is None else wrap(inner) for pattern, inner in client._mounts.items()
    }
    return client


def _bounded(
    inner: httpx.AsyncBaseTransport, limit: int, check_chat: bool
) -> httpx.AsyncBaseTransport:
    bounded = BoundedTransport(limit, label=LABEL, inner=inner)
    return CheckedTransport(bounded) if check_chat else bounded


_call_limit: ContextVar[int] = ContextVar(
    "tau_bench_llm_max_response_bytes", default=DEFAULT_MAX_RESPONSE_BYTES
)


@contextmanager
def call_limit(limit: int) -> Iterator[None]:
    """Make `limit` bytes the bound of the replies read, within the block (a model call),
    by clients bounded per call (`bound_to_calls`)."""
    token = _call_limit.set(limit)
    try:
        yield
    finally:
        _call_limit.reset(token)


class CallBoundedTransport(httpx.AsyncBaseTransport):
    """A `BoundedTransport` whose limit is the one of the call sending each request."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        bounded = BoundedTransport(_call_limit.get(), label=LABEL, inner=self._inner)
        return await bounded.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class CallBoundedSyncTransport(httpx.BaseTransport):
    """`CallBoundedTransport` for a synchronous client: litellm reaches some providers
    only with one, in a thread of the calling coroutine's context (so `call_limit`)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        bounded = BoundedSyncTransport(_call_limit.get(), label=LABEL, inner=self._inner)
        return bounded.handle_request(request)

    def close(self) -> None:
        self._inner.close()


_HOOKED = "__tau_bounded__"


def bound_litellm_clients(module: Any) -> None:
    """Bound (`bound_to_calls`) every httpx client litellm builds for itself, from now
    on: those of its `AsyncHTTPHandler` and `HTTPHandler` (`create_client`: every provider
    litellm reaches with its own HTTP handler, through `get_async_httpx_client`, or with
    the synchronous one in a thread - Maritalk, Replicate, Hugging Face...) and of its
    OpenAI SDK route (`BaseOpenAILLM._get_async_http_client` and `_get_sync_http_client`:
    OpenAI with `EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=False`, Azure...). Idempotent.

    Why wrap these builders: litellm has no hook of its own for its clients' transport
    (`litellm.aclient_session` and `client_session` are one client each, for the OpenAI
    SDK route only). A caller's client (`client=`, `litellm.aclient_session`,
    `litellm.client_session`) is left as it was built. When litellm no longer has one of
    the builders, a warning says so (and the tests fail)."""
    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler
        from litellm.llms.openai.common_utils import BaseOpenAILLM
    except ImportError as exc:
        _unhooked(str(exc))
        return
    _hook(module, AsyncHTTPHandler, "create_client", static=False)
    _hook(module, HTTPHandler, "create_client", static=False)
    _hook(module, BaseOpenAILLM, "_get_async_http_client", static=True)
    _hook(module, BaseOpenAILLM, "_get_sync_http_client", static=True)


def _hook(module: Any, owner: type, name: str, *, static: bool) -> None:
    """Replace `owner.name` (a plain method, or a staticmethod) by a wrapper bounding the
    httpx client it returns."""
    found = inspect.getattr_static(owner, name, None)
    if static != isinstance(found, staticmethod):
        _unhooked(f"{owner.__name__}.{name} is {type(found).__name__}")
        return
    build = found.__func__ if isinstance(found, staticmethod) else found
    if not callable(build):
        _unhooked(f"{owner.__name__}.{name} is not callable")
        return
    if getattr(build, _HOOKED, False):
        return

    @functools.wraps(build)
    def bounded_build(*args: Any, **kwargs: Any) -> Any:
        client = build(*args, **kwargs)
        callers = (module.aclient_session, module.client_session)  # theirs, as built
        if isinstance(client, httpx.AsyncClient | httpx.Client) and client not in callers:
            bound_to_calls(client)
        return client

    setattr(bounded_build, _HOOKED, True)
    setattr(owner, name, staticmethod(bounded_build) if static else bounded_build)


def _unhooked(why: str) -> None:
    try:
        version = importlib.metadata.version("litellm")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    warnings.warn(
        f"litellm {version}: replies read by its own HTTP clients are not size-bounded"
        f" (max_response_bytes): {why}",
        RuntimeWarning,
        stacklevel=3,
    )


class CheckedTransport(httpx.AsyncBaseTransport):
    """OpenAI chat-completion replies (a successful, non-streamed POST to
    `.../chat/completions`) read whole (within the inner transport's bound) and put
    through `checked_reply`: a malformed one fails here with its `LLMMalformedReplyError`;
    one whose usage needed cleaning is passed on with the cleaned usage. Others untouched.

    Why: litellm reports a malformed reply as a connection error (retried) or lets an
    IndexError out, and refuses a good answer over a NaN token count; the direct path
    checks the same replies with the same function."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        if not _is_chat_reply(request, response):
            return response
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        parsed = parse_reply(body)
        checked = checked_reply(parsed)
        if checked is not parsed:  # its usage was cleaned
            body = json.dumps(checked).encode()
        headers = response.headers.copy()
        headers.pop("content-length", None)
        headers.pop("content-encoding", None)
        return httpx.Response(
            status_code=response.status_code,
            headers=headers,
            content=body,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _is_chat_reply(request: httpx.Request, response: httpx.Response) -> bool:
    content_type = response.headers.get("content-type", "")
    return (
        request.method == "POST"
        and request.url.path.rstrip("/").endswith("/chat/completions")
        and 200 <= response.status_code < 300
        and "event-stream" not in content_type
    )


def parse_reply(body: bytes) -> Any:
    """A reply body as JSON data; an `LLMMalformedReplyError` when it is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise LLMMalformedReplyError(f"malformed reply: not JSON ({reason})") from None


def reply_error(exc: BaseException) -> LLMError | None:
    """The typed error of a reply refused below an SDK (too large, undecodable, malformed),
    found in `exc`'s chain of causes; None when the failure was something else."""
    seen: BaseException | None = exc
    for _ in range(_CHAIN_DEPTH):
        if seen is None:
            return None
        if isinstance(seen, LLMError):
            return seen
        if isinstance(seen, BodyTooLarge):
            return LLMReplyTooLargeError(str(seen))
        if isinstance(seen, AdapterProtocolError):
            return LLMMalformedReplyError(str(seen))
        seen = seen.__cause__ or seen.__context__
    return None
