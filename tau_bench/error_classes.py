"""The error taxonomy: whose failure an errored episode is, and therefore how it scores.

Three classes, recorded per episode (`error["class"]`) and shown in every table:

* `harness` - the user simulator's or judge's model failed, the adapter could not be
  built or configured, our disk, our bug. Says nothing about the agent: excluded from
  scores, re-run by `--resume`.
* `agent_failure` - the agent answered something its adapter cannot interpret (a
  protocol error), or its model ran out of context. That is the bot's behaviour:
  **scored 0**, like any failed episode, and not re-run.
* `agent_unavailable` - the agent could not be reached after every retry (timeouts,
  5xx, quota). Not the bot's answer, but not nothing either: excluded by default, and
  every table also shows the scores with these counted as failures (the two
  conventions, named), since τ³ itself is inconsistent here. Re-run by `--resume`.

The class is decided from the error's `source` (agent / user / judge / ...) and `kind`
(the adapter error's `kind`, or a Python exception's class name) when the record is
made, so old logs without a class are classified the same way when read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tau_bench.records import EpisodeRecord

HARNESS = "harness"
AGENT_FAILURE = "agent_failure"
AGENT_UNAVAILABLE = "agent_unavailable"
CLASSES = (HARNESS, AGENT_FAILURE, AGENT_UNAVAILABLE)
LABELS = {HARNESS: "harness", AGENT_FAILURE: "agent failure", AGENT_UNAVAILABLE: "unavailable"}

# The two ways to score unavailable episodes; the first is the default everywhere.
EXCLUDED = "unavailable excluded"
AS_FAILURES = "unavailable counted as failures"

# Adapter error kinds that are the agent's own behaviour.
_AGENT_BEHAVIOUR = frozenset({"protocol_error", "context_window_exceeded", "tool_protocol_error"})
# Adapter error kinds that are our setup, whichever side raised them.
_OUR_SETUP = frozenset({"config_error", "auth_error", "bad_request"})
# Words in an adapter error kind that mean the agent could not be reached in time.
_TRANSPORT_WORDS = ("timeout", "timed_out", "unavailable", "rate_limit", "deadline", "connection")
# Python exception names that mean "the network", when an adapter lets one escape.
_TRANSPORT_EXCEPTIONS = frozenset(
    {
        "TimeoutError",
        "ConnectionError",
        "ConnectionResetError",
        "ConnectionRefusedError",
        "ConnectTimeout",
        "ReadTimeout",
        "ConnectError",
        "RemoteProtocolError",
    }
)


def classify(error: Mapping[str, Any] | None) -> str | None:
    """The class of a recorded error (None for a finished episode).

    An explicit `error["class"]` wins. Otherwise: anything not raised by the agent
    (user simulator, judge, scoring, the episode plumbing) is `harness`; from the agent,
    a protocol error is `agent_failure`, a config/auth/bad-request error is `harness`,
    a transport kind (timeout, unavailable, rate limit, deadline, connection), a
    retryable adapter error or a transport exception is `agent_unavailable`, any
    other Python exception (a bug in an adapter) is `harness`, and any other typed,
    non-retryable adapter error is `agent_failure`.
    """
    if not error:
        return None
    explicit = error.get("class")
    if explicit in CLASSES:
        return str(explicit)
    if error.get("source") != "agent":
        return HARNESS
    kind = str(error.get("kind") or "")
    if kind in _AGENT_BEHAVIOUR:
        return AGENT_FAILURE
    if kind in _OUR_SETUP:
        return HARNESS
    if kind in _TRANSPORT_EXCEPTIONS or any(w in kind.lower() for w in _TRANSPORT_WORDS):
        return AGENT_UNAVAILABLE
    if not kind or kind[:1].isupper():  # a raw exception class name: a bug
        return HARNESS
    return AGENT_UNAVAILABLE if error.get("retryable") else AGENT_FAILURE


def record_class(record: EpisodeRecord) -> str | None:
    """The class of a record's error, or None when it finished."""
    return classify(record.error)


def counts(records: Iterable[EpisodeRecord]) -> dict[str, int]:
    """Errored episodes per class (every class present, 0 when none)."""
    found = Counter(c for r in records if (c := record_class(r)) is not None)
    return {c: found.get(c, 0) for c in CLASSES}


def counts_text(per_class: Mapping[str, int]) -> str:
    """`2 harness, 1 agent failure, 3 unavailable` (the zero ones left out), or `0`."""
    parts = [f"{n} {LABELS[c]}" for c in CLASSES if (n := per_class.get(c, 0))]
    return ", ".join(parts) if parts else "0"


def counts_short(per_class: Mapping[str, int]) -> str:
    """`0/1/1`: harness / agent failure / unavailable, for narrow table cells."""
    return "/".join(str(per_class.get(c, 0)) for c in CLASSES)


SHORT_LEGEND = "errors h/f/u: harness (excluded) / agent failure (scored 0) / agent unavailable"


def unavailable_as_failures(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """The records under the second convention: unavailable episodes scored 0."""
    out = []
    for r in records:
        if record_class(r) == AGENT_UNAVAILABLE:
            error = dict(r.error or {})
            error["class"] = AGENT_FAILURE  # scored as a failure under this convention
            out.append(replace(r, reward=0.0, error=error))
        else:
            out.append(r)
    return out


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Rows for a run summary table: errors per class, and the scores under the second
    convention when some episodes found the agent unavailable."""
    per_class = summary.get("error_classes") or {}
    rows = [("errors by class", counts_text(per_class))]
    alt = summary.get("unavailable_as_failures") or {}
    if per_class.get(AGENT_UNAVAILABLE) and alt:
        avg = alt.get("avg_reward")
        pass1 = (alt.get("pass_hat_k") or {}).get("1")
        rows.append(("scores below", EXCLUDED))
        rows.append(
            (
                "unavailable as failures",
                f"reward {'-' if avg is None else f'{avg:.4f}'}, "
                f"pass^1 {'-' if pass1 is None else f'{pass1:.4f}'}",
            )
        )
    return rows
