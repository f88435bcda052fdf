"""`reply`: a Ray call's reply as a future the driver may cancel without touching Ray's
own (Ray Client then failed to set it: `InvalidStateError` tracebacks at Ctrl-C).
`all_results`: the workers' replies awaited together, with a deadline, and nothing
left behind for asyncio to complain about when the wait is cancelled (Ctrl-C)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import threading
from typing import Any

import pytest

from tau_bench.runner.backends.ray_futures import all_results, reply


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


class Ref:
    """An ObjectRef as `reply` uses it: `future()` is Ray's concurrent future, set by
    Ray's own thread when the reply comes."""

    def __init__(self) -> None:
        self.ray_side: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def future(self) -> concurrent.futures.Future[Any]:
        return self.ray_side


async def test_a_reply_comes_back_from_rays_thread() -> None:
    ok, failing = Ref(), Ref()
    mine = [reply(ok), reply(failing)]
    threading.Thread(target=ok.ray_side.set_result, args=(("lines", []),)).start()
    threading.Thread(target=failing.ray_side.set_exception, args=(OSError("gone"),)).start()
    assert await mine[0] == ("lines", [])
    with pytest.raises(OSError, match="gone"):
        await mine[1]


async def test_cancelling_a_reply_leaves_rays_future_to_ray() -> None:
    """`asyncio.wrap_future` cancelled Ray's future too; Ray Client's own setter then
    raised `InvalidStateError` on its thread when the reply or its shutdown came."""
    ref = Ref()
    mine = reply(ref)
    mine.cancel()
    await asyncio.sleep(0)
    assert not ref.ray_side.cancelled()
    ref.ray_side.set_exception(ConnectionError("the client shut down"))  # Ray's setter
    await asyncio.sleep(0)  # the reply is dropped: nobody waits for it
    assert mine.cancelled()


def test_a_reply_after_the_loop_closed_is_dropped() -> None:
    refs: list[Ref] = []

    async def ask() -> None:
        refs.append(Ref())
        reply(refs[0]).cancel()

    asyncio.run(ask())
    refs[0].ray_side.set_result("late")  # from Ray's thread, after the run ended: no error
