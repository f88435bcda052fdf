"""Episode records: one finished (task, trial) as the log stores it, and how one is made.

Kept apart from the files a run writes (`results`, `results_log`) so that reading
records needs no file machinery.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import orjson

from tau_adapters.redaction import mask_values
from tau_bench.error_classes import AGENT_FAILURE, HARNESS, classify

SUCCESS_TOLERANCE = 1e-6


class RecordError(TypeError, ValueError):
    """A record read from a file whose fields are not what every reader relies on; the
    message names the field (the reader adds the file and line).

    A TypeError too, as a record with a missing field always was (the dataclass refused
    it), so that `results_log.read_log` skips and counts such a line as it skips one that
    is not JSON, and its callers never see a new exception; the results readers
    (`tau_bench.analysis.loading`, the resume) then look for the line and refuse it."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finite(value: Any) -> bool:
    """A JSON number that is a real, finite value (not a bool, NaN, ±Infinity or 1e999)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


def _check_number(where: str, value: Any, *, optional: bool = True) -> None:
    if (value is None and optional) or _finite(value):
        return
    raise RecordError(f"{where}: expected a finite number, got {_shown(value)}")


def _check_count(where: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return
    raise RecordError(f"{where}: expected a whole number >= 0, got {_shown(value)}")


def _check_type(where: str, value: Any, kind: type, name: str) -> None:
    # A JSON true/false is a Python int: never taken for a number or a count.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RecordError(f"{where}: expected {name}, got {_shown(value)}")


def _check_dicts(where: str, value: Any, *, optional: bool = True) -> list[dict[str, Any]]:
    """`value`: a list of JSON objects (None too when `optional`); the objects."""
    if value is None and optional:
        return []
    _check_type(where, value, list, "a list of objects")
    for i, item in enumerate(value):
        _check_type(f"{where}[{i}]", item, dict, "an object")
    return list(value)


def _check_usage(where: str, usage: Mapping[str, Any]) -> None:
    for key in ("cost", "prompt_tokens", "completion_tokens", "calls"):
        value = usage.get(key)
        _check_number(f"{where}.{key}", value)
        if value is not None and value < 0:
            raise RecordError(f"{where}.{key}: expected a number >= 0, got {_shown(value)}")


def _check_verdict(where: str, info: Mapping[str, Any]) -> None:
    """What the readers take from a `reward_info` (and from its nested `info`)."""
    _check_number(f"{where}.reward", info.get("reward"))
    _check_dicts(f"{where}.actions", info.get("actions"))
    _check_dicts(f"{where}.db_diff", info.get("db_diff"))
    for key, kind, name in (("outputs", dict, "an object"), ("info", dict, "an object")):
        if info.get(key) is not None:
            _check_type(f"{where}.{key}", info[key], kind, name)
    nested = info.get("info")
    if isinstance(nested, dict):
        _check_dicts(f"{where}.info.actions", nested.get("actions"))
        _check_dicts(f"{where}.info.db_diff", nested.get("db_diff"))
        if nested.get("outputs") is not None:
            _check_type(f"{where}.info.outputs", nested["outputs"], dict, "an object")


def _check_messages(messages: list[Any]) -> None:
    for i, message in enumerate(_check_dicts("messages", messages, optional=False)):
        where = f"messages[{i}]"
        if message.get("role") is not None:
            _check_type(f"{where}.role", message["role"], str, "a string")
        for j, call in enumerate(_check_dicts(f"{where}.tool_calls", message.get("tool_calls"))):
            if call.get("function") is not None:
                _check_type(
                    f"{where}.tool_calls[{j}].function", call["function"], dict, "an object"
                )
        _check_dicts(f"{where}.tool_messages", message.get("tool_messages"))


def _check_reward(value: Any) -> None:
    if value is None:
        return
    if not _finite(value) or not 0.0 <= value <= 1.0:
        raise RecordError(f"reward: expected a number from 0 to 1 or null, got {_shown(value)}")


def check_trial(value: Any, max_trials: int | None = None) -> None:
    """`RecordError` unless `value` is a trial number: a whole number from 0, below
    `max_trials` when given (a run's trials are held in memory: see `MAX_TRIALS`)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RecordError(f"trial: expected a whole number >= 0, got {_shown(value)}")
    if max_trials is not None and value >= max_trials:
        raise RecordError(
            f"trial {value} exceeds the limit of {max_trials:,} trials (0-{max_trials - 1})"
        )


def _check_task_id(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        return
    if isinstance(value, str) and value.strip():
        return
    raise RecordError(f"task_id: expected an integer or DOMAIN/N, got {_shown(value)}")


_STRINGS = ("stop_reason", "agent_strategy", "user_strategy", "started_at", "domain")
_OPTIONAL_STRINGS = ("model", "user_model")
_COUNTS = ("steps", "user_turns", "dropped_tool_calls")
_OBJECTS = ("task", "agent_usage", "user_usage", "judge_usage", "hashes")
_OPTIONAL_OBJECTS = ("reward_info", "error", "cost")


def check_record_fields(data: Mapping[str, Any], max_trials: int | None = None) -> None:
    """`RecordError` naming the first field of a record (as `EpisodeRecord.from_dict`
    takes it) that is not of the type the readers rely on: a reward outside [0, 1] or not
    finite, a trial not below `max_trials` (when given), a trajectory that is not a list
    of objects..."""
    for name, value in data.items():
        if name in _STRINGS:
            _check_type(name, value, str, "a string")
        elif name in _OPTIONAL_STRINGS and value is not None:
            _check_type(name, value, str, "a string or null")
        elif name in _COUNTS:
            _check_count(name, value)
        elif name in _OBJECTS:
            _check_type(name, value, dict, "an object")
        elif name in _OPTIONAL_OBJECTS and value is not None:
            _check_type(name, value, dict, "an object or null")
            if name == "error":
                for key in ("kind", "source", "message", "class"):
                    if value.get(key) is not None:
                        _check_type(f"error.{key}", value[key], str, "a string or null")
    _check_task_id(data["task_id"])
    check_trial(data["trial"], max_trials)
    _check_reward(data["reward"])
    if "messages" in data:
        _check_messages(data["messages"])
    if "duration" in data:
        _check_number("duration", data["duration"], optional=False)
    if data.get("seed") is not None:
        _check_type("seed", data["seed"], int, "an integer or null")
    if "warnings" in data:
        _check_type("warnings", data["warnings"], list, "a list of strings")
        for i, warning in enumerate(data["warnings"]):
            _check_type(f"warnings[{i}]", warning, str, "a string")
    for i, turn in enumerate(_check_dicts("turns", data.get("turns", []), optional=False)):
        _check_number(f"turns[{i}].latency", turn.get("latency"))
    for name in ("agent_usage", "user_usage", "judge_usage"):
        if name in data:
            _check_usage(name, data[name])
    for key, value in (data.get("cost") or {}).items():
        _check_number(f"cost.{key}", value)
    if data.get("reward_info") is not None:
        _check_verdict("reward_info", data["reward_info"])
    task = data.get("task") or {}
    _check_dicts("task.actions", task.get("actions"))
    if task.get("outputs") is not None:
        _check_type("task.outputs", task["outputs"], list, "a list")


def is_success(reward: float | None) -> bool:
    """A reward of 1 (within float noise), as the original's pass^k counted it."""
    return reward is not None and abs(reward - 1.0) <= SUCCESS_TOLERANCE


@dataclass(repr=False)
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

    def __repr__(self) -> str:
        # Not the trajectory: lists of records get formatted in logs and by asyncio.
        error = self.error.get("kind") if self.error else None
        return (
            f"EpisodeRecord(task_id={self.task_id!r}, trial={self.trial}, "
            f"reward={self.reward!r}, stop_reason={self.stop_reason!r}, error={error!r})"
        )

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
    def from_dict(cls, data: dict[str, Any], max_trials: int | None = None) -> EpisodeRecord:
        """The record a log line holds, its fields checked (`check_record_fields`):
        `RecordError` (a ValueError) for one that is missing or not what readers rely on."""
        if not isinstance(data, dict):
            raise RecordError(f"expected a JSON object, got {_shown(data)}")
        known = cls.__dataclass_fields__
        values = {k: v for k, v in data.items() if k in known}
        missing = [name for name in ("task_id", "trial", "reward") if name not in values]
        if missing:
            raise RecordError(f"missing field(s): {', '.join(missing)}")
        check_record_fields(values, max_trials)
        if isinstance(values["reward"], int):
            values["reward"] = float(values["reward"])
        return cls(**values)

    @classmethod
    def from_own_line(cls, data: dict[str, Any]) -> EpisodeRecord:
        """The record a line this run's own worker just encoded (`encode_record` of a
        record made by `record_from_episode`), not checked again: the Ray driver decodes
        every record of a run, and the checks of `from_dict` (for files) would cost it
        ~40 µs each for nothing."""
        known = cls.__dataclass_fields__
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
    the agent provider declares: its tokens, API keys; and the API keys of the user
    simulator and NL judge, which a model may echo into a user turn or a judge's
    reasoning: `tau_bench.runner.types.config_secrets`) is masked everywhere in it, so
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
    `secrets` are masked as in `record_from_episode`. An exception that carries the
    episode it interrupted (`tau_bench.episode.ScoringError`: the judge failed after the
    conversation) keeps its trajectory, usage and the failed judge calls' usage
    (`_keep_partial`): the error is the cause's, the episode still unscored."""
    partial = getattr(exc, "partial_episode", None)
    cause = getattr(exc, "cause", exc) if partial is not None else exc
    source = getattr(exc, "source", source) if partial is not None else source
    detail = "".join(traceback.format_exception_only(type(cause), cause)).strip()
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
    if partial is not None:
        _keep_partial(record, partial, getattr(exc, "judge_usage", None))
    return masked(record, secrets)


def _keep_partial(record: EpisodeRecord, scored: Any, judge_usage: Any) -> None:
    """The error record of an episode whose conversation ran (a failed judge) keeps what
    was done and spent: the trajectory, agent and user usage, the final DB hashes and
    the failed judge calls' usage, so the cost counts them (the money was spent)."""
    result = scored.result
    record.messages = result.messages
    record.turns = [t.to_dict() for t in result.turns]
    record.steps = result.steps
    record.user_turns = result.user_turns
    record.agent_usage = result.agent_usage.to_dict()
    record.user_usage = result.user_usage.to_dict()
    record.dropped_tool_calls = result.dropped_tool_calls
    record.warnings = list(result.warnings)
    record.judge_usage = dict(judge_usage) if isinstance(judge_usage, Mapping) else {}
    record.hashes = final_hashes(scored.env)


def masked(record: EpisodeRecord, secrets: Iterable[str]) -> EpisodeRecord:
    """`record` with every occurrence of a secret masked in every string of it. A value
    that holds itself or nests deeper than `MAX_DEPTH` (an adapter's `extra`, `raw`) is
    cut there by a placeholder (`bounded`), so masking the rest cannot recurse forever."""
    values = [s for s in secrets if s]
    if not values:
        return record
    data = {f.name: getattr(record, f.name) for f in fields(record)}
    try:
        encoded = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError):
        # A cycle, nesting past orjson's limit (254), a key it cannot spell: walk a copy
        # bounded first. Otherwise the data is acyclic and shallow enough to walk as is.
        return EpisodeRecord(**mask_values(bounded(data), values))
    if not _may_hold(encoded, values):
        return record
    return EpisodeRecord(**mask_values(data, values))


