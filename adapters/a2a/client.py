"""One A2A connection per run: card discovery, auth, retries, deadlines, polling.

Built on a2a-sdk's `ClientFactory`/`BaseClient` (JSON-RPC or HTTP+JSON, as the card
offers). Every call runs under one total deadline (`Options.timeout`) covering the SSE
stream and any polling; only refusals the agent never acted on (connect errors, HTTP
429/503) are retried, with backoff and jitter, honouring Retry-After.

The SDK reads whole bodies (the card, a reply) and whole SSE lines into memory, so the
httpx client it is given has a bounded transport (`tau_adapters.bounded_http`): every response
body, a whole SSE stream included, stops with a protocol error as soon as it passes
`Options.max_response_bytes` (decompressed); the events of one message are capped at
`Options.max_events`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.client import Client
from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.types.a2a_pb2 import (
    AgentCard,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from adapters.a2a.errors import ResponseTooLarge, Retryable, map_error
from adapters.a2a.options import Options
from tau_adapters.bounded_http import BoundedTransport
from tau_adapters.protocol import AdapterConfigError, AdapterError

OPEN_STATES = frozenset(
    {TaskState.TASK_STATE_UNSPECIFIED, TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
)
POLL_INITIAL = 0.05
POLL_MAX = 2.0


def _bearer_like(scheme: Any) -> bool:
    if scheme.HasField("http_auth_security_scheme"):
        return bool(scheme.http_auth_security_scheme.scheme.lower() == "bearer")
    return scheme.HasField("oauth2_security_scheme") or scheme.HasField(
        "open_id_connect_security_scheme"
    )


def _header_key(scheme: Any) -> bool:
    return scheme.HasField("api_key_security_scheme") and (
        scheme.api_key_security_scheme.location.lower() == "header"
    )


class _Credentials(CredentialService):
    """Fills the card's bearer-like and header API-key schemes from the options."""

    def __init__(self, card: AgentCard, options: Options) -> None:
        self._card, self._options = card, options

    def credential_for(self, name: str) -> str | None:
        scheme = self._card.security_schemes.get(name)
        if scheme is None:
            return None
        if _bearer_like(scheme):
            return self._options.bearer_token
        if _header_key(scheme):
            return self._options.api_key
        return None

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        return self.credential_for(security_scheme_name)


BEARER_HINT = "tau run --a2a-token, tau a2a check --bearer-token"
API_KEY_HINT = "tau run --a2a-api-key, tau a2a check --api-key"


def check_auth(card: AgentCard, options: Options) -> None:
    """Fail fast when the card requires auth the options cannot provide."""
    requirements = list(card.security_requirements)
    if not requirements or not card.security_schemes:
        return
    creds = _Credentials(card, options)
    for requirement in requirements:
        if all(creds.credential_for(name) for name in requirement.schemes):
            return
    wanted = []
    for requirement in requirements:
        for name in requirement.schemes:
            scheme = card.security_schemes.get(name)
            if scheme is None:
                continue
            if _bearer_like(scheme):
                wanted.append(f"{name!r} (bearer: {BEARER_HINT})")
            elif _header_key(scheme):
                wanted.append(f"{name!r} (API key header: {API_KEY_HINT})")
            else:
                wanted.append(f"{name!r} ({scheme.WhichOneof('scheme') or 'unknown'}: unsupported)")
    raise AdapterConfigError(
        "a2a: the agent card requires authentication: " + ", ".join(wanted or ["unknown scheme"])
    )


@dataclass
class Exchange:
    """Everything one message produced: its events, attempts and retries."""

    events: list[StreamResponse] = field(default_factory=list)
    attempts: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)
    latency: float = 0.0
    polls: int = 0


def open_state(events: list[StreamResponse]) -> tuple[str | None, bool]:
    """(task id, whether the task is still submitted/working) after `events`."""
    task_id, state = None, None
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            task_id, state = event.task.id, event.task.status.state
        elif kind == "status_update":
            task_id, state = event.status_update.task_id, event.status_update.status.state
        elif kind == "message":
            return None, False
    return task_id, state is not None and state in OPEN_STATES


