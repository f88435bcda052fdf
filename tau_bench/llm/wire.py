"""The bytes of a model reply: bounded in size, decoded within that bound, and checked.

Why: a model service (a gateway, a vLLM server, anything at `--api-base`) is not ours. A
reply of 50 MB, or a 500 KB gzip body that decodes to 500 MB, would otherwise be held in
memory in full (several times: bytes, text, JSON, records). Every httpx client the LLM
layer builds, on either path, sends its requests through `tau_adapters.bounded_http`'s
`BoundedTransport` (`bound_client`): at most `LLMConfig.max_response_bytes` bytes are
read off the wire and at most as many are decoded. On the litellm path, OpenAI
chat-completion replies are also checked before litellm parses them (`CheckedTransport`),
so both paths accept and refuse the same replies (`response.checked_reply`).

What fails here reaches the caller wrapped by the SDKs (openai, litellm) that made the
request; `reply_error` finds it again in the exception's chain.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tau_adapters.bounded_http import BodyTooLarge, BoundedTransport
from tau_adapters.protocol import AdapterProtocolError
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


def bound_client(
    client: httpx.AsyncClient, limit: int, *, check_chat: bool = False
) -> httpx.AsyncClient:
    """`client` with its transport and every proxy transport (mounted from the
    environment's `HTTPS_PROXY`...) wrapped in a `BoundedTransport` of `limit` bytes; with
    `check_chat`, chat-completion replies are also checked (`CheckedTransport`).

    Wrapping after construction keeps everything the client was built with (TLS, HTTP/2,
    pool limits, proxies); httpx ignores those arguments when given a transport."""
    client._transport = _bounded(client._transport, limit, check_chat)
    client._mounts = {
        pattern: None if inner is None else _bounded(inner, limit, check_chat)
        for pattern, inner in client._mounts.items()
    }
    return client


def _bounded(
    inner: httpx.AsyncBaseTransport, limit: int, check_chat: bool
) -> httpx.AsyncBaseTransport:
    bounded = BoundedTransport(limit, label=LABEL, inner=inner)
    return CheckedTransport(bounded) if check_chat else bounded


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
