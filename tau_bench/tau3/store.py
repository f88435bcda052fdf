"""τ³ databases: the hash (spec §3), dumps, deep-merge updates, and per-episode copies.

Two flavours, both accepted everywhere a DB is (`db_hash`, `db_dump`, `db_merged`):

* `TableSource` → `EpisodeDB` (tau_bench.db): for the large dict-of-tables JSON DBs
  (airline 7 MB, retail 2.8 MB). The file is parsed and every record normalised through its
  pydantic record model ONCE per process (so records hold exactly `model_dump()`'s values:
  field order, defaults, lax coercions such as `100` → `100.0`). Each episode gets a
  copy-on-write view; tools call `table.for_update(key)` before changing a record. The
  hash is computed incrementally: per-record JSON pieces and sha256 midstates of the base
  are reused, so an episode re-hashes only from its first changed record.
* `PydanticSource` → a pydantic model instance: for small DBs (mock, telecom). Episodes get
  a deep copy of a model validated once per process.

hash(DB) = sha256(json.dumps(DB.model_dump(), sort_keys=True, default=str)) — with
`ensure_ascii`, default separators, shortest float repr; `default=str` renders dates and
datetimes with `str()`.
"""

from __future__ import annotations

import bisect
import datetime
import enum
import hashlib
import io
import json
import pickle
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_bench.data.errors import DataDirError
from tau_bench.data.files import damaged, read_json, read_toml
from tau_bench.db import BaseDB, EpisodeDB
from tau_bench.hashing import copy_json
from tau_bench.task_files import validation_summary
from tau_bench.tau3.data import PULL_HINT

__all__ = [
    "EpisodeDB",
    "PydanticSource",
    "TableSource",
    "db_dump",
    "db_hash",
    "db_merged",
    "deep_merge",
    "hash_json",
    "invalid_db",
    "load_structured",
    "seed_hash_keys",
]

_CHECKPOINT_EVERY = 32

RecordNormaliser = Callable[[str, Any], Any]
"""(table name, raw record) -> the record as the domain model would dump it."""


def hash_json(value: Any) -> str:
    """The original's hash of an already-dumped value."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_structured(path: Path) -> Any:
    """Read a data file by extension, as the original's loader does (json, toml); a
    missing, unreadable or damaged file is a `DataDirError` naming it."""
    if path.suffix == ".toml":
        return read_toml(path, PULL_HINT)
    return read_json(path, PULL_HINT)


def invalid_db(path: Path, exc: ValidationError, where: str = "") -> DataDirError:
    """The `DataDirError` for a DB file whose content its model refuses."""
    return damaged(
        path, f"does not hold a valid database ({where}{validation_summary(exc)})", PULL_HINT
    )


def deep_merge(target: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Merge `update` into `target` in place: dicts key by key, anything else replaced."""
    for key, value in update.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            deep_merge(current, value)
        else:
            target[key] = copy_json(value)
    return target


def _piece(key: str, record: Any) -> str:
    return json.dumps(key) + ": " + json.dumps(record, sort_keys=True, default=str)


