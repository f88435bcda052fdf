"""The fake OpenAI server in a child process: its CPU is not the measured process's.

Started and stopped by us, by pid; every wait (start-up, stats, stop) has a deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import select
import subprocess
import sys
from types import TracebackType

from tau_bench.fakes.openai_server import (
    HOST,
    START_DEADLINE,
    STOP_DEADLINE,
    Faults,
    load_responder,
    serve,
)

MODULE = "tau_bench.fakes"
"""What the child runs (`python -m`): the package's `__main__`."""


class OpenAIServerProcess:
    """`python -m tau_bench.fakes --responder module:function` as a child.

    `responder` names an importable reply function (a child process cannot take a
    closure). `base` is the server root, `base_url` the OpenAI base URL (`.../v1`).
    """

    def __init__(
        self,
        responder: str,
        *,
        latency: float = 0.0,
        faults: Faults | None = None,
        timeout: float = START_DEADLINE,
    ) -> None:
        argv = [sys.executable, "-m", MODULE, "--responder", responder, "--latency", str(latency)]
        if faults is not None and faults.rate > 0:
            argv += ["--fault-rate", str(faults.rate), "--fault-seed", str(faults.seed)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"fake OpenAI server did not start within {timeout}s ({line!r})")
        self.port = int(line.split()[1])
        self.base = f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.base}/v1"

    def cpu_seconds(self) -> float:
        """CPU seconds the server process has used so far."""
        import psutil

        times = psutil.Process(self.proc.pid).cpu_times()
        return float(times.user + times.system)

    def stats(self, timeout: float = 10.0) -> dict[str, int]:
        """Requests answered and connections accepted so far."""
        import httpx

        return dict(httpx.get(f"{self.base}/stats", timeout=timeout).json())

    def stop(self, timeout: float = STOP_DEADLINE) -> None:
        """Terminate the child (kill it if it does not exit in time); idempotent."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> OpenAIServerProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """The child's entry point: serve until terminated."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("--responder", required=True, help="module:function computing replies")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--fault-seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        respond = load_responder(args.responder)
        faults = Faults(rate=args.fault_rate, seed=args.fault_seed) if args.fault_rate else None
    except (ImportError, AttributeError, ValueError) as exc:
        parser.error(str(exc))
    try:
        asyncio.run(serve(respond, args.latency, faults))
    except KeyboardInterrupt:
        pass
    return 0
