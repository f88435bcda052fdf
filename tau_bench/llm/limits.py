"""Provider concurrency caps (`--provider-limit openai=20`): one semaphore per provider
and event loop, so concurrent episodes share one provider quota."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping

_limits: dict[str, int] = {}
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def set_provider_limits(limits: Mapping[str, int]) -> None:
    """Cap concurrent calls per provider (e.g. `{"openai": 20}`); others stay unlimited."""
    for name, value in limits.items():
        if int(value) < 1:
            raise ValueError(f"provider limit for {name!r} must be at least 1, got {value}")
    _limits.clear()
    _limits.update({name: int(value) for name, value in limits.items()})
    _semaphores.clear()


def provider_limits() -> dict[str, int]:
    """The caps in force."""
    return dict(_limits)


def semaphore(provider: str) -> asyncio.Semaphore | None:
    """The running loop's semaphore for `provider`; None when it is not capped."""
    limit = _limits.get(provider)
    if limit is None:
        return None
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    if provider not in per_loop:
        per_loop[provider] = asyncio.Semaphore(limit)
    return per_loop[provider]