class _JsonHashIndex:
    """Per-record JSON pieces and sha256 midstates of a `TableBaseDB`."""

    def __init__(self, tables: dict[str, dict[str, Any]]) -> None:
        self.table_names = sorted(tables)
        self.sorted_keys = {n: sorted(tables[n]) for n in self.table_names}
        self.pieces = {
            n: {k: _piece(k, tables[n][k]) for k in self.sorted_keys[n]} for n in self.table_names
        }
        self.tokens = self._tokens(self.sorted_keys, self.pieces)
        self.checkpoints: list[Any] = []
        h = hashlib.sha256()
        for i, tok in enumerate(self.tokens):
            if i % _CHECKPOINT_EVERY == 0:
                self.checkpoints.append(h.copy())
            h.update(tok.encode("utf-8"))
        self.full_hash = h.hexdigest()
        self._memo: dict[Any, str] = {}
        self._lock = threading.Lock()

    def _tokens(
        self, keys: Mapping[str, list[str]], pieces: Mapping[str, Mapping[str, str]]
    ) -> list[str]:
        out: list[str] = []
        for i, name in enumerate(self.table_names):
            out.append(("{" if i == 0 else ", ") + json.dumps(name) + ": {")
            for j, k in enumerate(keys[name]):
                out.append(pieces[name][k] if j == 0 else ", " + pieces[name][k])
            out.append("}")
        if not self.table_names:
            out.append("{")
        out.append("}")
        return out

    def hash_with(self, overlay: Mapping[str, Mapping[str, Any]]) -> str:
        """Hash of the base with `overlay`'s records replacing or adding to its own."""
        changed = {n: recs for n, recs in overlay.items() if recs}
        if not changed:
            return self.full_hash
        keys: dict[str, list[str]] = {}
        pieces: dict[str, Mapping[str, str]] = {}
        for name in self.table_names:
            recs = changed.get(name)
            if not recs:
                keys[name], pieces[name] = self.sorted_keys[name], self.pieces[name]
                continue
            table_keys = self.sorted_keys[name]
            base_pieces = self.pieces[name]
            new = [k for k in recs if k not in base_pieces]
            if new:
                table_keys = list(table_keys)
                for k in new:
                    bisect.insort(table_keys, k)
            merged = dict(base_pieces)
            for k, rec in recs.items():
                merged[k] = _piece(k, rec)
            keys[name], pieces[name] = table_keys, merged
        tokens = self._tokens(keys, pieces)
        base = self.tokens
        diffs = tuple(
            (i, t)
            for i, t in enumerate(tokens)
            if i >= len(base) or (t is not base[i] and t != base[i])
        )
        if not diffs:
            return self.full_hash
        first = diffs[0][0]
        memo_key = (len(tokens), diffs)
        cached = self._memo.get(memo_key)
        if cached is not None:
            return cached
        cp = first // _CHECKPOINT_EVERY
        h = self.checkpoints[cp].copy()
        h.update("".join(tokens[cp * _CHECKPOINT_EVERY :]).encode("utf-8"))
        digest = h.hexdigest()
        with self._lock:
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[memo_key] = digest
        return digest


class TableBaseDB(BaseDB):
    """A dict-of-tables DB loaded once per process, hashed the τ³ way (JSON, sorted keys)."""

    def __init__(
        self, tables: dict[str, dict[str, Any]], normalise: RecordNormaliser, model_name: str
    ) -> None:
        super().__init__(tables)
        self.normalise = normalise
        self.model_name = model_name
        self._json_index: _JsonHashIndex | None = None

    @property
    def hash_index(self) -> Any:  # the τ³ index has the same interface as v1's
        if self._json_index is None:
            with self._lock:
                if self._json_index is None:
                    self._json_index = _JsonHashIndex(self.tables)
        return self._json_index


class TableSource:
    """A large JSON DB: parsed and normalised once per process, copy-on-write per episode.

    `models` maps each top-level table to the pydantic model of its records; every record
    is validated and dumped once, so values are exactly what the original's model holds.
    """

    def __init__(self, path: Path, models: Mapping[str, type[BaseModel]], model_name: str) -> None:
        raw = load_structured(path)
        if not isinstance(raw, dict):
            raise damaged(path, f"is not a JSON object of tables ({model_name})", PULL_HINT)
        unknown = sorted(set(raw) - set(models))
        if unknown:
            raise damaged(path, f"has unknown tables {unknown} for {model_name}", PULL_HINT)
        for name in models:
            if not isinstance(raw.get(name), dict):
                raise damaged(path, f"has no table {name!r} of records keyed by id", PULL_HINT)
        self.models = dict(models)

        def normalise(table: str, record: Any) -> Any:
            return self.models[table].model_validate(record).model_dump()

        tables: dict[str, dict[str, Any]] = {}
        for name in models:
            tables[name] = table = {}
            for key, rec in raw[name].items():
                try:
                    table[key] = normalise(name, rec)
                except ValidationError as exc:
                    raise invalid_db(path, exc, f"{name}.{key}: ") from None
        self.base = TableBaseDB(tables, normalise, model_name)

    def fresh(self) -> EpisodeDB:
        return self.base.episode()


class PydanticSource:
    """A small DB held as a pydantic model: validated once, deep-copied per episode."""

    def __init__(
        self, model: type[BaseModel], path: Path, reader: Callable[[Path], Any] | None = None
    ) -> None:
        data = (reader or load_structured)(path)
        self.model = model
        try:
            self.base = model.model_validate(data)
        except ValidationError as exc:
            raise invalid_db(path, exc) from None

    def fresh(self) -> BaseModel:
        return self.base.model_copy(deep=True)


