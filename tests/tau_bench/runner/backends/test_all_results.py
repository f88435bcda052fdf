"""`all_results`: the workers' replies awaited together, with a deadline, and nothing
left behind for asyncio to complain about when the wait is cancelled (Ctrl-C)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
from typing import Any

import pytest

from tau_bench.runner.backends.ray import all_results


def pending(n: int) -> list[concurrent.futures.Future[Any]]:
    """Futures as Ray hands them out (`ObjectRef.future()`), completed from elsewhere."""
    return [concurrent.futures.Future() for _ in range(n)]


async def test_results_come_back_in_order() -> None:
    sources = pending(3)
    waiting = asyncio.ensure_future(all_results([asyncio.wrap_future(f) for f in sources], 60))
    for i in (2, 0, 1):
        sources[i].set_result(i)
    assert await waiting == [0, 1, 2]


async def test_the_first_failure_is_raised_without_waiting_for_the_others() -> None:
    sources = pending(3)
    wrapped = [asyncio.wrap_future(f) for f in sources]
    waiting = asyncio.ensure_future(all_results(wrapped, 60))
    sources[1].set_exception(RuntimeError("worker 1 could not start"))
    with pytest.raises(RuntimeError, match="worker 1"):
        await waiting
    assert wrapped[0].cancelled() and wrapped[2].cancelled()


async def test_past_the_deadline_it_is_a_timeout_and_the_rest_are_cancelled() -> None:
    sources = pending(2)
    sources[0].set_result("placed")
    wrapped = [asyncio.wrap_future(f) for f in sources]
    with pytest.raises(TimeoutError):
        await all_results(wrapped, 0.01)
    assert wrapped[1].cancelled()


async def test_cancelled_it_leaves_nothing_for_asyncio_to_log() -> None:
    """What `wait_for(gather(...))` left: `_GatheringFuture exception was never
    retrieved` on stderr after Ctrl-C. Two failures are retrieved too."""
    complaints: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: complaints.append(context))
    sources = pending(3)
    waiting = asyncio.ensure_future(all_results([asyncio.wrap_future(f) for f in sources], 60))
    await asyncio.sleep(0)  # it is waiting
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    failing = pending(2)
    for f in failing:
        f.set_exception(RuntimeError("dead"))
    with pytest.raises(RuntimeError):
        await all_results([asyncio.wrap_future(f) for f in failing], 60)
    del waiting
    gc.collect()
    assert complaints == []
