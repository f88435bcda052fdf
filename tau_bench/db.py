"""Domain databases: one parsed copy per process, a copy-on-write view per episode.

A domain DB is a dict of tables, each a dict of records keyed by id. Loading and hashing
the whole DB is what made the original slow (hundreds of ms per reset and per hash), and
an episode touches only a handful of records. So:

* `BaseDB` holds the parsed tables once per process. It is never mutated.
* `EpisodeDB` is an episode's private view: reads fall through to the base; the first
  write access to a record (`Table.for_update`) deep-copies just that record into the
  episode's overlay. Memory per episode is the size of the records it changed.
* The hash (`tau_bench.hashing`) is the sha256 of one long text made of one piece per
  record, in sorted key order. The base keeps every record's piece and sha256 midstates
  every few records, so an episode's hash re-hashes only from the first record it changed,
  and reuses the pieces of the records it did not change. Bytes hashed are identical to
  the original's; only the work is not repeated.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from tau_bench.hashing import consistent_hash, copy_json, to_hashable

_CHECKPOINT_EVERY = 32  # tokens between stored sha256 midstates


def _piece(key: str, record: Any) -> str:
    return repr((key, to_hashable(record)))


def _tokens(table_names: list[str], pieces: Mapping[str, list[str]]) -> list[str]:
    """Split repr(to_hashable(db)) into tokens, one per record plus punctuation."""
    out = ["("]
    for i, name in enumerate(table_names):
        if i:
            out.append(", ")
        out.append("(" + repr(name) + ", (")
        table_pieces = pieces[name]
        for j, p in enumerate(table_pieces):
            if j:
                out.append(", ")
            out.append(p)
        if len(table_pieces) == 1:
            out.append(",")
        out.append("))")
    if len(table_names) == 1:
        out.append(",")
    out.append(")")
    return out


class BaseDB:
    """A domain's tables as loaded from disk; shared read-only by every episode."""

    def __init__(self, tables: dict[str, dict[str, Any]]) -> None:
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise TypeError(f"table {name!r} must be a JSON object keyed by id")
        self.tables = tables
        self._lock = threading.Lock()
        self._index: _HashIndex | None = None

    def episode(self) -> EpisodeDB:
        """A fresh, private, pristine view of this DB."""
        return EpisodeDB(self)

    @property
    def hash_index(self) -> _HashIndex:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = _HashIndex(self.tables)
        return self._index

    @property
    def data_hash(self) -> str:
        return self.hash_index.full_hash


