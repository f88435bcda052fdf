"""Why an episode did not pass, in one line: the DB diff summary, the outputs not said,
or the error and its class.

The report's collapsed episode rows and `tau view`'s list both show it, so a reader sees
what went wrong in 150 episodes without opening one.
"""

from __future__ import annotations

from typing import Any

from tau_adapters.conversation import MAX_STEPS
from tau_bench.analysis.shown import masked
from tau_bench.records import EpisodeRecord, is_success

MAX_CHARS = 160


def outcome(record: EpisodeRecord) -> str:
    """`pass`, `fail` (scored, reward < 1) or `error` (not scored)."""
    if record.is_error:
        return "error"
    return "pass" if is_success(record.reward) else "fail"


def _info(record: EpisodeRecord, key: str) -> Any:
    info = record.reward_info or {}
    value = info.get(key)
    return value if value is not None else (info.get("info") or {}).get(key)


def db_diff_summary(diffs: list[dict[str, Any]], limit: int = 2) -> str:
    """`DB differs in 3 field(s): reservations/HATHAT.status, users/mia.payment, …`."""
    where = []
    for d in diffs[:limit]:
        place = "/".join(str(d.get(k)) for k in ("table", "record") if d.get(k) not in (None, ""))
        path = d.get("path")
        where.append(f"{place}.{path}" if path else f"{place} (whole record)")
    more = ", …" if len(diffs) > limit else ""
    return f"DB differs in {len(diffs)} field(s): {', '.join(where)}{more}"


def _clip(text: str, limit: int = MAX_CHARS) -> str:
    text = " ".join(masked(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_reason(record: EpisodeRecord) -> str:
    """The one-line reason (empty for a pass)."""
    if record.error and (record.is_error or not is_success(record.reward)):
        err = record.error
        kind = err.get("kind") or "error"
        cls = record.error_class
        head = f"{cls}: {kind}" if cls and cls != kind else str(kind)
        return _clip(f"{head} ({err.get('source', '?')}): {err.get('message', '')}")
    if outcome(record) == "pass":
        return ""
    parts = []
    diffs = _info(record, "db_diff") or []
    if diffs:
        parts.append(db_diff_summary(diffs))
    elif _info(record, "r_actions") == 0:
        parts.append("DB differs from the ground truth")
    outputs = _info(record, "outputs") or {}
    missing = [str(o) for o, found in outputs.items() if not found]
    if missing:
        parts.append("outputs not said: " + ", ".join(missing))
    if record.stop_reason == MAX_STEPS:
        parts.append("cut off at max steps")
    if not parts:
        parts.append(f"reward {record.reward}")
    return _clip("; ".join(parts))
