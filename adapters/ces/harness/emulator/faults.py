"""Fault injection: make the next N calls of a method fail with a gRPC status.

`inject("unavailable", 2, retry_delay=0.01)` fails the next two calls (of any method, or
of `method=` only) with UNAVAILABLE carrying a RetryInfo of 10 ms. The CLI form is
`CODE[:COUNT][@RETRY_DELAY]`, e.g. `resource_exhausted:1@0.5`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc


class FaultSpecError(ValueError):
    pass


@dataclass
class Fault:
    code: grpc.StatusCode
    remaining: int
    message: str
    retry_delay: float | None = None
    method: str | None = None


@dataclass
class FaultPlan:
    queue: list[Fault] = field(default_factory=list)
    served: list[tuple[str, str]] = field(default_factory=list)

    def inject(
        self,
        code: str,
        count: int = 1,
        *,
        message: str | None = None,
        retry_delay: float | None = None,
        method: str | None = None,
    ) -> None:
        try:
            status = grpc.StatusCode[code.strip().upper()]
        except KeyError:
            raise FaultSpecError(f"unknown gRPC status {code!r}") from None
        if status == grpc.StatusCode.OK or count < 1:
            raise FaultSpecError("a fault needs a non-OK status and a positive count")
        text = message or f"injected {status.name}"
        self.queue.append(Fault(status, count, text, retry_delay, method))

    def load(self, spec: str) -> None:
        """Parse `CODE[:COUNT][@RETRY_DELAY]`."""
        head, _, delay = spec.partition("@")
        code, _, count = head.partition(":")
        try:
            self.inject(
                code,
                int(count) if count else 1,
                retry_delay=float(delay) if delay else None,
            )
        except ValueError as exc:
            raise FaultSpecError(f"bad fault spec {spec!r}: {exc}") from None

    def take(self, method: str) -> Fault | None:
        for fault in self.queue:
            if fault.method in (None, method):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self.queue.remove(fault)
                self.served.append((method, fault.code.name))
                return fault
        return None
