"""`bounded`: a call past its deadline that swallows its cancellation is stopped by force
(its coroutine closed, its `finally` run) or, if it ignores that too, left detached in
`ABANDONED`; the caller gets its error either way and waits no longer."""

from __future__ import annotations

import asyncio

import pytest

from tau_adapters.protocol import AdapterTimeoutError
from tau_bench.runner.deadlines import ABANDONED, bounded


async def test_a_call_that_swallows_cancellation_is_closed_and_its_finally_runs() -> None:
    finished: list[str] = []

    async def swallows() -> None:
        try:
            while True:
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    pass
        finally:
            finished.append("finally")

    with pytest.raises(AdapterTimeoutError, match=r"late; it ignored cancellation for 0\.01 s"):
        await bounded(swallows(), 0.01, AdapterTimeoutError("late"), grace=0.01)
    assert finished == ["finally"]
    [task] = ABANDONED  # closed: it ends at its next step
    await asyncio.wait({task}, timeout=30)
    assert task.done() and not ABANDONED


async def test_a_call_that_ignores_being_closed_is_left_detached() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except BaseException:  # GeneratorExit too
                pass

    with pytest.raises(AdapterTimeoutError, match="ignored cancellation"):
        await bounded(stubborn(), 0.01, AdapterTimeoutError("late"), grace=0.01)
    [task] = ABANDONED
    release.set()  # let it end, so the test's loop can close
    await asyncio.wait({task}, timeout=30)
    assert task.done() and not ABANDONED


async def test_a_call_that_honours_cancellation_is_not_abandoned() -> None:
    with pytest.raises(AdapterTimeoutError, match=r"^late$"):
        await bounded(asyncio.Event().wait(), 0.01, AdapterTimeoutError("late"), grace=30)
    assert not ABANDONED


async def test_its_own_timeout_error_stays_its_own() -> None:
    async def own() -> None:
        raise TimeoutError("mine")

    with pytest.raises(TimeoutError, match="mine"):
        await bounded(own(), 30, AdapterTimeoutError("late"))
