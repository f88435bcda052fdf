"""Ray's replies as asyncio futures the driver can cancel, and awaiting several at once.

Why not `asyncio.wrap_future(ref.future())`: cancelling the asyncio side (Ctrl-C, a
deadline, the end of a run) cancels Ray's own future too, and Ray Client then fails to
set it when the reply, or its shutdown, comes: `Callback error: InvalidStateError` with
a traceback in the driver's log, or an uncaught exception in Ray's data thread printed
on stderr at Ctrl-C. Why not `wait_for(gather(...))`: cancelled, it leaves a gathering
future that asyncio logs as `exception was never retrieved` at exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from typing import Any


def reply(ref: Any) -> asyncio.Future[Any]:
    """A future of this loop holding the reply of the Ray call `ref` (an ObjectRef, or
    Ray Client's). Cancelling it leaves Ray's future alone; a reply that comes after
    is dropped, and one that comes after the loop closed is too."""
    loop = asyncio.get_running_loop()
    mine: asyncio.Future[Any] = loop.create_future()

    def settle(source: concurrent.futures.Future[Any]) -> None:
        if mine.done():  # cancelled meanwhile: nobody waits for it any more
            return
        if source.cancelled():
            mine.cancel()
        elif (exc := source.exception()) is not None:
            mine.set_exception(exc)
        else:
            mine.set_result(source.result())

    def arrived(source: concurrent.futures.Future[Any]) -> None:  # on Ray's thread
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, source)

    ref.future().add_done_callback(arrived)
    return mine


async def all_results(futures: list[asyncio.Future[Any]], seconds: float) -> list[Any]:
    """The futures' results in order; the first exception among them as soon as one
    fails; TimeoutError once `seconds` pass. Those still pending when it returns, raises
    or is cancelled are cancelled."""
    try:
        await asyncio.wait(futures, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
        failed = [f.exception() for f in futures if f.done() and not f.cancelled()]
        first = next((exc for exc in failed if exc is not None), None)
        if first is not None:  # every exception retrieved above: none is logged at exit
            raise first
        if not all(f.done() for f in futures):
            raise TimeoutError
        return [f.result() for f in futures]
    finally:
        for f in futures:
            f.cancel()
