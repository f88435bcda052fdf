"""The HTTP chatbot adapter: any bot a config file describes becomes an `AgentAdapter`.

`build(options)` reads the config named by `options["http_config"]` (or
`options["agent_options"]["http_config"]`; a path, or an already-parsed mapping) and
returns an `HttpProvider`: one shared `httpx.AsyncClient` per event loop, and (in
server-side-tools mode) a request for the harness's tool server. Each episode gets an
`HttpAdapter` (in `episode`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx

from adapters.http.config import BotConfig, ConfigError, LoadedConfig, RetryConfig
from adapters.http.config_load import load_config
from adapters.http.episode import HttpAdapter
from adapters.http.options import HttpOptions
from adapters.http.transport import BotRedactor, HttpTransport, Sleep
from tau_adapters.bounded_http import BoundedTransport
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AdapterTimeoutError,
    SessionContext,
    ToolServerRequest,
)
from tau_adapters.registry import AgentProvider


class HttpConfigError(AdapterConfigError):
    """A bad HTTP bot config (shown as one line by the CLI)."""


class HttpProvider:
    """Built once per run: the config and shared HTTP clients.

    In server-side-tools mode (`server_tools: {enabled: true}`) it asks the harness for a
    tool server (`tool_server`); each episode's session then carries its endpoint.
    """

    def __init__(self, loaded: LoadedConfig, *, sleep: Sleep | None = None) -> None:
        self.loaded = loaded
        self.config: BotConfig = loaded.config
        self.redactor = BotRedactor(loaded.secrets, max_chars=loaded.config.raw_max_chars)
        self._sleep = sleep
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        # Optional provider attributes (tau_adapters.registry): the config's `name:` names
        # the agent; the digest is of the config with secret values redacted.
        self.display_name: str | None = self.config.name
        redacted = self.redactor.value(self.config.model_dump(mode="json"))
        self.config_digest = hashlib.sha256(
            json.dumps(redacted, sort_keys=True, default=str).encode("utf-8")
        ).hexdigest()
        st = self.config.server_tools
        self.tool_server: ToolServerRequest | None = (
            ToolServerRequest(host=st.host, port=st.port, public_url=st.public_url, ttl=st.ttl)
            if st.enabled
            else None
        )

    def new_adapter(self) -> HttpAdapter:
        return HttpAdapter(self)

    @property
    def secrets(self) -> list[str]:
        """Every value to mask wherever it reappears (config secrets, tool tokens handed
        out so far): the runner masks them in the whole episode record, so a bot that
        echoes its token or an API key leaks it into no output."""
        return self.redactor.secrets

    async def preflight(self) -> None:
        """One cheap real call before the first episode, so a wrong URL or credential
        fails the run in seconds: the config's `health` request if it has one, else one
        `session.start` (and `session.end`), else a TCP connection to `base_url`'s host.
        Raises the adapter error the episodes would have met (AdapterAuthError on
        401/403, AdapterTimeoutError past the deadlines...), after `preflight_retry`'s
        few retries, on a client of its own."""
        checker = HttpProvider(for_checks(self.loaded), sleep=self._sleep)
        try:
            await checker._check()
        finally:
            await checker.aclose()

    async def _check(self) -> None:
        adapter = HttpAdapter(self)
        session = SessionContext(
            session_id=f"tau-preflight-{uuid.uuid4().hex[:12]}", domain="", tools=[]
        )
        if self.config.health is not None:
            adapter.prepare(session, tool_endpoint=False)
            await adapter._call(self.config.health)
        elif self.config.session.start is not None:
            await adapter.open(session, tool_endpoint=False)
            await adapter.close()
        else:
            await self._connect()

    async def _connect(self) -> None:
        url = httpx.URL(self.config.base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        timeout = self.config.timeouts.connect
        try:
            async with asyncio.timeout(timeout):
                _, writer = await asyncio.open_connection(url.host, port)
        except TimeoutError:
            raise AdapterTimeoutError(
                f"HTTP bot at {url.host}:{port} did not accept a connection within {timeout:g} s"
            ) from None
        except OSError as exc:
            raise AdapterError(
                f"cannot reach the HTTP bot at {url.host}:{port}: {exc.strerror or exc}",
                retryable=True,
            ) from None
        writer.close()
        await writer.wait_closed()

    def transport(self) -> HttpTransport:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            t = self.config.timeouts
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
                follow_redirects=False,
                # Bodies counted after decompression: a gzip bomb stops at the limit.
                transport=BoundedTransport(self.config.max_response_bytes, label="HTTP bot"),
            )
            self._clients[loop] = client
        return HttpTransport(client, self.config, self.redactor, sleep=self._sleep)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.items()), {}
        running = asyncio.get_running_loop()
        for loop, client in clients:
            if loop is running:
                await client.aclose()


def preflight_retry(retry: RetryConfig) -> RetryConfig:
    """Pre-flight's retry policy: two attempts and waits of a few seconds at most. With
    the episodes' policy (ten attempts, backoff to 30 s) a refused connection or a wrong
    port outlasts the runner's 30 s pre-flight deadline, which then reports only "no
    answer within 30 s" instead of the cause."""
    return retry.model_copy(
        update={
            "max_attempts": min(retry.max_attempts, 2),
            "backoff_max": min(retry.backoff_max, 2.0),
            "retry_after_max": min(retry.retry_after_max, 5.0),
        }
    )


def for_checks(loaded: LoadedConfig) -> LoadedConfig:
    """`loaded` with `preflight_retry`'s policy, for one-off checks (pre-flight, `tau http
    check --probe`): a bot that is down is reported in seconds, not after minutes of
    backoff."""
    config = loaded.config.model_copy(update={"retry": preflight_retry(loaded.config.retry)})
    return replace(loaded, config=config)


def _config_source(options: Mapping[str, Any]) -> Any:
    source = options.get("http_config")
    if not source:
        nested = options.get("agent_options")
        if isinstance(nested, Mapping):
            source = nested.get("http_config")
    return source


def build(options: Mapping[str, Any]) -> AgentProvider:
    """The `http` agent strategy: `options["http_config"]` names the bot's config."""
    source = _config_source(options)
    if not source:
        raise HttpConfigError(
            "the http agent needs a bot config: pass --http-config FILE "
            "(see `tau http init --preset NAME`)"
        )
    try:
        loaded = load_config(source)
    except ConfigError as exc:
        raise HttpConfigError(str(exc)) from None
    return HttpProvider(loaded)


build.options_model = HttpOptions  # type: ignore[attr-defined]
