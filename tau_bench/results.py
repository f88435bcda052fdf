"""Episode records and the files a run writes.

* `<run-name>.jsonl` — the log: a header line (config, task-data hash) then one line
  per finished episode, appended and fsynced as episodes finish, so a killed run loses
  nothing. On resume the same file is appended to; the last line for a (task, trial)
  wins. This is the source of truth; the other two files are derived from it.
* `<run-name>.json` — the original τ-bench results format: a list of
  {task_id, reward, info, traj, trial}, scored episodes only (see `tau_bench_entry`).
* `<run-name>.summary.json` — `tau_bench.metrics.summarize` plus run metadata.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_adapters.redaction import mask_values
from tau_bench.error_classes import AGENT_FAILURE, HARNESS, classify

LOG_FORMAT = "tau-adapters-run/1"
SUCCESS_TOLERANCE = 1e-6


def is_success(reward: float | None) -> bool:
    """A reward of 1 (within float noise), as the original's pass^k counted it."""
    return reward is not None and abs(reward - 1.0) <= SUCCESS_TOLERANCE


@dataclass
class EpisodeRecord:
    """One finished (task, trial): reward, trajectory, timings, usage, or the error."""

    task_id: int | str  # "retail/12" in multi-domain runs
    trial: int
    reward: float | None
    reward_info: dict[str, Any] | None = None
    task: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""
    steps: int = 0
    user_turns: int = 0
    agent_usage: dict[str, Any] = field(default_factory=dict)
    user_usage: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    error: dict[str, Any] | None = None
    agent_strategy: str = ""
    model: str | None = None
    user_strategy: str = ""
    user_model: str | None = None
    dropped_tool_calls: int = 0
    warnings: list[str] = field(default_factory=list)
    started_at: str = ""
    domain: str = ""
    seed: int | None = None
    judge_usage: dict[str, Any] = field(default_factory=dict)
    # agent / user / judge / platform / total USD, None = unknown (tau_bench.cost)
    cost: dict[str, Any] | None = None
    # the final DB hashes: {"agent": ..., "user": ...} (user: τ³ dual control, else None)
    hashes: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[int | str, int]:
        return (self.task_id, self.trial)

    @property
    def error_class(self) -> str | None:
        """harness / agent_failure / agent_unavailable (`tau_bench.error_classes`)."""
        return classify(self.error)

    @property
    def is_error(self) -> bool:
        """Errored and not scored: an agent failure has an error but is scored 0."""
        return self.error is not None and self.error_class != AGENT_FAILURE

    @property
    def agent_cost(self) -> float:
        return float(self.agent_usage.get("cost", 0.0) or 0.0)

    @property
    def user_cost(self) -> float:
        return float(self.user_usage.get("cost", 0.0) or 0.0)

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: the record is serialised right away, and asdict's deep
        # copy of a trajectory costs more than writing it.
        return {"type": "episode", **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def record_from_episode(
    scored: Any,
    task: Any,
    *,
    agent_strategy: str,
    model: str | None,
    user_strategy: str,
    user_model: str | None,
    started_at: str,
    domain: str = "",
    seed: int | None = None,
    secrets: Iterable[str] = (),
) -> EpisodeRecord:
    """The record of a `tau_bench.episode.ScoredEpisode`; every one of `secrets` (what
    the agent provider declares: its tokens, API keys) is masked everywhere in it, so
    no file written from records (log, τ-bench JSON, report, MT-bench) can leak one."""
    result = scored.result
    error = result.error.to_dict() if result.error is not None else None
    if error is not None:
        error["class"] = classify(error)
    failed = error is not None and error["class"] == AGENT_FAILURE  # the bot's doing: 0
    record = EpisodeRecord(
        task_id=scored.task_id,
        trial=scored.trial,
        reward=0.0 if failed else None if error else scored.reward_value,
        reward_info=scored.reward.to_dict() if scored.reward is not None else None,
        task=task.model_dump(),
        messages=result.messages,
        turns=[t.to_dict() for t in result.turns],
        stop_reason=result.stop_reason,
        steps=result.steps,
        user_turns=result.user_turns,
        agent_usage=result.agent_usage.to_dict(),
        user_usage=result.user_usage.to_dict(),
        duration=result.duration,
        error=error,
        agent_strategy=agent_strategy,
        model=model,
        user_strategy=user_strategy,
        user_model=user_model,
        dropped_tool_calls=result.dropped_tool_calls,
        warnings=list(result.warnings),
        started_at=started_at,
        domain=domain,
        seed=seed,
        judge_usage=dict(getattr(scored.reward, "judge_usage", None) or {}),
        hashes=final_hashes(scored.env),
    )
    return masked(record, secrets)


def final_hashes(env: Any) -> dict[str, Any]:
    """The episode's final agent-side and user-side DB hashes (None where there is none)."""
    out: dict[str, Any] = {}
    for key, method in (("agent", "data_hash"), ("user", "user_data_hash")):
        get = getattr(env, method, None)
        try:
            out[key] = get() if get is not None else None
        except Exception:  # a hash is evidence, never a reason to lose the record
            out[key] = None
    return out


def record_from_exception(
    task_id: int | str,
    trial: int,
    task: Any,
    exc: BaseException,
    *,
    source: str,
    duration: float,
    agent_strategy: str,
    model: str | None,
    user_strategy: str,
    user_model: str | None,
    started_at: str,
    domain: str = "",
    seed: int | None = None,
    secrets: Iterable[str] = (),
) -> EpisodeRecord:
    """An episode that failed outside the loop (building the adapter or user, scoring);
    `secrets` are masked as in `record_from_episode`."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    error = {
        "source": source,
        "kind": getattr(exc, "kind", type(exc).__name__),
        "message": str(exc) or detail,
        "retryable": bool(getattr(exc, "retryable", False)),
        "detail": detail,
    }
    # Outside the conversation (building the adapter or user, scoring): never the bot's
    # answer, so never scored; a transport failure building a hosted agent's session
    # is still "unavailable".
    error["class"] = classify(error)
    if error["class"] == AGENT_FAILURE:
        error["class"] = HARNESS
    record = EpisodeRecord(
        task_id=task_id,
        trial=trial,
        reward=None,
        task=task.model_dump(),
        stop_reason="error",
        duration=duration,
        error=error,
        agent_strategy=agent_strategy,
        model=model,
        user_strategy=user_strategy,
        user_model=user_model,
        started_at=started_at,
        domain=domain,
        seed=seed,
    )
    return masked(record, secrets)


def masked(record: EpisodeRecord, secrets: Iterable[str]) -> EpisodeRecord:
    """`record` with every occurrence of a secret masked in every string of it."""
    values = [s for s in secrets if s]
    if not values:
        return record
    data = {f.name: getattr(record, f.name) for f in fields(record)}
    return EpisodeRecord(**mask_values(data, values))


# -- the original τ-bench results format -------------------------------------------


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
        items = ",\n".join(json.dumps(x, ensure_ascii=False, default=str) for x in data)
        return f"[\n{items}\n]\n" if data else "[]\n"
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(_json_text(data))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# -- the append-only log -------------------------------------------------------------


class LogFileError(ValueError):
    """A results log that cannot be read or resumed."""


@dataclass
class LogContents:
    header: dict[str, Any]
    records: dict[tuple[int | str, int], EpisodeRecord]
    bad_lines: int = 0


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str) + "\n"


def read_log(path: Path) -> LogContents:
    """Header and latest record per (task, trial); an unreadable line (a run killed
    mid-write) is skipped and counted."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise LogFileError(f"cannot read results log {path}: {exc.strerror}") from None
    header: dict[str, Any] | None = None
    records: dict[tuple[int | str, int], EpisodeRecord] = {}
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            bad += 1
            continue
        if header is None:
            if not isinstance(obj, dict) or obj.get("type") != "header":
                break
            header = obj
            continue
        if isinstance(obj, dict) and obj.get("type") == "episode":
            try:
                record = EpisodeRecord.from_dict(obj)
            except TypeError:
                bad += 1
                continue
            records[record.key] = record
    if header is None or header.get("format") != LOG_FORMAT:
        raise LogFileError(f"{path} is not a tau run results log (no {LOG_FORMAT} header)")
    return LogContents(header=header, records=records, bad_lines=bad)


class ResultsLog:
    """Append-only JSONL with group commit: every line is fsynced before `aclose` returns.

    Episodes finishing together share one fsync (a write+fsync runs in a thread while
    the event loop keeps serving the other episodes).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("ab")
        self._pending: list[bytes] = []
        self._flusher: asyncio.Task[None] | None = None
        self._lock = threading.Lock()
        self.written = 0

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> ResultsLog:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("xb") as fh:
            fh.write(_dumps({"type": "header", "format": LOG_FORMAT, **header}).encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        return cls(path)

    @classmethod
    def reopen(cls, path: Path, note: dict[str, Any]) -> ResultsLog:
        """Reopen for appending: drop a partial last line, then note the resume."""
        with path.open("r+b") as fh:
            data = fh.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                fh.truncate(end)
        log = cls(path)
        log._write_now([_dumps({"type": "resume", **note}).encode("utf-8")])
        return log

    def _write_now(self, lines: list[bytes]) -> None:
        with self._lock:
            self._fh.write(b"".join(lines))
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def append(self, record: EpisodeRecord) -> None:
        """Queue a record; it is written and fsynced promptly in the background."""
        self._pending.append(_dumps(record.to_dict()).encode("utf-8"))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            await asyncio.to_thread(self._write_now, batch)
            self.written += len(batch)

    async def aclose(self) -> None:
        """Wait until everything queued is on disk, then close the file."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)
        if self._flusher is not None and self._flusher.done() and not self._flusher.cancelled():
            exc = self._flusher.exception()
            if exc is not None:
                raise exc
        if self._pending:
            self._write_now(self._pending)
            self.written += len(self._pending)
            self._pending = []
        self._fh.close()
