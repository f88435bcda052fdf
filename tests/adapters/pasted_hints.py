"""What the reference servers' hint tests share: a user's shell (the installed `tau` on
PATH, the data found, variables of the previous step removed) and a process's output
read line by line with a deadline (a thread fills a queue; no sleeps)."""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.conftest import DATA_DIR

BIN = Path(sys.executable).parent
TAU = str(BIN / "tau")


def user_env(drop: Iterable[str] = (), **extra: str) -> dict[str, str]:
    """This process's environment as a user's shell: no variable whose name starts with
    one of `drop`, `tau` first on PATH, the data found, then `extra`."""
    prefixes = tuple(drop)
    env = {k: v for k, v in os.environ.items() if not (prefixes and k.startswith(prefixes))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        TAU_BENCH_DATA=str(DATA_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    env.update(extra)
    return env


def stream_lines(stream: Any) -> queue.Queue[str]:
    """The stream's lines as they come ("" at its end), read by a daemon thread."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    return lines
