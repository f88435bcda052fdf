"""Provider concurrency caps (`--provider-limit openai=20`): one semaphore per provider
and event loop, so concurrent episodes share one provider quota; on a Ray backend the
slots come from one limiter actor instead (`set_remote_limiter`), so the cap holds for
the whole cluster."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager

_limits: dict[str, int] = {}
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)
_remote: Callable[[str], AbstractAsyncContextManager[None]] | None = None


def set_remote_limiter(slots: Callable[[str], AbstractAsyncContextManager[None]] | None) -> None:
    """Take capped providers' slots from `slots(provider)` (a cluster-wide limiter)
    instead of this process's semaphores; None goes back to the local ones."""
    global _remote
    _remote = slots


def set_provider_limits(limits: Mapping[str, int]) -> None:
    """Cap concurrent calls per provider (e.g. `{"openai": 20}`); others stay unlimited.
    The caps are this process's: runs going on at once share them."""
    for name, value in limits.items():
        if int(value) < 1:
            raise ValueError(f"provider limit for {name!r} must be at least 1, got {value}")
    wanted = {name: int(value) for name, value in limits.items()}
    if wanted == _limits:  # a run beside another with the same caps (`tau eval`'s runs):
        return  # new semaphores would let each run's calls through on top of the other's
    _limits.clear()
    _limits.update(wanted)
    _semaphores.clear()


def provider_limits() -> dict[str, int]:
    """The caps in force."""
    return dict(_limits)


def semaphore(provider: str) -> AbstractAsyncContextManager[None] | asyncio.Semaphore | None:
    """The slot a call to `provider` holds: the running loop's semaphore, or the remote
    limiter's; None when the provider is not capped."""
    limit = _limits.get(provider)
    if limit is None:
        return None
    if _remote is not None:
        return _remote(provider)
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    if provider not in per_loop:
        per_loop[provider] = asyncio.Semaphore(limit)
    return per_loop[provider]
