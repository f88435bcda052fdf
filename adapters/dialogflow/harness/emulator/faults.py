"""Fault injection: answer the next N calls with an error status, as a real service would.

Spec strings (CLI `--fail`, env `TAU_DF_EMULATOR_FAULTS`, comma-separated):
`CODE[:COUNT][@DELAY]`, e.g. `unavailable:2`, `resource_exhausted:1@0.5`, `internal`.
`DELAY` (seconds) is sent as a `google.rpc.RetryInfo` detail, which clients honour.
Faults hit the Sessions methods (DetectIntent and its streaming variants) unless
`inject(..., methods=...)` names others (`*` for every method).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import grpc

SESSION_METHODS = frozenset(
    {"DetectIntent", "ServerStreamingDetectIntent", "StreamingDetectIntent"}
)


MAX_RETRY_DELAY = 86400.0  # seconds a RetryInfo may ask for (finite: it is a Duration)


class FaultSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Fault:
    code: grpc.StatusCode
    retry_delay: float | None = None
    methods: frozenset[str] = SESSION_METHODS
    message: str = ""

    def applies_to(self, method: str) -> bool:
        return "*" in self.methods or method in self.methods

    @property
    def text(self) -> str:
        return self.message or f"injected fault: {self.code.name}"


@dataclass
class _Queued:
    fault: Fault
    remaining: int


class FaultPlan:
    """A queue of faults; each matching call consumes the first applicable one. A fault
    repeated COUNT times is one entry with a counter (any count costs the same memory)."""

    def __init__(self) -> None:
        self._queue: deque[_Queued] = deque()
        self.served: list[tuple[str, str]] = []

    def inject(
        self,
        code: grpc.StatusCode | str,
        count: int = 1,
        *,
        retry_delay: float | None = None,
        methods: frozenset[str] | set[str] | None = None,
        message: str = "",
    ) -> None:
        status = parse_code(code) if isinstance(code, str) else code
        if count < 0:
            raise FaultSpecError(f"fault count must be >= 0, got {count}")
        if count:
            fault = Fault(status, retry_delay, frozenset(methods or SESSION_METHODS), message)
            self._queue.append(_Queued(fault, count))

    def take(self, method: str) -> Fault | None:
        for i, entry in enumerate(self._queue):
            fault = entry.fault
            if fault.applies_to(method):
                entry.remaining -= 1
                if entry.remaining <= 0:
                    del self._queue[i]
                self.served.append((method, fault.code.name))
                return fault
        return None

    def pending(self) -> int:
        return sum(entry.remaining for entry in self._queue)

    def load(self, spec: str) -> None:
        """Add the faults of a spec string (see module doc)."""
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            head, _, delay = part.partition("@")
            name, _, count = head.partition(":")
            try:
                n = int(count) if count else 1
                seconds = float(delay) if delay else None
            except ValueError:
                raise FaultSpecError(f"bad fault spec {part!r} (CODE[:COUNT][@DELAY])") from None
            if n < 0 or (seconds is not None and not 0 <= seconds <= MAX_RETRY_DELAY):
                raise FaultSpecError(
                    f"bad fault spec {part!r}: COUNT must be >= 0 and DELAY "
                    f"0-{MAX_RETRY_DELAY:g} seconds"
                )
            self.inject(parse_code(name), n, retry_delay=seconds)


def parse_code(name: str) -> grpc.StatusCode:
    key = name.strip().upper()
    for code in grpc.StatusCode:
        if code.name == key:
            return code
    raise FaultSpecError(f"unknown status code {name!r} (e.g. unavailable, resource_exhausted)")