MAX_DEPTH = 200
"""Deepest nesting `bounded` keeps: far beyond any record, far below Python's stack
(the same bound as the log writer's `results_log._json_ready`)."""

CYCLE = "<a value that contains itself>"
"""What `bounded` (and the log writer, `results_log._json_ready`) puts for a cycle."""

TOO_DEEP = f"<nested deeper than {MAX_DEPTH} levels>"
"""What `bounded` (and the log writer) puts for a value nested deeper than `MAX_DEPTH`."""


def bounded(value: Any, depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """A copy of a JSON-like value that any recursive walk can follow: a mapping, list
    or tuple that contains itself becomes `CYCLE`, one nested deeper than `MAX_DEPTH`
    becomes `TOO_DEEP` (mappings become dicts, tuples lists, as `mask_values` makes
    them); anything else is kept as it is."""
    if not isinstance(value, Mapping | list | tuple):
        return value
    if id(value) in path:
        return CYCLE
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    inner = path | {id(value)}
    if isinstance(value, Mapping):
        return {k: bounded(v, depth + 1, inner) for k, v in value.items()}
    return [bounded(v, depth + 1, inner) for v in value]


_JSON_ESCAPED = frozenset('"\\') | frozenset(map(chr, range(0x20)))
"""Characters JSON encoding writes escaped: a secret holding one is not found verbatim."""


def _may_hold(encoded: bytes, secrets: list[str]) -> bool:
    """Whether any secret may occur in the record `encoded` (by orjson). A run masks the
    API keys of its user and judge in every record, and most hold none: one JSON encoding
    (C speed) and a search per secret rule the record out ~5 times faster than walking it
    string by string (`mask_values`). When in doubt (a secret JSON escapes): True."""
    if any(c in _JSON_ESCAPED for s in secrets for c in s):
        return True
    return any(s.encode("utf-8", "surrogatepass") in encoded for s in secrets)
