"""Human-readable differences between a predicted and a gold DB (for failure reports).

Table DBs are compared only on the records either episode changed (both views share the
base); model DBs are compared on their dumps. Output lines look like
`reservations["4WQ150"].status: None != 'cancelled'` (predicted != gold).
"""

from __future__ import annotations

from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.tau3.store import db_dump

__all__ = ["db_diff"]

_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<absent>"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _walk(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}[{key!r}]", out, limit)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out, limit)
        return
    if a is _MISSING or b is _MISSING or type(a) is not type(b) or a != b:
        out.append(f"{path}: {_show(a)} != {_show(b)}")


def db_diff(predicted: Any, gold: Any, limit: int = 30) -> list[str]:
    """Lines `path: predicted != gold`, at most `limit`; empty if equal."""
    out: list[str] = []
    if predicted is None or gold is None:
        if (predicted is None) != (gold is None):
            out.append(f"DB: {type(predicted).__name__} != {type(gold).__name__}")
        return out
    if (
        isinstance(predicted, EpisodeDB)
        and isinstance(gold, EpisodeDB)
        and (predicted.base is gold.base)
    ):
        for name in predicted:
            p, g = predicted[name], gold[name]
            keys = list(p.changed) + [k for k in g.changed if k not in p.changed]
            for key in keys:
                _walk(p.get(key, _MISSING), g.get(key, _MISSING), f"{name}[{key!r}]", out, limit)
        return out
    if type(predicted) is not type(gold):
        out.append(f"DB: {type(predicted).__name__} != {type(gold).__name__}")
        return out
    _walk(db_dump(predicted), db_dump(gold), "", out, limit)
    return [line.lstrip(".") for line in out]
