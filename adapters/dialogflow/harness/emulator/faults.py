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


class FaultPlan:
    """A queue of faults; each matching call consumes the first applicable one."""

    def __init__(self) -> None:
        self._queue: deque[Fault] = deque()
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
        fault = Fault(status, retry_delay, frozenset(methods or SESSION_METHODS), message)
        self._queue.extend([fault] * count)

    def take(self, method: str) -> Fault | None:
        for i, fault in enumerate(self._queue):
            if fault.applies_to(method):
                del self._queue[i]
                self.served.append((method, fault.code.name))
                return fault
        return None

    def pending(self) -> int:
        return len(self._queue)

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
            self.inject(parse_code(name), n, retry_delay=seconds)


def parse_code(name: str) -> grpc.StatusCode:
    key = name.strip().upper()
    for code in grpc.StatusCode:
        if code.name == key:
            return code
    raise FaultSpecError(f"unknown status code {name!r} (e.g. unavailable, resource_exhausted)")