class Connection:
    """Shared by a provider's adapters: one HTTP client, one card, one A2A client."""

    def __init__(self, options: Options, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self.options = options
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._http: httpx.AsyncClient | None = None
        self._card: AgentCard | None = None
        self._client: Client | None = None

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.options.bearer_token, self.options.api_key) if s]

    async def card(self) -> AgentCard:
        """The agent card, fetched once (the first caller fetches, the others wait)."""
        async with self._lock:
            if self._card is None:
                self._http = self._http or httpx.AsyncClient(
                    timeout=httpx.Timeout(self.options.timeout, connect=10.0),
                    transport=BoundedTransport(
                        self.options.max_response_bytes,
                        label="a2a",
                        too_large_class=ResponseTooLarge,
                    ),
                )
                resolver = A2ACardResolver(
                    self._http, self.options.agent_url, agent_card_path=self.options.card_path
                )
                card = await self._call("agent card", lambda: resolver.get_agent_card(), retries=[])
                check_auth(card, self.options)
                self._card = card
            return self._card

    async def client(self) -> Client:
        card = await self.card()
        if self._client is None:
            config = ClientConfig(
                streaming=self.options.streaming is not False,
                httpx_client=self._http,
                supported_protocol_bindings=[
                    TransportProtocol.JSONRPC,
                    TransportProtocol.HTTP_JSON,
                ],
            )
            creds = _Credentials(card, self.options)
            try:
                self._client = ClientFactory(config).create(card, [AuthInterceptor(creds)])
            except ValueError as exc:
                bindings = sorted({i.protocol_binding for i in card.supported_interfaces})
                raise AdapterConfigError(
                    f"a2a: {exc} (the card offers {', '.join(bindings) or 'no interface'}; "
                    "this adapter speaks JSONRPC and HTTP+JSON)"
                ) from None
        return self._client

    def _context(self, extensions: list[str]) -> ClientCallContext:
        params = {HTTP_EXTENSION_HEADER: ",".join(extensions)} if extensions else {}
        return ClientCallContext(service_parameters=params, timeout=self.options.timeout)

    async def send(self, message: Message, extensions: list[str]) -> Exchange:
        """Send `message`; returns once its task is input-required/terminal (or a message)."""
        client = await self.client()
        exchange = Exchange()
        started = time.perf_counter()

        limit = self.options.max_events

        async def attempt() -> list[StreamResponse]:
            exchange.attempts += 1
            events: list[StreamResponse] = []
            request = SendMessageRequest(message=message)
            async for event in client.send_message(request, context=self._context(extensions)):
                if len(events) >= limit:
                    raise ResponseTooLarge(
                        f"a2a: the agent sent more than {limit} events for one message (max_events)"
                    )
                events.append(event)
            task_id, still_open = open_state(events)
            streamed = len(events)
            delay = POLL_INITIAL
            while still_open and task_id:
                await asyncio.sleep(delay)
                delay = min(delay * 2, POLL_MAX)
                task = await client.get_task(
                    GetTaskRequest(id=task_id, history_length=0),
                    context=self._context(extensions),
                )
                # A polled task is a whole snapshot: only the latest one is kept.
                del events[streamed:]
                events.append(StreamResponse(task=task))
                exchange.polls += 1
                task_id, still_open = open_state(events)
            return events

        exchange.events = await self._call("message", attempt, retries=exchange.retries)
        exchange.latency = time.perf_counter() - started
        return exchange

    async def probe_auth(self) -> None:
        """One cheap authenticated call: tasks/get of a task that does not exist."""
        client = await self.client()

        async def call() -> None:
            try:
                await client.get_task(
                    GetTaskRequest(id=f"tau-preflight-{uuid.uuid4()}"), context=self._context([])
                )
            except TaskNotFoundError:
                return

        await self._call("preflight tasks/get", call, retries=[])

    async def _call(
        self, what: str, fn: Callable[[], Any], *, retries: list[dict[str, Any]]
    ) -> Any:
        """Run `fn` under the total deadline; retry refusals with backoff (Retry-After wins)."""
        opts = self.options
        jitter = wait_random_exponential(multiplier=opts.retry_initial, max=opts.retry_max)

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            if isinstance(error, Retryable) and error.delay is not None:
                return error.delay
            return float(jitter(state))

        def record(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            server = error.delay if isinstance(error, Retryable) else None
            retries.append({"error": str(error), "delay": delay, "server_delay": server})

        async def once() -> Any:
            try:
                async with asyncio.timeout(opts.timeout):
                    return await fn()
            except TimeoutError:
                raise AdapterError(
                    f"a2a: {what}: no answer within the {opts.timeout:g} s deadline",
                    retryable=True,
                ) from None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = map_error(exc, what, self.secrets)
                if isinstance(error, Retryable) and (error.delay or 0) > opts.retry_max:
                    raise AdapterError(
                        f"{error} (the agent asked to retry after {error.delay:g} s, "
                        f"more than retry_max)",
                        retryable=True,
                    ) from None
                raise error from None

        retrying = AsyncRetrying(
            stop=stop_after_attempt(opts.max_attempts),
            wait=wait,
            retry=retry_if_exception_type(Retryable),
            before_sleep=record,
            sleep=self._sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                result = await once()
        return result

    async def aclose(self) -> None:
        http, self._http, self._client = self._http, None, None
        if http is not None:
            await http.aclose()
