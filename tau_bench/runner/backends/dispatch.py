"""Which episode goes to which worker, and what a dead worker's episodes become.

The Ray driver's bookkeeping, kept free of Ray so that it can be tested alone: a queue
of (task, trial) keys, the keys each worker is running, a cap on episodes in flight
cluster-wide and per worker, and how often each worker and each episode has died.

A worker that dies hands its keys back: each goes to the front of the queue, unless it
has now been on `max_restarts + 1` dead workers, in which case it is given up with a
line for `errors` (the driver leaves it out of the log; `--resume` runs it). A worker
that died more than `max_restarts` times is not given work again (Ray restarts an actor
at most that often).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from tau_bench.runner.backends import Key, share


class Dispatch:
    """Keys for `workers` workers, at most `cap` in flight (each worker its share)."""

    def __init__(self, keys: Iterable[Key], workers: int, cap: int, max_restarts: int) -> None:
        self.queue: deque[Key] = deque(keys)
        self.cap = max(1, cap)
        self.per_worker = share(self.cap, workers)
        self.max_restarts = max_restarts
        # per worker, in the order handed out (a dict: ordered, O(1) removal)
        self.running: list[dict[Key, None]] = [{} for _ in range(workers)]
        self.deaths = [0] * workers
        self.attempts: dict[Key, int] = {}
        self.errors: list[str] = []

    @property
    def in_flight(self) -> int:
        return sum(len(keys) for keys in self.running)

    def live(self) -> list[int]:
        """Workers that may still be given work."""
        return [w for w, n in enumerate(self.deaths) if n <= self.max_restarts]

    def take(self, worker: int) -> list[Key]:
        """The keys to start on `worker` now (its share and the cluster cap allowing),
        marked as running there."""
        if self.deaths[worker] > self.max_restarts:
            return []
        room = min(self.per_worker - len(self.running[worker]), self.cap - self.in_flight)
        batch = [self.queue.popleft() for _ in range(min(room, len(self.queue)))]
        self.running[worker].update(dict.fromkeys(batch))
        return batch

    def busy(self, worker: int) -> bool:
        return bool(self.running[worker])

    def finished(self, worker: int, key: Key) -> bool:
        """`key` came back from `worker`; False when it was not running there (a
        duplicate, which the driver must not store)."""
        if key in self.running[worker]:
            del self.running[worker][key]
            return True
        return False

    def lost(self, worker: int, key: Key, reason: str) -> None:
        """`key` ended on a live worker without a record (a bug in the worker)."""
        if self.finished(worker, key):
            self.errors.append(
                f"episode {key[0]} trial {key[1]} ended without a record on worker "
                f"{worker} (--resume runs it): {reason[:200]}"
            )

    def died(self, worker: int, reason: str) -> None:
        """`worker` died: its keys go back to the queue (or are given up)."""
        self.deaths[worker] += 1
        keys, self.running[worker] = self.running[worker], {}
        again = []
        for key in keys:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if self.attempts[key] > self.max_restarts:
                times = "once" if self.attempts[key] == 1 else f"{self.attempts[key]} times"
                self.errors.append(
                    f"episode {key[0]} trial {key[1]} not run: its worker died {times} "
                    f"(--resume runs it): {reason[:200]}"
                )
            else:
                again.append(key)
        self.queue.extendleft(reversed(again))  # first handed out, first again

    def give_up_if_no_workers(self) -> None:
        """With no live worker left, every queued key is given up (one line each)."""
        if self.live():
            return
        while self.queue:
            key = self.queue.popleft()
            self.errors.append(
                f"episode {key[0]} trial {key[1]} not run: no worker left "
                f"(each died {self.max_restarts + 1} times; --resume runs it)"
            )
