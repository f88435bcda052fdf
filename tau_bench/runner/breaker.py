"""The circuit breaker: stop scheduling episodes when the infrastructure is plainly down.

Why: once a key expires or an endpoint goes away mid-run, every remaining episode fails
the same way after its own retries (hours for a large run). After `threshold`
consecutive infrastructure failures *of one kind* (same source and error kind: e.g.
five `agent agent_unavailable` in a row), the runner takes no new episode, lets the
running ones finish (the Ray backend cancels them instead: `runner.distributed`), writes
the results and the CLI prints the resume command. Any episode that finishes or fails
differently resets the count, so scattered errors never stop a run. An agent's own
failure (`agent_failure`: a protocol error, scored 0) is its behaviour, not
infrastructure, and resets the count too.
"""

from __future__ import annotations

from typing import Any

from tau_bench.error_classes import AGENT_UNAVAILABLE, HARNESS, classify
from tau_bench.records import EpisodeRecord

DEFAULT_THRESHOLD = 5


def failure_kind(record: EpisodeRecord) -> str | None:
    """`source kind` of an infrastructure failure (harness or unavailable), else None."""
    error = record.error
    if error is None or classify(error) not in (HARNESS, AGENT_UNAVAILABLE):
        return None
    return f"{error.get('source') or '?'} {error.get('kind') or '?'}"


class CircuitBreaker:
    """Counts consecutive infrastructure failures of one kind; `threshold` 0 disables."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.threshold = max(0, threshold)
        self.kind: str | None = None
        self.count = 0
        self.tripped = False
        self.last_message = ""

    def observe(self, record: EpisodeRecord) -> bool:
        """Count `record`; True when the breaker trips (now or earlier). Once tripped
        it stays as it tripped: episodes that finish afterwards (in flight when it
        tripped) do not rewrite the reason."""
        if self.tripped:
            return True
        kind = failure_kind(record)
        if kind is None:
            self.kind, self.count = None, 0
        elif kind == self.kind:
            self.count += 1
        else:
            self.kind, self.count = kind, 1
        if kind is not None:
            self.last_message = " ".join(str((record.error or {}).get("message", "")).split())
        if self.threshold and self.count >= self.threshold:
            self.tripped = True
        return self.tripped

    def reason(self) -> str:
        """One line: why the run stopped (empty when it did not)."""
        if not self.tripped:
            return ""
        message = self.last_message[:300]
        return f"{self.count} consecutive '{self.kind}' failures" + (
            f" (last: {message})" if message else ""
        )

    def summary_section(self) -> dict[str, Any]:
        """`{"stopped_early": reason}` for the run summary when the breaker tripped."""
        return {"stopped_early": self.reason()} if self.tripped else {}
