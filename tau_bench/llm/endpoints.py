"""Where this process sends a model's calls, as one line for messages.

Why: a cluster's workers get their node's environment, not the driver's. An endpoint
setting (`OPENAI_BASE_URL`, `ANTHROPIC_API_BASE`, a Vertex location...), a proxy or an
OpenAI account exported in the driver's shell only sends the workers' calls elsewhere
than the driver's pre-flight went. A Ray driver compares its own line with each
worker's (`RayBackend.say_endpoints`). Passwords never show.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import re
import urllib.request
from pathlib import Path

from tau_adapters.redaction import redact_text
from tau_bench.llm.classify import provider_of
from tau_bench.llm.clients import openai_account_headers
from tau_bench.llm.config import LLMConfig
from tau_bench.llm.direct import base_url
from tau_bench.llm.direct_clients import proxy_for

__all__ = ["endpoint", "endpoint_settings", "litellm_settings"]


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
    names: tuple[str, ...] = (f"{prefix}_API_BASE", f"{prefix}_BASE_URL")
    names += tuple(name for name in litellm_settings(provider) if name not in names)
    return [(name, os.environ[name]) for name in names if os.environ.get(name)]


# An environment setting's name that says where calls go: an endpoint, a host, a
# region, a project or an API version.
_SETTING_NAME = re.compile(
    r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_BASE|BASE_URL|URL|ENDPOINT|HOST"
    r"|REGION|REGION_NAME|LOCATION|PROJECT|API_VERSION)"
)
_QUOTED_SETTING = re.compile(rf"""["']({_SETTING_NAME.pattern})["']""")


def litellm_llms_dir() -> Path | None:
    """litellm's per-provider code (`litellm/llms/<provider>/`), found without
    importing litellm (seconds)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    llms = Path(next(iter(spec.submodule_search_locations))) / "llms"
    return llms if llms.is_dir() else None


# litellm's code shared by providers that reads a provider's settings in a branch of
# its own (`if custom_llm_provider == "vertex_ai": ...`).
_SHARED_CODE = ("main.py", "litellm_core_utils/get_llm_provider_logic.py")


@functools.cache
def litellm_settings(provider: str) -> tuple[str, ...]:
    """The endpoint settings the installed litellm names for `provider`, in name order:
    in its own code (`litellm/llms/<provider>/`) and in the shared code's branches for
    it. Read from the source, so a new litellm brings its own: `HF_API_BASE`,
    `FIREWORKS_API_BASE`, `WATSONX_URL`, `FRIENDLI_API_BASE`, Vertex AI's project and
    location, Bedrock's region, Azure's API version... Another provider's
    `<OTHER>_API_BASE` or `_BASE_URL` named there (a fallback to it) is that
    provider's and left out, unless the provider is a variant of it (`ai21_chat`'s
    `AI21_API_BASE`)."""
    llms = litellm_llms_dir()
    if llms is None or not re.fullmatch(r"[a-z0-9_]+", provider):
        return ()
    found = set(_shared_code_settings(llms.parent).get(provider, ()))
    home = llms / provider
    if home.is_dir():
        for source in sorted(home.rglob("*.py")):
            try:
                found.update(
                    _QUOTED_SETTING.findall(source.read_text(encoding="utf-8", errors="ignore"))
                )
            except OSError:
                continue
    others = {
        f"{entry.name.upper()}_{suffix}"
        for entry in llms.iterdir()
        if entry.is_dir() and entry.name != provider and not provider.startswith(entry.name + "_")
        for suffix in ("API_BASE", "BASE_URL")
    }
    return tuple(sorted(found - others))


@functools.cache
def _shared_code_settings(root: Path) -> dict[str, frozenset[str]]:
    """provider -> the setting names in the shared code's branches for it."""
    out: dict[str, set[str]] = {}
    for name in _SHARED_CODE:
        try:
            tree = ast.parse((root / name).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.If):
                continue
            providers = _providers_tested(node.test)
            if not providers:
                continue
            names = {
                c.value
                for statement in node.body
                for c in ast.walk(statement)
                if isinstance(c, ast.Constant)
                and isinstance(c.value, str)
                and _SETTING_NAME.fullmatch(c.value)
            }
            for provider in providers:
                out.setdefault(provider, set()).update(names)
    return {provider: frozenset(names) for provider, names in out.items()}


def _providers_tested(test: ast.expr) -> set[str]:
    """The providers `custom_llm_provider == "p"` or `... in ("p", "q")` names in `test`."""
    out: set[str] = set()
    for node in ast.walk(test):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], ast.Eq | ast.In):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(x, ast.Name) and x.id == "custom_llm_provider" for x in sides):
            continue
        for side in sides:
            values = side.elts if isinstance(side, ast.List | ast.Tuple | ast.Set) else [side]
            out.update(
                v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
    return out


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
