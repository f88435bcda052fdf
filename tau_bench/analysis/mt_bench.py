"""The MT-bench export: a folder of per-task chat JSONL files and one scores file.

The MT-bench fork's schema is a contract other orchestrators parse, so its two file
kinds hold exactly the fork's fields and nothing else. Layout, under
`<out>/<dataset>_<YYYYmmdd_HHMMSS>/` (`tau export --format mt-bench`; `<out>` defaults
to `./data`):

* `<model>_task<id>_trajectory.jsonl` — the conversation, one `{"role", "content"}` per
  line. An assistant message that called tools has the calls as its content, written
  `name({...json...})` (after its text, if any).
* `<model>_scores.jsonl` — one row per episode with exactly, in this order: `task-id`
  (`"task-1"`), `prompt` (the task's instruction), `result` (the agent's tool calls as
  `name({...json...})` joined by `,` with no space), `truth` (the ground-truth actions,
  same form), `score` (the reward; `null` for an errored episode, which was not scored),
  `duration` (seconds).
* `<model>_scores.extra.jsonl` — the sidecar: one row per scores row, same order, with
  what the contract has no room for: `task-id`, `trial`, `task` (the id as the run
  names it), `error` (null, or `{source, kind, message}`).

With several trials, trial 0 keeps the names above and trial k > 0 writes
`<model>_task<id>_trial<k>_trajectory.jsonl`; every trial has its own scores row.
A namespaced id (`retail/12`, multi-domain runs) is `retail-12` in file names and
`"task-retail-12"` in `task-id`.
`model` is sanitised for file names: every run of characters other than letters,
digits, `.`, `-` and `_` becomes `_` (`openai/gpt-4o` -> `openai_gpt-4o`). Names read from
a results file are untrusted, so every name part (model, dataset, task id) is also kept to
`MAX_NAME_CHARS`: a longer one is cut and ends in `-` and 8 hex digits of its SHA-256, so
that it stays the same from one export to the next and two long names stay apart. A write
that fails part way removes the new folder: there is never half an export.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_bench.analysis.shown import decode_arguments, masked
from tau_bench.records import EpisodeRecord
from tau_bench.task_ids import TaskId, file_part, sort_key
from tau_bench.tasks import RESPOND_ACTION

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Actions in `result` and `truth` are joined by a comma with no space (the contract).
SEPARATOR = ","
DEFAULT_OUT = "data"
MAX_NAME_CHARS = 80
"""Longest name part written (file systems allow 255 bytes for a whole file name)."""
_HASH_CHARS = 8


def bounded(part: str, original: str | None = None, limit: int = MAX_NAME_CHARS) -> str:
    """`part` (already safe for a file name) if it is at most `limit` characters, else
    its start, `-` and the first hex digits of the SHA-256 of `original` (default:
    `part`): short, stable from one call to the next, and distinct for distinct names."""
    if len(part) <= limit:
        return part
    digest = hashlib.sha256((original if original is not None else part).encode()).hexdigest()
    head = part[: limit - _HASH_CHARS - 1].rstrip("._-")
    return f"{head}-{digest[:_HASH_CHARS]}"


def safe_name(name: str, limit: int = MAX_NAME_CHARS) -> str:
    """`name` usable as a file-name part (see the module docstring), at most `limit`
    characters."""
    cleaned = _UNSAFE.sub("_", name).strip("._")
    return bounded(cleaned, name, limit) if cleaned else "model"


def task_part(task_id: TaskId) -> str:
    """The task id as it appears in file names (`retail-12`), at most `MAX_NAME_CHARS`."""
    return bounded(file_part(task_id), str(task_id))


def action_text(name: str, arguments: Any) -> str:
    """`name({...json...})`, secrets masked; string arguments (OpenAI's JSON text) are
    decoded first (with a bound: `shown.decode_arguments`), and written as they are when
    they do not decode."""
    value, ok = decode_arguments(arguments)
    if not ok:
        text = value if isinstance(value, str) else "<arguments nested too deep to write>"
        return masked(f"{name}({text})")
    return masked(f"{name}({json.dumps(value, ensure_ascii=False)})")


def _content(value: Any) -> str:
    """A message's text, secrets masked (results files from elsewhere were never masked)."""
    if isinstance(value, list):
        value = "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return "" if value is None else masked(str(value))


def _calls(message: dict[str, Any]) -> list[str]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        out.append(action_text(str(fn.get("name", "")), fn.get("arguments", {})))
    return out


def agent_actions(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The agent's tool calls in order, as `name({...})`."""
    return [c for m in messages if m.get("role") == "assistant" for c in _calls(m)]


def truth_actions(task: dict[str, Any]) -> list[str]:
    return [
        action_text(str(a.get("name", "")), a.get("kwargs", {}))
        for a in task.get("actions") or []
        if a.get("name") != RESPOND_ACTION
    ]


def chat_lines(messages: Iterable[dict[str, Any]]) -> list[dict[str, str]]:
    lines = []
    for m in messages:
        role = str(m.get("role", ""))
        content = _content(m.get("content"))
        calls = _calls(m) if role == "assistant" else []
        if calls:
            content = "\n".join([content, *calls]) if content else "\n".join(calls)
        lines.append({"role": role, "content": content})
    return lines


def mt_task_id(task_id: TaskId) -> str:
    """The scores file's `task-id`: `"task-1"` (`"task-retail-12"` for `retail/12`)."""
    return f"task-{file_part(task_id)}"


def score_row(record: EpisodeRecord) -> dict[str, Any]:
    """One `<model>_scores.jsonl` row: exactly the contract's keys, in its order."""
    task = record.task or {}
    return {
        "task-id": mt_task_id(record.task_id),
        "prompt": masked(str(task.get("instruction", ""))),
        "result": SEPARATOR.join(agent_actions(record.messages)),
        "truth": SEPARATOR.join(truth_actions(task)),
        "score": None if record.is_error else record.reward,
        "duration": record.duration,
    }


def extra_row(record: EpisodeRecord) -> dict[str, Any]:
    """The sidecar row of one episode: what the scores row may not carry."""
    error = None
    if record.error:
        error = {
            k: masked(v) if isinstance(v := record.error.get(k), str) else v
            for k in ("source", "kind", "message")
        }
    return {
        "task-id": mt_task_id(record.task_id),
        "trial": record.trial,
        "task": record.task_id,
        "error": error,
    }


def _jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def scores_text(records: Iterable[EpisodeRecord]) -> str:
    """The scores file's text for `records` (by task, then trial)."""
    return _jsonl(score_row(r) for r in _ordered(records))


def _ordered(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    return sorted(records, key=lambda r: (sort_key(r.task_id), r.trial))


def _fresh_dir(base: Path) -> Path:
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}_{n}")
    candidate.mkdir(parents=True)
    return candidate


def write_mt_bench(
    records: Iterable[EpisodeRecord],
    out_dir: str | Path,
    dataset: str,
    model: str,
    *,
    when: datetime | None = None,
) -> Path:
    """Write the export (see the module docstring); returns the new folder."""
    stamp = (when or datetime.now()).strftime("%Y%m%d_%H%M%S")
    name = safe_name(model)
    ordered = _ordered(records)
    folder = _fresh_dir(Path(out_dir) / f"{safe_name(dataset)}_{stamp}")
    try:
        _write_files(folder, name, ordered)
    except BaseException:  # a failed (or interrupted) export leaves no half folder
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def _write_files(folder: Path, name: str, ordered: list[EpisodeRecord]) -> None:
    for record in ordered:
        suffix = f"_trial{record.trial}" if record.trial else ""
        stem = f"{name}_task{task_part(record.task_id)}{suffix}"
        path, n = folder / f"{stem}_trajectory.jsonl", 1
        while path.exists():  # two ids with one file name (`a/1` and `a-1`): never overwrite
            n += 1
            path = folder / f"{stem}_{n}_trajectory.jsonl"
        _write(path, _jsonl(chat_lines(record.messages)))
    _write(folder / f"{name}_scores.jsonl", scores_text(ordered))
    _write(folder / f"{name}_scores.extra.jsonl", _jsonl(extra_row(r) for r in ordered))


def _write(path: Path, text: str) -> None:
    # A lone surrogate (a results file may hold `"\\ud800"`) cannot be UTF-8: it is
    # written as its JSON escape, which is where it always is (inside a JSON string).
    path.write_text(text, encoding="utf-8", errors="backslashreplace")
