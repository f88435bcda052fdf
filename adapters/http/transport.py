"""One configured HTTP call to the bot: render, send, retry, classify, record.

429/503 (configurable) are retried honouring Retry-After; connection errors and timeouts
are retried a bounded number of times; 401/403 fail at once (`AdapterAuthError`). Every
call yields an `Exchange`: the parsed reply for the mapping, and a redacted record (request
and response bodies, status, attempts, latency) for the trajectory.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from adapters.http.config import BotConfig, RequestSpec, RetryConfig
from adapters.http.sse import LineSplitter, as_document, read_events
from adapters.http.templates import render, render_string
from tau_adapters import jsonsafe
from tau_adapters.bounded_http import BodyTooLarge
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    AdapterTimeoutError,
)
from tau_adapters.redaction import Redactor, mask_encoded
from tau_adapters.retry_after import parse_retry_after

T = TypeVar("T")
# A JSON media type (`application/json`, `application/problem+json`...): a bot that
# answers one to a `stream: sse` request does not stream, whatever the config says.
_JSON_TYPE = re.compile(r"\s*application/([\w.+-]*\+)?json\s*(;|$)", re.IGNORECASE)
Sleep = Callable[[float], Awaitable[None]]
_QUOTE_LIMIT = 500


@dataclass
class Exchange:
    """A finished call: `document` is the unredacted reply the mapping reads."""

    method: str
    url: str
    status: int
    document: Any
    latency: float
    attempts: int
    record: dict[str, Any]


class _RetryableStatus(Exception):
    def __init__(self, status: int, retry_after: float | None, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after
        self.body = body


RetryPolicy = RetryConfig
"""The HTTP adapter's retry policy is its config file's `retry:` section (same name as the
Dialogflow adapter's and the LLM layer's)."""


async def call_with_retries(
    call: Callable[[], Awaitable[T]], policy: RetryPolicy, *, sleep: Sleep = asyncio.sleep
) -> T:
    """`await call()`, retrying the statuses the policy lists (honouring Retry-After, capped)
    and, when it says so, connection errors, with exponential backoff and jitter. The last
    exception is re-raised as is."""

    def retryable(exc: BaseException) -> bool:
        if isinstance(exc, _RetryableStatus):
            return True
        if isinstance(exc, httpx.LocalProtocolError):
            return False  # our request is not valid HTTP: sending it again cannot help
        return policy.connection_errors and isinstance(exc, httpx.TransportError)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _RetryableStatus) and exc.retry_after is not None:
            return min(exc.retry_after, policy.retry_after_max)
        base = min(policy.backoff_max, policy.backoff_initial * 2 ** (state.attempt_number - 1))
        return base * (0.5 + random.random() / 2)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        retry=retry_if_exception(retryable),
        wait=wait,
        sleep=sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity either returns or re-raises")


class HttpTransport:
    """Sends `RequestSpec`s for one bot config; shares the caller's `httpx.AsyncClient`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        config: BotConfig,
        redactor: Redactor,
        *,
        sleep: Sleep | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.redactor = redactor
        self._sleep: Sleep = sleep or asyncio.sleep

    # -- rendering -------------------------------------------------------------------

    def url_for(self, spec: RequestSpec, variables: Mapping[str, Any]) -> str:
        path = render_string(spec.path, variables, quote=lambda s: quote(s, safe=""))
        if path.startswith(("http://", "https://")):
            return path
        if path and not path.startswith("/"):
            path = "/" + path
        return self.config.base_url + path

    def _headers(self, spec: RequestSpec, variables: Mapping[str, Any]) -> dict[str, str]:
        headers = {**self.config.headers, **spec.headers}
        # Blanks at either end are not part of a header value (RFC 9110) and h11 refuses
        # to send them: a rendered `{{ message }}` ending in a space is sent trimmed.
        out = {k: render_string(v, variables).strip(" \t") for k, v in headers.items()}
        if spec.stream == "sse" and not any(k.lower() == "accept" for k in out):
            out["Accept"] = "text/event-stream"
        return out

    # -- the call --------------------------------------------------------------------

    async def call(self, spec: RequestSpec, variables: Mapping[str, Any]) -> Exchange:
        url = self.url_for(spec, variables)
        headers = self._headers(spec, variables)
        params = {k: v for k, v in (render(spec.query, variables) or {}).items() if v is not None}
        body = render(spec.body, variables) if spec.body is not None else None
        shown_url = self.redactor.text(url)
        attempts = 0
        started = time.perf_counter()

        async def once() -> tuple[int, Any, Any]:
            nonlocal attempts
            attempts += 1
            return await self._once(spec, url, shown_url, headers, params, body)

        deadline = self.config.timeouts.call
        try:
            async with asyncio.timeout(deadline):
                status, document, shown = await call_with_retries(
                    once, self.config.retry, sleep=self._sleep
                )
        except TimeoutError:
            raise AdapterTimeoutError(
                f"HTTP bot call {spec.method} {shown_url} did not finish within its "
                f"{deadline:g} s deadline (timeout.call) after {attempts} attempts"
            ) from None
        except _RetryableStatus as exc:
            raise AdapterError(
                f"HTTP bot answered {exc.status} to {spec.method} {shown_url} "
                f"{attempts} times; giving up",
                retryable=True,
            ) from None
        except httpx.TimeoutException as exc:
            raise AdapterTimeoutError(
                f"HTTP bot timed out ({type(exc).__name__}) on {spec.method} {shown_url} "
                f"after {attempts} attempts"
            ) from None
        except httpx.TransportError as exc:
            raise AdapterError(
                f"cannot reach the HTTP bot at {spec.method} {shown_url} after {attempts} "
                f"attempts: {type(exc).__name__}: {self._quote(str(exc))}",
                retryable=True,
            ) from None
        latency = time.perf_counter() - started
        record: dict[str, Any] = {
            "request": {
                "method": spec.method,
                "url": shown_url,
                "headers": self.redactor.headers(headers),
                "body": self.redactor.value(body),
            },
            "response": {"status": status, "body": self.redactor.value(shown)},
            "latency": latency,
            "attempts": attempts,
        }
        if params:
            record["request"]["query"] = self.redactor.value(params)
        return Exchange(spec.method, shown_url, status, document, latency, attempts, record)

    async def _once(
        self,
        spec: RequestSpec,
        url: str,
        shown_url: str,
        headers: dict[str, str],
        params: dict[str, Any],
        body: Any,
    ) -> tuple[int, Any, Any]:
        """One attempt, bounded as a whole by `timeout.total` (not retried: the bot may
        have acted on the request)."""
        total = self.config.timeouts.total
        try:
            async with asyncio.timeout(total):
                return await self._attempt(spec, url, shown_url, headers, params, body)
        except TimeoutError:
            raise AdapterTimeoutError(
                f"HTTP bot did not finish answering {spec.method} {shown_url} within "
                f"{total:g} s (timeout.total: a reply must be complete by then, however "
                "slowly its bytes or events arrive)"
            ) from None

    async def _attempt(
        self,
        spec: RequestSpec,
        url: str,
        shown_url: str,
        headers: dict[str, str],
        params: dict[str, Any],
        body: Any,
    ) -> tuple[int, Any, Any]:
        kwargs: dict[str, Any] = {"headers": headers}
        if params:
            kwargs["params"] = params
        if body is not None:
            kwargs["json"] = body
        try:
            request = self.client.build_request(spec.method, url, **kwargs)
            response = await self.client.send(request, stream=True)
        except BodyTooLarge:  # a declared Content-Length past the limit
            raise self._too_big(spec, shown_url) from None
        except (httpx.LocalProtocolError, UnicodeEncodeError) as exc:
            raise AdapterConfigError(
                f"the request {spec.method} {shown_url} cannot be sent as HTTP: "
                f"{type(exc).__name__}: {self._quote(str(exc))} (a header rendered from "
                "the config's templates holds a line break, control or non-ASCII character?)"
            ) from None
        try:
            status = response.status_code
            if 300 <= status < 400:
                self._redirect(spec, shown_url, response)
            if status >= 400 or spec.stream != "sse":
                content = await self._read_body(spec, shown_url, response)
                self._check_status(spec, shown_url, response, content)
                if spec.stream == "none":
                    return status, None, self._text(content)
                document = self._json(spec, shown_url, content)
                return status, document, document
            ctype = response.headers.get("content-type", "")
            if _JSON_TYPE.match(ctype):
                content = await self._read_body(spec, shown_url, response)
                raise AdapterProtocolError(
                    f"reply to {spec.method} {shown_url} is JSON ({self._quote(ctype)}), not "
                    "the event stream (text/event-stream) `stream: sse` expects (set `stream: "
                    f"json` if the bot answers whole replies): {self._quote(self._text(content))}"
                )
            sse = self.config.response.sse
            lines = self._limited_lines(spec, shown_url, response)
            try:
                events = await read_events(lines, done=sse.done)
                document = as_document(events, wrap=sse.wrap, group_by=sse.group_by, text=sse.text)
            except jsonsafe.JSONDepthError as exc:
                raise AdapterProtocolError(
                    f"an event from {spec.method} {shown_url} is not usable: {exc}"
                ) from None
            return status, document, document
        finally:
            await response.aclose()

    def _redirect(self, spec: RequestSpec, shown_url: str, response: httpx.Response) -> None:
        where = self._quote(response.headers.get("location", "(no Location header)"))
        raise AdapterProtocolError(
            f"HTTP bot answered a redirect: {response.status_code} {response.reason_phrase} "
            f"from {spec.method} {shown_url} to {where}; redirects are not followed (a POST "
            "would lose its body): set base_url to the final address"
        )

    def _too_big(self, spec: RequestSpec, shown_url: str) -> AdapterProtocolError:
        return AdapterProtocolError(
            f"reply to {spec.method} {shown_url} is larger than the "
            f"{self.config.max_response_bytes} bytes allowed (max_response_bytes)"
        )

    async def _read_body(
        self, spec: RequestSpec, shown_url: str, response: httpx.Response
    ) -> bytes:
        limit = self.config.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_big(spec, shown_url)
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise self._too_big(spec, shown_url)
                chunks.append(chunk)
        except BodyTooLarge:  # the client's bounded transport, counting decoded bytes
            raise self._too_big(spec, shown_url) from None
        return b"".join(chunks)

    async def _limited_lines(
        self, spec: RequestSpec, shown_url: str, response: httpx.Response
    ) -> AsyncIterator[str]:
        """The event stream's lines, its bytes counted as they arrive (not once a line is
        whole): a stream past `max_response_bytes` fails at that byte, even inside one
        endless line, which is therefore never held past the bound."""
        limit = self.config.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_big(spec, shown_url)
        decoder = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace")
        splitter = LineSplitter()
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise self._too_big(spec, shown_url)
                for line in splitter.feed(decoder.decode(chunk)):
                    yield line
        except BodyTooLarge:
            raise self._too_big(spec, shown_url) from None
        for line in splitter.feed(decoder.decode(b"", True), final=True):
            yield line

    def _check_status(
        self, spec: RequestSpec, shown_url: str, response: httpx.Response, content: bytes
    ) -> None:
        status = response.status_code
        if status < 400:
            return
        if status in (401, 403):
            raise AdapterAuthError(
                f"HTTP bot refused our credentials: {status} {response.reason_phrase} from "
                f"{spec.method} {shown_url} (check the Authorization/API-key headers and the "
                "environment variables they use)"
            )
        text = self._quote(self._text(content))
        if status in self.config.retry.statuses:
            raise _RetryableStatus(
                status, parse_retry_after(response.headers.get("retry-after")), text
            )
        if status >= 500:
            raise AdapterError(
                f"HTTP bot failed: {status} {response.reason_phrase} from {spec.method} "
                f"{shown_url}: {text}",
                retryable=True,
            )
        raise AdapterProtocolError(
            f"HTTP bot rejected the request: {status} {response.reason_phrase} from "
            f"{spec.method} {shown_url}: {text}"
        )

    @staticmethod
    def _text(content: bytes) -> str:
        """The body as text: undecodable bytes replaced, never raw binary."""
        return content.decode("utf-8", errors="replace")

    def _json(self, spec: RequestSpec, shown_url: str, content: bytes) -> Any:
        if not content.strip():
            return None
        try:
            return jsonsafe.loads(content)
        except jsonsafe.JSONDepthError as exc:
            raise AdapterProtocolError(
                f"reply to {spec.method} {shown_url} is not usable: {exc}"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise AdapterProtocolError(
                f"reply to {spec.method} {shown_url} is not JSON: "
                f"{self._quote(self._text(content))}"
            ) from None
        except ValueError:  # valid JSON Python will not read: a number of 4,301+ digits
            raise AdapterProtocolError(
                f"reply to {spec.method} {shown_url} is not usable: it holds a number of more "
                f"than {sys.get_int_max_str_digits():,} digits"
            ) from None

    def _quote(self, text: str) -> str:
        return quote_text(self.redactor, text)


class BotRedactor(Redactor):
    """The HTTP adapter's `Redactor`: a secret is masked in any spelling a bot may echo
    it in, JSON-escaped (`sekrit\\/tok`, `\\u0041`) or percent-encoded (`%2F`) as well
    as verbatim (`tau_adapters.redaction.mask_encoded`), in recorded bodies and URLs
    as in error messages."""

    def text(self, value: str) -> str:
        return mask_encoded(value, self.secrets)


def quote_text(redactor: Redactor, text: str) -> str:
    """Redacted (the secrets' JSON-escaped and percent-encoded spellings too), cut to a few
    hundred characters, control bytes escaped: safe to print."""
    masked = mask_encoded(text, redactor.secrets)
    return jsonsafe.printable(Redactor.truncate(masked, _QUOTE_LIMIT))


def quote_payload(redactor: Redactor, payload: Any) -> str:
    """A short, redacted rendering of a payload for an error message."""
    try:
        text = json.dumps(payload, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(payload)
    return quote_text(redactor, text)
