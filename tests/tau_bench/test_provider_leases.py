"""The provider limiter's leases (`tau_bench.runner.backends.limiter`) on a fake clock:
a holder that stops renewing loses its slots, one that renews keeps them, a release
only frees the holder's own lease, and an abandoned wait never takes a slot.

The same class runs as the Ray actor; tests/tau_bench/test_runner_workers.py kills a
real worker holding slots."""

from __future__ import annotations

import asyncio

from tau_bench.runner.backends.limiter import ProviderLimiter

TTL = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def limiter(limit: int = 2) -> tuple[ProviderLimiter, Clock]:
    clock = Clock()
    return ProviderLimiter({"openai": limit}, lease_ttl=TTL, clock=clock), clock


async def settle() -> None:
    """Let granted waiters resume (no time passes on the fake clock)."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_silent_holders_slots_come_back_and_go_to_the_queue() -> None:
    lim, clock = limiter(2)
    assert await lim.acquire("openai", "dead", "a") and await lim.acquire("openai", "dead", "b")
    waiting = asyncio.create_task(lim.acquire("openai", "live", "c"))
    await settle()
    assert not waiting.done() and lim.in_use() == {"openai": 2}
    clock.now = TTL - 1
    lim.renew("live")
    await settle()
    assert not waiting.done()  # "dead" is not expired yet
    clock.now = TTL + 1
    lim.renew("live")  # any call reaps: "dead" has not been heard from for TTL
    await settle()
    assert waiting.result() is True
    assert lim.in_use() == {"openai": 1}
    lim.release("dead", "a")  # late release of a reaped lease: no slot made up
    assert lim.in_use() == {"openai": 1}


async def test_renewing_keeps_the_leases_past_the_lease_time() -> None:
    lim, clock = limiter(1)
    assert await lim.acquire("openai", "w", "a")
    for step in range(1, 10):
        clock.now = step * TTL / 3
        assert lim.renew("w") == TTL
    assert lim.in_use() == {"openai": 1}
    lim.release("w", "a")
    assert lim.in_use() == {"openai": 0}


async def test_only_the_holder_releases_its_lease() -> None:
    lim, _ = limiter(1)
    assert await lim.acquire("openai", "w1", "a")
    lim.release("w2", "a")
    assert lim.in_use() == {"openai": 1}
    lim.release("w1", "a")
    lim.release("w1", "a")  # twice: still one slot back, not two
    assert lim.in_use() == {"openai": 0}
    assert await lim.acquire("openai", "w1", "b")
    assert lim.in_use() == {"openai": 1}


async def test_an_abandoned_wait_never_takes_a_slot() -> None:
    lim, _ = limiter(1)
    assert await lim.acquire("openai", "w", "a")
    queued = asyncio.create_task(lim.acquire("openai", "w", "b"))
    await settle()
    lim.release("w", "b")  # the caller gave up while queued
    await settle()
    assert queued.result() is False
    lim.release("w", "c")  # gave up before its acquire even arrived
    assert await lim.acquire("openai", "w", "c") is False
    lim.release("w", "a")
    assert lim.in_use() == {"openai": 0}


async def test_a_dead_holders_queued_request_is_dropped() -> None:
    lim, clock = limiter(1)
    assert await lim.acquire("openai", "live", "a")
    queued = asyncio.create_task(lim.acquire("openai", "dead", "b"))
    await settle()
    clock.now = TTL + 1
    lim.renew("live")
    await settle()
    assert queued.result() is False
    lim.release("live", "a")
    assert lim.in_use() == {"openai": 0}  # the freed slot did not go to the dead holder


async def test_slots_are_granted_in_order() -> None:
    lim, _ = limiter(1)
    assert await lim.acquire("openai", "w", "a")
    later = [asyncio.create_task(lim.acquire("openai", "w", lease)) for lease in "bcd"]
    await settle()
    granted = []
    for lease in "abc":
        lim.release("w", lease)
        await settle()
        granted.append([t.done() for t in later])
    assert granted == [[True, False, False], [True, True, False], [True, True, True]]
