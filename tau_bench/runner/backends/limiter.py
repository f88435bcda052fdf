"""`--provider-limit` on Ray: one limiter actor lends the cluster's slots out as leases.

Why leases, not a semaphore: a worker process can die (OOM, SIGKILL, a lost node) while
it holds a slot, and a semaphore would never get that slot back - the cluster-wide limit
would shrink for the rest of the run. Here every slot is a lease owned by a *holder*: one
worker process (a random id per process, so an actor Ray restarts is a new holder). A
holder stays alive by renewing - one `renew` call per worker every third of the lease
time, for all its leases at once. A holder not heard from for `LEASE_TTL` seconds is
dead: its leases go back to the pool and its queued requests are dropped. Expired
holders are reaped whenever the limiter is called (a live worker calls at least every
ttl/3), so the actor needs no timer of its own. The price of a wrong verdict (a worker
whose event loop stalled for a whole lease time) is a brief overshoot: its calls under
way finish without their slots.

Ownership: a release names its holder and lease; only the holder's own live lease is
released (a reaped lease is not released twice). A release that overtakes its acquire
(the caller stopped waiting) withdraws the request, so an abandoned wait never keeps a
slot.

Waits: a model call waits for its slot at most `wait_deadline` seconds (the run's turn
timeout: a call never outlives its turn), then fails as a timeout; a request in the
limiter's queue lives no longer than its holder; a renewal waits `RENEW_DEADLINE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from tau_bench.runner.backends.ray_futures import reply

LEASE_TTL = 30.0
"""Seconds a holder's leases outlive its last call: the longest a dead worker's slots
stay lost. Live workers renew every third of it."""

RENEW_DEADLINE = 10.0
"""Seconds a worker waits for one renewal's answer (the next one is tried anyway)."""

log = logging.getLogger(__name__)


