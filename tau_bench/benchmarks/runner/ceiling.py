"""What this machine gives N CPU-bound Python processes against one.

The ceiling of any N-worker scaling figure: virtual cores that are hyperthreads, or
shared with other tenants, give N busy processes less than N times one busy process's
work. Measured with plain Python work of the runner's kind (encoding and decoding a
record-sized JSON document): one process alone, then N started together, each for
`seconds`, `rounds` times; the median ratio is the figure.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

ROUNDS = 3
SECONDS = 2.0
DEADLINE = 120.0  # seconds a round's processes get to start and report


def _document() -> dict[str, Any]:
    turn = {"role": "assistant", "content": "I found your reservation. " * 8, "turn": 3}
    call = {"name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}}
    return {"messages": [dict(turn, tool_calls=[call]) for _ in range(24)], "reward": 1.0}


def spin(seconds: float) -> float:
    """Units of work per second this process does for `seconds`."""
    text = json.dumps(_document())
    done = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            json.dumps(json.loads(text))
        done += 20
    return done / seconds


def _worker(seconds: float, ready: Any, start: Any, out: Any) -> None:
    ready.put(None)
    start.wait(DEADLINE)
    out.put(spin(seconds))


def together(processes: int, seconds: float) -> float:
    """Work per second of `processes` processes started at once (their sum)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # not fork: the caller may run Ray threads
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(seconds, ready, start, out), daemon=True)
        for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=DEADLINE)
        start.set()
        return sum(out.get(timeout=DEADLINE) for _ in procs)
    finally:
        for proc in procs:
            proc.join(timeout=DEADLINE)
            if proc.is_alive():
                proc.terminate()


def parallel_ceiling(
    processes: int, rounds: int = ROUNDS, seconds: float = SECONDS
) -> dict[str, Any]:
    """`processes` busy processes' work over one's: each round's ratio and the median."""
    ratios = []
    for _ in range(rounds):
        one = together(1, seconds)
        ratios.append(together(processes, seconds) / one)
    return {"processes": processes, "ratios": ratios, "median": statistics.median(ratios)}