class _HashIndex:
    """Per-record hash pieces, token positions and sha256 midstates of a BaseDB."""

    def __init__(self, tables: dict[str, dict[str, Any]]) -> None:
        self.table_names = sorted(tables)
        self.sorted_keys = {name: sorted(tables[name]) for name in self.table_names}
        self.pieces = {
            name: [_piece(k, tables[name][k]) for k in self.sorted_keys[name]]
            for name in self.table_names
        }
        self.tokens = _tokens(self.table_names, self.pieces)
        self.position: dict[tuple[str, str], int] = {}
        pos = 1
        for i, name in enumerate(self.table_names):
            pos += 1 if i == 0 else 2
            for j, k in enumerate(self.sorted_keys[name]):
                if j:
                    pos += 1
                self.position[(name, k)] = pos
                pos += 1
            if len(self.sorted_keys[name]) == 1:
                pos += 1
            pos += 1
        self.checkpoints: list[Any] = []
        h = hashlib.sha256()
        for i, tok in enumerate(self.tokens):
            if i % _CHECKPOINT_EVERY == 0:
                self.checkpoints.append(h.copy())
            h.update(tok.encode("utf-8"))
        self.full_hash = h.hexdigest()
        self._memo: dict[Any, str] = {}
        self._memo_lock = threading.Lock()

    def hash_with(self, overlay: Mapping[str, Mapping[str, Any]]) -> str:
        """Hash of the base with `overlay`'s records replacing or adding to its own."""
        changed = {name: recs for name, recs in overlay.items() if recs}
        if not changed:
            return self.full_hash
        if any(name not in self.sorted_keys for name in changed):
            raise KeyError(
                f"unknown table in overlay: {sorted(set(changed) - set(self.sorted_keys))}"
            )
        new_keys = {
            name: sorted(k for k in recs if (name, k) not in self.position)
            for name, recs in changed.items()
        }
        if not any(new_keys.values()):
            tokens = self.tokens.copy()
            first = len(tokens)
            replaced = []
            for name, recs in changed.items():
                for key, rec in recs.items():
                    pos = self.position[(name, key)]
                    tokens[pos] = _piece(key, rec)
                    replaced.append((pos, tokens[pos]))
                    first = min(first, pos)
        else:
            pieces: dict[str, list[str]] = {}
            for name in self.table_names:
                table_recs = changed.get(name)
                if not table_recs:
                    pieces[name] = self.pieces[name]
                    continue
                keys = list(self.sorted_keys[name])
                for k in new_keys.get(name, []):
                    bisect.insort(keys, k)
                base_pieces = dict(zip(self.sorted_keys[name], self.pieces[name], strict=True))
                pieces[name] = [
                    _piece(k, table_recs[k]) if k in table_recs else base_pieces[k] for k in keys
                ]
            tokens = _tokens(self.table_names, pieces)
            first = 0
            base = self.tokens
            limit = min(len(base), len(tokens))
            while first < limit and tokens[first] == base[first]:
                first += 1
            replaced = [
                (i, t)
                for i, t in enumerate(tokens[first:], start=first)
                if i >= len(base) or t != base[i]
            ]
        memo_key = (len(tokens), tuple(replaced))
        cached = self._memo.get(memo_key)
        if cached is not None:
            return cached
        cp = first // _CHECKPOINT_EVERY
        h = self.checkpoints[cp].copy()
        h.update("".join(tokens[cp * _CHECKPOINT_EVERY :]).encode("utf-8"))
        digest = h.hexdigest()
        with self._memo_lock:
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[memo_key] = digest
        return digest


class Table(Mapping[str, Any]):
    """One table of an episode: base records plus the episode's copied/new records.

    Plain reads (`table[key]`, `get`, iteration) return base objects, which tools must not
    mutate; use `for_update(key)` to get the episode's own copy before changing a record,
    and `put` to add or replace one. Iteration order is the base's file order, then new
    keys in insertion order, like the original's dicts.
    """

    __slots__ = ("_base", "_name", "_overlay")

    def __init__(self, name: str, base: dict[str, Any]) -> None:
        self._name = name
        self._base = base
        self._overlay: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        try:
            return self._overlay[key]
        except KeyError:
            return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._overlay or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        for k in self._overlay:
            if k not in self._base:
                yield k

    def __len__(self) -> int:
        return len(self._base) + sum(1 for k in self._overlay if k not in self._base)

    def for_update(self, key: str) -> Any:
        """The episode's private copy of record `key`, made on first write access."""
        try:
            return self._overlay[key]
        except KeyError:
            rec = copy_json(self._base[key])
            self._overlay[key] = rec
            return rec

    def put(self, key: str, record: Any) -> None:
        self._overlay[key] = record

    @property
    def changed(self) -> dict[str, Any]:
        return self._overlay


class EpisodeDB(Mapping[str, Table]):
    """An episode's private database: `db["users"]` is a copy-on-write `Table`."""

    def __init__(self, base: BaseDB) -> None:
        self.base = base
        self._tables = {name: Table(name, t) for name, t in base.tables.items()}

    def __getitem__(self, name: str) -> Table:
        return self._tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def overlay(self) -> dict[str, dict[str, Any]]:
        return {name: t.changed for name, t in self._tables.items()}

    def data_hash(self) -> str:
        """The original's hash of this episode's state, reusing the base's work."""
        return self.base.hash_index.hash_with(self.overlay())

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """A materialised plain-dict snapshot (shares unchanged records with the base)."""
        return {name: {k: t[k] for k in t} for name, t in self._tables.items()}

    def slow_hash(self) -> str:
        """Hash computed from scratch, the original's way; for tests and debugging."""
        return consistent_hash(self.to_dict())