class ProviderLimiter:
    """Cluster-wide caps on concurrent model calls per provider (an async Ray actor)."""

    def __init__(
        self,
        limits: dict[str, int],
        lease_ttl: float = LEASE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`lease_ttl` and `clock` are the lease time and its clock (tests shorten them)."""
        self._limits = dict(limits)
        self._free = dict(limits)
        self._ttl = lease_ttl
        self._clock = clock
        self._leases: dict[str, tuple[str, str]] = {}  # lease -> (provider, holder)
        self._held: dict[str, set[str]] = {}  # holder -> its leases
        self._queues: dict[str, dict[str, tuple[str, asyncio.Future[bool]]]] = {}
        self._expiry: dict[str, float] = {}  # holder -> when it is presumed dead
        self._withdrawn: dict[str, float] = {}  # lease released before its acquire came

    async def acquire(self, provider: str, holder: str, lease: str) -> bool:
        """Wait for a slot of `provider` as `lease` of `holder`: True once granted, False
        when the request was withdrawn first (released, or its holder expired)."""
        self._renew(holder)
        if self._withdrawn.pop(lease, None) is not None:
            return False
        queue = self._queues.setdefault(provider, {})
        if self._free[provider] > 0 and not queue:
            self._grant(provider, holder, lease)
            return True
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        queue[lease] = (holder, waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            queue.pop(lease, None)
            self._end(lease)
            raise

    def release(self, holder: str, lease: str) -> None:
        """Give `lease` back (only its holder can), or withdraw it while still queued."""
        self._renew(holder)
        owner = self._leases.get(lease)
        if owner is not None:
            if owner[1] == holder:
                self._end(lease)
            return
        for queue in self._queues.values():
            entry = queue.pop(lease, None)
            if entry is not None:
                _resolve(entry[1], False)
                return
        # Not granted, not queued: its acquire has not arrived yet - refuse it when it does.
        self._withdrawn[lease] = self._clock() + self._ttl

    def renew(self, holder: str) -> float:
        """Keep `holder`'s leases for another lease time; returns the lease time."""
        self._renew(holder)
        return self._ttl

    def in_use(self) -> dict[str, int]:
        """Slots leased now, per provider (tests, diagnostics)."""
        self._reap()
        return {p: self._limits[p] - self._free[p] for p in self._limits}

    def _renew(self, holder: str) -> None:
        self._reap()
        self._expiry[holder] = self._clock() + self._ttl

    def _reap(self) -> None:
        """Drop holders not heard from within the lease time: their leases come back."""
        now = self._clock()
        dead = {h for h, until in self._expiry.items() if until <= now}
        for holder in dead:
            del self._expiry[holder]
        if dead:
            for queue in self._queues.values():
                for lease, (holder, waiter) in list(queue.items()):
                    if holder in dead:
                        del queue[lease]
                        _resolve(waiter, False)
            for holder in dead:
                for lease in list(self._held.get(holder, ())):
                    self._end(lease)
        if self._withdrawn:
            self._withdrawn = {k: t for k, t in self._withdrawn.items() if t > now}

    def _grant(self, provider: str, holder: str, lease: str) -> None:
        self._leases[lease] = (provider, holder)
        self._held.setdefault(holder, set()).add(lease)
        self._free[provider] -= 1

    def _end(self, lease: str) -> None:
        """Return `lease`'s slot (if it is one) and hand it to the first live request."""
        owner = self._leases.pop(lease, None)
        if owner is None:
            return
        provider, holder = owner
        held = self._held.get(holder)
        if held is not None:
            held.discard(lease)
            if not held:
                del self._held[holder]
        self._free[provider] += 1
        queue = self._queues.get(provider, {})
        while self._free[provider] > 0 and queue:
            lease, (holder, waiter) = next(iter(queue.items()))
            del queue[lease]
            if not waiter.done():
                self._grant(provider, holder, lease)
                waiter.set_result(True)


def _resolve(waiter: asyncio.Future[bool], granted: bool) -> None:
    if not waiter.done():
        waiter.set_result(granted)


class RemoteSlots:
    """A worker's side of the limiter: its holder id, the renewal loop, and `hold`.

    `hold(provider)` is the slot factory for `tau_bench.llm.limits.set_remote_limiter`:
    each capped model call holds one lease for as long as it runs."""

    def __init__(self, limiter: Any, wait_deadline: float | None) -> None:
        """`wait_deadline`: seconds a `hold` waits for its slot (None: until one is free)."""
        self.limiter = limiter
        self.holder = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.wait_deadline = wait_deadline
        self._renewing: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def hold(self, provider: str) -> AsyncIterator[None]:
        """One lease of `provider` for the body; released however the body ends."""
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.create_task(self._renew_while_alive())
        lease = uuid.uuid4().hex
        try:
            ref = self.limiter.acquire.remote(provider, self.holder, lease)
            try:
                granted = await asyncio.wait_for(reply(ref), self.wait_deadline)
            except TimeoutError:
                raise TimeoutError(
                    f"no {provider!r} slot from the provider limiter within "
                    f"{self.wait_deadline:g} s (--provider-limit)"
                ) from None
            if not granted:
                raise TimeoutError(f"the provider limiter dropped this {provider!r} request")
            yield
        finally:
            self.limiter.release.remote(self.holder, lease)

    async def _renew_while_alive(self) -> None:
        """Renew this holder's leases every third of the lease time, until cancelled."""
        period = RENEW_DEADLINE
        while True:
            try:
                ref = self.limiter.renew.remote(self.holder)
                ttl = await asyncio.wait_for(reply(ref), RENEW_DEADLINE)
                period = float(ttl) / 3
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a slow or lost limiter: try again next period
                log.warning("provider limiter renewal failed: %s", exc)
            await asyncio.sleep(period)  # a period, not a synchronisation

    async def aclose(self) -> None:
        """Stop renewing (the worker is closing; its leases expire if any are left)."""
        task, self._renewing = self._renewing, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
