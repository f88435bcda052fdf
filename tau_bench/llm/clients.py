"""Shared httpx clients for litellm calls, per event loop, provider and api_base.

OpenAI (through litellm's HTTP handler), Anthropic and Gemini calls share small clients
sized to the load instead of litellm's default one (docs/performance.md, "Runner").
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any

from tau_bench.llm.runtime import litellm, openai_via_handler

SHARD_CALLS = 4
"""Concurrent calls one httpx client carries before its pool opens another client.

httpcore's connection pool scans all of a client's connections on every request and
response (once more per idle connection), so one client holding 200 connections spends
more CPU in that scan than in the request itself. Small clients, each call given the
least-loaded one, keep every scan short; connections stay alive and are reused (litellm's
default client keeps at most 20 idle, so above 20 concurrent calls it closes and reopens
a connection on nearly every request)."""

POOLED_PROVIDERS = frozenset({"openai", "anthropic", "gemini"})
"""Providers whose litellm handler takes an `AsyncHTTPHandler` as `client`."""


def _new_handler(timeout: float | None, limit: int, provider: str) -> Any:
    """litellm's async HTTP handler over an httpx client configured as litellm configures
    its own (TLS as `tls_settings`, user agent, no cookies, proxies from the environment), plus pool limits,
    its reply bodies bounded to `limit` bytes (`wire.bound_client`; OpenAI replies also
    checked). The handler's fresh client for a retried connection is bounded alike."""

    def client(**_: Any) -> Any:
        return _new_client(timeout, limit, check_chat=provider == "openai")

    litellm()  # configured before its first import
    from litellm.llms.custom_httpx import http_handler as hh

    handler = hh.AsyncHTTPHandler(timeout=timeout)
    handler.client = client()  # the documented setter: litellm will not close it
    # litellm's one-off client after a dropped connection, bounded too
    handler.create_client = client  # type: ignore[method-assign,assignment]
    return handler


def tls_settings() -> dict[str, Any]:
    """`verify` and `cert` for an httpx client, as litellm sets them for its own clients:
    `SSL_VERIFY` / `litellm.ssl_verify` (a CA bundle, or false), `SSL_CERT_FILE`,
    `SSL_CERTIFICATE` / `litellm.ssl_certificate` (a client certificate). The direct path
    uses them too, so both paths trust (and fail to trust) the same servers."""
    module = litellm()
    from litellm.llms.custom_httpx import http_handler as hh

    return {
        "verify": hh.get_ssl_configuration(),
        "cert": os.getenv("SSL_CERTIFICATE", module.ssl_certificate),
    }


def openai_account_headers() -> dict[str, str]:
    """`OpenAI-Organization` and `OpenAI-Project` for OpenAI-format calls: litellm's
    settings first (`litellm.organization` / `OPENAI_ORGANIZATION`, `litellm.project` /
    `OPENAI_PROJECT`), then the openai SDK's (`OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`).
    Both paths send them, so a key of several organizations or projects is billed to
    the same one whichever path a call takes (litellm's HTTP handler would send none)."""
    module = litellm()
    organization = (
        getattr(module, "organization", None)
        or os.environ.get("OPENAI_ORGANIZATION")
        or os.environ.get("OPENAI_ORG_ID")
    )
    project = (
        getattr(module, "project", None)
        or os.environ.get("OPENAI_PROJECT")
        or os.environ.get("OPENAI_PROJECT_ID")
    )
    headers = {}
    if organization:
        headers["OpenAI-Organization"] = str(organization)
    if project:
        headers["OpenAI-Project"] = str(project)
    return headers


def _new_client(timeout: float | None, limit: int, *, check_chat: bool) -> Any:
    import httpx
    from litellm.llms.custom_httpx import http_handler as hh

    from tau_bench.llm.wire import bound_client

    client = httpx.AsyncClient(
        timeout=timeout if timeout is not None else 600.0,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=2 * SHARD_CALLS),
        **tls_settings(),
        headers=hh.get_default_headers(),
        cookies=hh.blocked_cookie_jar(),
        follow_redirects=True,
        http2=hh.http2_enabled(),
    )
    return bound_client(client, limit, check_chat=check_chat)


class ClientPool:
    """The httpx clients of one provider, api_base and reply limit on one event loop."""

    def __init__(self, timeout: float | None, limit: int, provider: str) -> None:
        self.timeout, self.limit, self.provider = timeout, limit, provider
        self.handlers: list[Any] = []
        self.load: list[int] = []

    def acquire(self) -> tuple[int, Any]:
        """The least-loaded client and its index; a new one when every client is full."""
        best = min(range(len(self.load)), key=self.load.__getitem__, default=-1)
        if best < 0 or self.load[best] >= SHARD_CALLS:
            self.handlers.append(_new_handler(self.timeout, self.limit, self.provider))
            self.load.append(0)
            best = len(self.load) - 1
        self.load[best] += 1
        return best, self.handlers[best]

    def release(self, index: int) -> None:
        if index < len(self.load):  # the pool may have been closed meanwhile
            self.load[index] -= 1

    async def aclose(self) -> None:
        handlers, self.handlers, self.load = self.handlers, [], []
        for handler in handlers:
            await handler.client.aclose()


_pools: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str | None, int], ClientPool]
] = weakref.WeakKeyDictionary()


def client_pool(
    provider: str, api_base: str | None, timeout: float | None, limit: int
) -> ClientPool | None:
    """The running loop's pool for a provider, api_base and reply limit (bytes); None when
    litellm should use its own clients (a provider it cannot hand ours to, or the OpenAI
    SDK route; their replies are bounded by `wire.bound_litellm_clients`)."""
    if provider not in POOLED_PROVIDERS or (provider == "openai" and not openai_via_handler()):
        return None
    per_loop = _pools.setdefault(asyncio.get_running_loop(), {})
    key = (provider, api_base, limit)
    if key not in per_loop:
        per_loop[key] = ClientPool(timeout, limit, provider)
    return per_loop[key]


def client_counts() -> dict[str, int]:
    """httpx clients open per provider on the running event loop (tests, benchmarks)."""
    out: dict[str, int] = {}
    for (provider, _, _), pool in _pools.get(asyncio.get_running_loop(), {}).items():
        out[provider] = out.get(provider, 0) + len(pool.handlers)
    return out


async def aclose_litellm_clients() -> None:
    """Close the running event loop's pooled litellm clients (at the end of a run; optional:
    they are dropped with their loop anyway)."""
    for pool in _pools.pop(asyncio.get_running_loop(), {}).values():
        await pool.aclose()
