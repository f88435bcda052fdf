"""Where this process sends a model's calls, as one line for messages.

Why: a cluster's workers get their node's environment, not the driver's. An endpoint
setting (`OPENAI_BASE_URL`, `ANTHROPIC_API_BASE`, a Vertex location...), a proxy or an
OpenAI account exported in the driver's shell only sends the workers' calls elsewhere
than the driver's pre-flight went. A Ray driver compares its own line with each
worker's (`RayBackend.say_endpoints`). Passwords never show.
"""

from __future__ import annotations

import os
import urllib.request

from tau_adapters.redaction import redact_text
from tau_bench.llm.classify import provider_of
from tau_bench.llm.clients import openai_account_headers
from tau_bench.llm.config import LLMConfig
from tau_bench.llm.direct import base_url
from tau_bench.llm.direct_clients import proxy_for

__all__ = ["endpoint", "endpoint_settings"]

# Settings besides `<PROVIDER>_API_BASE` and `<PROVIDER>_BASE_URL` that move where
# litellm sends a provider's calls (its region, project or API version).
_MORE_SETTINGS: dict[str, tuple[str, ...]] = {
    "azure": ("AZURE_API_VERSION",),
    "vertex_ai": (
        *("VERTEXAI_API_BASE", "VERTEX_API_BASE", "VERTEXAI_PROJECT", "VERTEX_PROJECT"),
        *("VERTEXAI_LOCATION", "VERTEX_LOCATION"),
    ),
    "bedrock": (
        *("AWS_BEDROCK_RUNTIME_ENDPOINT", "AWS_REGION_NAME", "AWS_REGION"),
        "AWS_DEFAULT_REGION",
    ),
}


def endpoint(config: LLMConfig) -> str | None:
    """Where this process sends a call of `config`, with the proxy the environment names
    for it; for OpenAI-format models also the account billed (`openai_account_headers`).
    None when no provider is known."""
    provider = provider_of(config)
    if provider == "openai":
        return _openai(config)
    if not provider:
        return None
    return _other(config, provider)


def endpoint_settings(provider: str) -> list[tuple[str, str]]:
    """The settings of this process's environment that move `provider`'s endpoint, as
    (name, value), in a fixed order."""
    prefix = provider.upper()
    names = (f"{prefix}_API_BASE", f"{prefix}_BASE_URL", *_MORE_SETTINGS.get(provider, ()))
    return [(name, os.environ[name]) for name in names if os.environ.get(name)]


def _openai(config: LLMConfig) -> str:
    url = base_url(config)
    where = url + _through(proxy_for(url))
    account = openai_account_headers()
    if account:
        named = {"OpenAI-Organization": "organization", "OpenAI-Project": "project"}
        where += f" ({', '.join(f'{named[k]} {v}' for k, v in account.items())})"
    return redact_text(where)


def _other(config: LLMConfig, provider: str) -> str:
    """The config's `api_base` (it travels with a run), else litellm's endpoint for the
    provider as this environment's settings move it. Its host unknown, a proxy is named
    with the `NO_PROXY` that may exempt it."""
    if config.api_base:
        return redact_text(config.api_base + _through(proxy_for(config.api_base)))
    settings = endpoint_settings(provider)
    where = f"litellm's {provider} endpoint"
    if settings:
        where += f" ({', '.join(f'{name}={value}' for name, value in settings)})"
    url = next((value for _, value in settings if "://" in value), None)
    if url is not None:
        where += _through(proxy_for(url))
    else:
        proxies = urllib.request.getproxies()
        proxy = proxies.get("https") or proxies.get("all")
        if proxy:
            where += _through(proxy)
            if proxies.get("no"):
                where += f" unless NO_PROXY {proxies['no']} exempts it"
    return redact_text(where)


def _through(proxy: str | None) -> str:
    return f" through the proxy {proxy}" if proxy else ""
