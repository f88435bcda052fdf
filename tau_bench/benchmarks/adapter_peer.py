"""The peer of `tau bench adapters`: one adapter harness's local stand-in, in its own process.

`python -m tau_bench.benchmarks.adapter_peer NAME WORKDIR` serves the demo target `NAME`
(entry-point group `tau_adapters.demos`: the Dialogflow CX emulator, the reference HTTP
bot, ...), prints one JSON line (the adapter options, the environment variables the
stand-in set for its client, the strategy) and serves until its stdin closes. Running the
peer apart is what lets the benchmark charge the client process only with the adapter's
own CPU, never with the stand-in's.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tau_bench.demo import DEMOS_GROUP


def _target(name: str) -> object:
    from tau_adapters.registry import group_entry_points

    for ep in group_entry_points(DEMOS_GROUP):
        if ep.name == name:
            return ep.load()
    raise SystemExit(f"error: no adapter stand-in named {name!r} in {DEMOS_GROUP}")


async def _serve(name: str, workdir: Path) -> None:
    target = _target(name)
    before = dict(os.environ)
    async with target.serve(workdir) as options:  # type: ignore[attr-defined]
        env = {k: v for k, v in os.environ.items() if before.get(k) != v}
        line = {"options": options, "env": env, "strategy": target.strategy}  # type: ignore[attr-defined]
        print(json.dumps(line), flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the benchmark closes our stdin


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tau_bench.benchmarks.adapter_peer NAME WORKDIR", file=sys.stderr)
        return 2
    asyncio.run(_serve(argv[0], Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