def db_dump(db: Any) -> dict[str, Any]:
    """The DB as `model_dump()` (python mode) would give it."""
    if isinstance(db, EpisodeDB):
        return db.to_dict()
    if isinstance(db, BaseModel):
        return db.model_dump()
    if isinstance(db, dict):
        return db
    raise TypeError(f"not a τ³ database: {type(db).__name__}")


_HASH_MEMO: dict[tuple[int, bytes], str] = {}
_HASH_MEMO_MAX = 512

# Pickling a DB dump for the memo key is dominated by its dates and enum members (~1 µs
# each through `__reduce_ex__`, 73 dates in the telecom agent DB). DBs validated from a
# pristine dump share that dump's leaf objects, so the key's pickler starts with a memo
# seeded with them: a shared leaf is written as a memo reference to its seed slot. The
# key stays exact: equal keys decode (with the same seed) to equal values. A new seed
# starts a new generation, part of every key, so keys of different seeds never meet.
_SEED_TYPES = (datetime.date, datetime.time, datetime.timedelta, enum.Enum)
_seed_objects: list[Any] = []
_seed_ids: set[int] = set()
_seed_memo: dict[int, Any] = {}
_seed_generation = 0
_seed_lock = threading.Lock()


def seed_hash_keys(value: Any) -> None:
    """Pre-memoise `value`'s date/time/enum leaves in the hash memo's key pickler.

    For a pristine dump that per-episode DBs are validated from (they share its leaves);
    the leaves are kept alive for the process.
    """
    global _seed_memo, _seed_generation
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, _SEED_TYPES) and id(item) not in _seed_ids:
            _seed_ids.add(id(item))
            found.append(item)
    if not found:
        return
    with _seed_lock:
        _seed_objects.extend(found)
        pickler = pickle.Pickler(io.BytesIO(), protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dump(_seed_objects)
        # id -> (slot, object), leaves only (keeps them alive; a smaller memo is faster
        # to install in every key's pickler).
        memo = {k: v for k, v in pickler.memo.copy().items() if k in _seed_ids}
        _seed_generation += 1
        _seed_memo = memo


def _hash_key(dump: Any) -> tuple[int, bytes]:
    """The dump's pickle, from the seeded memo (C-fast, type-exact: see above)."""
    generation, memo = _seed_generation, _seed_memo
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    if memo:
        pickler.memo = memo  # copied into the pickler's own table
    pickler.dump(dump)
    return generation, buffer.getvalue()


def _memo_hash(dump: Any) -> str:
    """`hash_json(dump)`, memoised on the dump's pickle (C-fast, type-exact: pickles that
    are equal load to equal values, so they encode to the same JSON)."""
    try:
        key = _hash_key(dump)
    except Exception:
        return hash_json(dump)
    digest = _HASH_MEMO.get(key)
    if digest is None:
        digest = hash_json(dump)
        if len(_HASH_MEMO) >= _HASH_MEMO_MAX:
            _HASH_MEMO.clear()
        _HASH_MEMO[key] = digest
    return digest


def db_hash(db: Any) -> str:
    """The original's DB hash (spec §3), incremental for table DBs, memoised for models."""
    if isinstance(db, EpisodeDB):
        return db.data_hash()
    return _memo_hash(db_dump(db))


def db_merged(db: Any, update: Mapping[str, Any]) -> Any:
    """`initialization_data` applied: a NEW DB = validate(deep_merge(dump(db), update))."""
    if isinstance(db, BaseModel):
        return type(db).model_validate(deep_merge(db.model_dump(), update))
    if isinstance(db, EpisodeDB) and isinstance(db.base, TableBaseDB):
        base = db.base
        out = EpisodeDB(base)
        for name, table in db.items():
            for key, rec in table.changed.items():
                out[name].put(key, rec)
        for name, recs in update.items():
            if name not in out or not isinstance(recs, Mapping):
                raise ValueError(f"cannot merge {name!r} into {base.model_name}")
            table = out[name]
            for key, value in recs.items():
                current = table.get(key)
                if isinstance(current, dict) and isinstance(value, Mapping):
                    value = deep_merge(copy_json(current), value)
                table.put(key, base.normalise(name, copy_json(value)))
        return out
    raise TypeError(f"not a τ³ database: {type(db).__name__}")
