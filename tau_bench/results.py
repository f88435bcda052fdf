"""The files a run writes, and the writers of the derived ones.

* `<run-name>.jsonl` — the log: a header line (config, task-data hash) then one line
  per finished episode, appended and fsynced as episodes finish, so a killed run loses
  nothing. On resume the same file is appended to; the last line for a (task, trial)
  wins. This is the source of truth (`tau_bench.results_log`); the other two files are
  derived from it, by the writers here. Records themselves are `tau_bench.records`.
* `<run-name>.json` — the original τ-bench results format: a list of
  {task_id, reward, info, traj, trial}, scored episodes only (see `tau_bench_entry`).
* `<run-name>.summary.json` — `tau_bench.metrics.summarize` plus run metadata.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_bench.output_files import special_kind
from tau_bench.records import (
    EpisodeRecord,
    now_iso,
    record_from_episode,
    record_from_exception,
)
from tau_bench.results_log import ResultsLog, encode_record, strict_json

# Re-exported for `tau_bench.runner.core` (its imports predate the split).
__all__ = [
    "OUTPUT_WRITERS",
    "EpisodeRecord",
    "ResultsLog",
    "encode_record",
    "now_iso",
    "record_from_episode",
    "record_from_exception",
    "run_file_stem",
    "tau_bench_entry",
    "tau_bench_results",
    "write_json_atomic",
    "write_tau_bench",
]


def _source(record: EpisodeRecord) -> str:
    """The original's info["source"]: the last action's name (`user` for a reply)."""
    if record.stop_reason == "terminate_tool":
        for message in reversed(record.messages):
            if message.get("role") == "tool":
                return str(message.get("name", "tool"))
    return "user"


def tau_bench_entry(record: EpisodeRecord) -> dict[str, Any]:
    """One element of the original results list (the gpt-4o-airline.json shape).

    `info` keeps the original keys (task, source, user_cost, reward_info) — reward_info
    is richer: both results, both hashes and the DB diff — and adds agent_cost,
    stop_reason and `errors` (non-fatal problems such as a failed adapter close).
    """
    errors = list(record.warnings)
    if record.dropped_tool_calls:
        errors.append(
            f"{record.dropped_tool_calls} tool call(s) dropped by max_tool_calls_per_turn"
        )
    return {
        "task_id": record.task_id,
        "reward": record.reward if record.reward is not None else 0.0,
        "info": {
            "task": record.task,
            "source": _source(record),
            "user_cost": record.user_cost,
            "reward_info": record.reward_info,
            "agent_cost": record.agent_cost,
            "stop_reason": record.stop_reason,
            "errors": errors,
        },
        "traj": record.messages,
        "trial": record.trial,
    }


def tau_bench_results(records: Iterable[EpisodeRecord]) -> list[dict[str, Any]]:
    """Scored episodes in the original format; errored ones stay in the log only, so an
    analysis script averaging this list agrees with our summary."""
    return [tau_bench_entry(r) for r in records if not r.is_error]


def write_tau_bench(records: Iterable[EpisodeRecord], log_path: Path) -> Path:
    """`<run-name>.json` next to the log, in the original format."""
    path = log_path.with_suffix(".json")
    write_json_atomic(path, tau_bench_results(records))
    return path


# Writers of `<run-name>.json`-style files: name -> writer(records, log path) -> path.
# The τ-bench file is always written; `--output-format mt-bench` adds the MT-bench
# folder (`tau_bench.analysis.mt_bench`, which needs the dataset and model: see the runner).
OUTPUT_WRITERS: dict[str, Callable[[Iterable[EpisodeRecord], Path], Path]] = {
    "tau-bench": write_tau_bench,
}


def run_file_stem(
    *,
    agent_strategy: str,
    model: str | None,
    temperature: float,
    start_index: int,
    end_index: int,
    user_model: str,
    user_strategy: str,
    when: datetime | None = None,
) -> str:
    """The original's checkpoint name without `.json` (model names lose their prefix)."""
    stamp = (when or datetime.now()).strftime("%m%d%H%M%S")
    model_part = (model or "default").split("/")[-1]
    user_part = user_model.split("/")[-1]
    return (
        f"{agent_strategy}-{model_part}-{temperature}_range_{start_index}-{end_index}"
        f"_user-{user_part}-{user_strategy}_{stamp}"
    )


def _json_text(data: Any) -> str:
    """A list is written one element per line: readable, and json's C encoder (which
    `indent` disables) keeps a 500-episode results file well under a second."""
    if isinstance(data, list):
        items = ",\n".join(strict_json(x) for x in data)
        return f"[\n{items}\n]\n" if data else "[]\n"
    return strict_json(data, indent=2) + "\n"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and rename, so readers never see half a file.

    A write that fails (a full disk, `path` a folder, Ctrl-C) removes the temporary file
    it made and raises: nothing is left next to `path`. A `path` that exists but is not a
    regular file (a device, a pipe) is refused (OSError) rather than replaced."""
    kind = special_kind(path)
    if kind is not None:  # the rename would replace the device (`/dev/null`) itself
        raise OSError(errno.EINVAL, f"{kind}, not a regular file: not replaced", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    made = False
    try:
        # A lone surrogate (from a JSON `"\\ud800"` read back) has no UTF-8 form: it is
        # written as its JSON escape - always inside a JSON string, so the file stays JSON.
        with tmp.open("w", encoding="utf-8", errors="backslashreplace") as fh:
            made = True
            fh.write(_json_text(data))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
