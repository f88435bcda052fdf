"""Every attempt a resumed log holds, for what it cost.

Why: `results_log.read_log` keeps the last record per (task, trial), which is what the
results and scores need; but each resume appends a new attempt for every errored pair,
and the attempts that a later line replaced were paid for too. Without them the cost of
a run resumed twice forgot the first run's failed attempts. `replaced_attempts` reads
the log once more and returns those attempts (their spend only), so that the summary's
cost counts every attempt ever paid for, each once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tau_bench.json_decode import loads
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import log_lines, open_regular

SPEND_FIELDS = (
    "task_id",
    "trial",
    "reward",
    "error",
    "stop_reason",
    "turns",
    "agent_usage",
    "user_usage",
    "judge_usage",
    "cost",
    "agent_strategy",
    "model",
    "user_strategy",
    "user_model",
    "domain",
)
"""What a replaced attempt keeps: what the cost (`tau_bench.cost`, `metrics.summarize`)
reads, never the trajectory (a log of many failed attempts stays small in memory)."""


def replaced_attempts(path: Path) -> list[EpisodeRecord]:
    """The log's episode records that a later line for the same (task, trial) replaced,
    in log order, with their `SPEND_FIELDS` only. The last line per pair (what `read_log`
    keeps) is not among them, so the two together count each attempt once. Lines that
    `read_log` skips (not JSON, too long, not a record) are skipped too."""
    latest: dict[tuple[int | str, int], EpisodeRecord] = {}
    replaced: list[EpisodeRecord] = []
    for record in _episode_records(path):
        earlier = latest.get(record.key)
        if earlier is not None:
            replaced.append(earlier)
        latest[record.key] = record
    return replaced


def _episode_records(path: Path) -> Iterator[EpisodeRecord]:
    with open_regular(path) as fh:
        for line in log_lines(fh):
            record = None if line is None or not line.strip() else _spend_of(line)
            if record is not None:
                yield record


def _spend_of(line: bytes) -> EpisodeRecord | None:
    """The spend of an episode line, or None for any other line (header, resume note,
    a line `read_log` would skip)."""
    try:
        obj: Any = loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict) or obj.get("type") != "episode":
        return None
    try:
        return EpisodeRecord.from_dict({k: obj[k] for k in SPEND_FIELDS if k in obj})
    except TypeError:  # RecordError too: read_log skips such a line
        return None
