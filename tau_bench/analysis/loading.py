"""Results files -> `Run`: the run's JSONL log, the original τ-bench JSON, or a folder.

Both formats become `EpisodeRecord`s so every analysis has one input type (reading the
original format is `tau_bench_json`). What the original format does not carry (agent,
model, user model, domain) is taken, in order, from a `<stem>.summary.json` next to the
file, the runner's file-name pattern, and the trajectory itself (the policy's title names
the domain); what remains unknown stays None.

Multi-domain runs name their tasks `"retail/12"`; a record's domain is its `domain`
field, else its id's namespace. In a user-model rotation (`--user-models`) each log
record says which user model it had; the τ-bench file does not, so it is taken from the
log next to it, else worked out from the runner's round-robin when the file is complete.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tau_bench import results_log
from tau_bench.analysis.shown import masked
from tau_bench.analysis.tau_bench_json import guess_env, parse_run_stem, record_from_tau_bench
from tau_bench.bounded_files import looked_at
from tau_bench.config.run_config import MAX_TRIALS
from tau_bench.json_decode import loads
from tau_bench.metrics import domain_of, user_model_of
from tau_bench.records import EpisodeRecord, RecordError
from tau_bench.results_log import (
    LogContents,
    LogFileError,
    last_line_start,
    log_lines,
    open_regular,
    read_log,
)
from tau_bench.task_ids import TaskId, qualify, sort_key, task_domain


class ResultsLoadError(ValueError):
    """A results file or folder that cannot be read; the message names the file (and
    the line or entry when one is malformed)."""


LOG = "log"
TAU_BENCH = "tau-bench"

NOT_REGULAR = "is not a regular file (a run's results are its .jsonl log or τ-bench .json file)"
"""Said of a FIFO, a device or a directory given as a results file (as `--resume` says it)."""


@dataclass
class Run:
    """One agent's results: its episodes and what is known about how they were made."""

    label: str
    path: Path
    source_format: str
    records: list[EpisodeRecord]
    env: str | None = None
    agent_strategy: str | None = None
    model: str | None = None
    user_strategy: str | None = None
    user_model: str | None = None
    num_trials: int = 1
    task_split: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    bad_lines: int = 0  # log lines that were not JSON (skipped), the unfinished one included
    manifest: dict[str, Any] = field(default_factory=dict)  # {} for runs written without
    unfinished_line: bool = False  # one of the bad lines is the last, cut off mid-write
    # A τ-bench file's list as read, one entry per record (`rescore -o` keeps its keys)
    entries: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def unreadable_note(self) -> str | None:
        """`<file>: N unreadable line(s) skipped` (what the numbers leave out), or None."""
        if not self.bad_lines:
            return None
        last = (
            ", the last one unfinished (a run interrupted mid-write)"
            if self.unfinished_line
            else ""
        )
        return f"{self.path}: {self.bad_lines} unreadable line(s) skipped{last}"

    @property
    def agent(self) -> str:
        """What the tables call the agent: strategy, display name and model, or the label."""
        name = (self.manifest.get("agent") or {}).get("name")
        name = masked(name) if isinstance(name, str) else None  # a header from elsewhere
        parts = [p for p in (self.agent_strategy, name, self.model) if p]
        return " ".join(parts) if parts else self.label

    @property
    def user(self) -> str | None:
        """The user simulator's model, or its strategy when it has none (scripted, human)."""
        return self.user_model or self.user_strategy

    @property
    def task_ids(self) -> set[TaskId]:
        return {r.task_id for r in self.records}

    @property
    def domains(self) -> list[str]:
        """The run's domains: its env (`retail,airline` names two), else its records'."""
        if self.env:
            return [e for e in self.env.split(",") if e]
        return list(dict.fromkeys(d for r in self.records if (d := domain_of(r))))

    @property
    def namespaced(self) -> bool:
        """Its task ids name their domain (`retail/12`): a multi-domain run."""
        return any(task_domain(r.task_id) for r in self.records)


def split_by_user_model(run: Run) -> list[Run]:
    """One run per user model of a rotation run (`--user-models`), labelled
    `<label> [<model>]`, in the rotation's order; the run itself when it had one."""
    groups: dict[str, list[EpisodeRecord]] = {}
    for name in run.config.get("user_models") or []:
        groups.setdefault(str(name), [])
    for r in run.records:
        groups.setdefault(user_model_of(r), []).append(r)
    groups = {name: members for name, members in groups.items() if members}
    if len(groups) < 2:
        return [run]
    return [
        replace(
            run,
            label=f"{run.label} [{name}]",
            records=members,
            user_model=members[0].user_model,
            user_strategy=members[0].user_strategy or run.user_strategy,
        )
        for name, members in groups.items()
    ]


def with_domain_ids(run: Run) -> Run:
    """`run` with its plain task indices named by its domain (`12` -> `"airline/12"`),
    so that it lines up with multi-domain runs; unchanged if its ids already say their
    domain. ValueError when the run's domain is unknown or ambiguous."""
    if not any(isinstance(r.task_id, int) for r in run.records):
        return run
    domains = run.domains
    if len(domains) != 1:
        raise ValueError(
            f"{run.label}: its task ids do not name a domain and its domain is "
            f"{'unknown' if not domains else 'ambiguous (' + ', '.join(domains) + ')'}"
        )
    (domain,) = domains
    records = [replace(r, task_id=qualify(r.task_id, domain), domain=domain) for r in run.records]
    return replace(run, records=records)


MAX_JSON_SIZE = results_log.MAX_LINE_SIZE
"""Largest τ-bench `.json` results (or summary) file read: 256 MiB, the log's line cap.
Such a file is decoded whole, as one log line is (and takes several times its size in
memory); τ-bench's published 200-episode file is 4 MB. A larger run is read from its
`.jsonl` log, which is read a line at a time."""


def _read_json(path: Path) -> Any:
    """A τ-bench results or summary file's JSON, refused by its size past
    `MAX_JSON_SIZE` before it is read: such a file is decoded whole."""
    limit = MAX_JSON_SIZE
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise ResultsLoadError(
                    f"{path} is larger than {limit // 1024**2} MiB ({size / 1024**2:,.0f} MiB), "
                    "the most a τ-bench .json results file may hold: read the run's .jsonl "
                    "log instead"
                )
            data = fh.read(limit + 1)
            if len(data) > limit:  # grown since fstat
                raise ResultsLoadError(f"{path} is larger than {limit // 1024**2} MiB")
            return loads(data)
    except OSError as exc:
        raise ResultsLoadError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        # JSONTooDeepError too: nesting Python's decoder cannot follow
        raise ResultsLoadError(f"{path}: not valid JSON ({exc})") from None


def _type_error(where: str, value: Any, expected: str) -> RecordError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return RecordError(f"{where}: expected {expected}, got {shown}")


def _optional_str(where: str, data: Mapping[str, Any], key: str) -> None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _type_error(f"{where}{key}", value, "a string or null")


def _optional_object(where: str, data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(f"{where}{key}", value, "an object or null")
    return value


def check_config(config: Mapping[str, Any], where: str = "config.") -> None:
    """`RecordError` for a run config (a log header's, a summary's) whose fields the
    readers use are not of their types; `num_trials` at most `MAX_TRIALS`."""
    for key in ("env", "agent_strategy", "model", "user_strategy", "user_model", "task_split"):
        _optional_str(where, config, key)
    trials = config.get("num_trials")
    if trials is not None and (
        not isinstance(trials, int) or isinstance(trials, bool) or not 1 <= trials <= MAX_TRIALS
    ):
        raise _type_error(f"{where}num_trials", trials, f"a whole number from 1 to {MAX_TRIALS:,}")
    models = config.get("user_models")
    if models is not None and (
        not isinstance(models, list) or not all(isinstance(m, str) for m in models)
    ):
        raise _type_error(f"{where}user_models", models, "a list of strings or null")


def check_header(header: Any) -> None:
    """`RecordError` for a log header (or a summary) whose fields the readers use are
    not of their types: config, fingerprint, manifest and its parts, run name."""
    if not isinstance(header, dict):
        raise _type_error("header", header, "an object")
    _optional_str("", header, "run_name")
    _optional_str("", header, "task_data_hash")
    _optional_object("", header, "fingerprint")
    check_config(_optional_object("", header, "config"))
    manifest = _optional_object("", header, "manifest")
    for part in ("suite", "tasks", "agent", "user", "judge"):
        _optional_object("manifest.", manifest, part)
    _optional_str("manifest.agent.", _optional_object("manifest.", manifest, "agent"), "name")
    _optional_object("manifest.suite.", _optional_object("manifest.", manifest, "suite"), "domains")
    user = _optional_object("manifest.", manifest, "user")
    if user.get("models") is not None and not isinstance(user["models"], list):
        raise _type_error("manifest.user.models", user["models"], "a list or null")


def _load_tau_bench(path: Path) -> Run:
    data = _read_json(path)
    if not isinstance(data, list) or not all(
        isinstance(e, dict) and "task_id" in e and "reward" in e for e in data
    ):
        raise ResultsLoadError(
            f"{path}: not a τ-bench results file (expected a list of "
            "{task_id, reward, info, traj, trial})"
        )
    records: list[EpisodeRecord] = []
    for i, entry in enumerate(data):
        try:
            records.append(record_from_tau_bench(entry, max_trials=MAX_TRIALS))
        except (TypeError, ValueError) as exc:
            raise ResultsLoadError(f"{path} entry {i}: malformed τ-bench entry ({exc})") from None
    _refuse_duplicates(path, records)
    summary_path = path.with_name(path.stem + ".summary.json")
    config: dict[str, Any] = {}
    summary: Any = None
    run_name = path.stem
    if summary_path.is_file():
        summary = _read_json(summary_path)
        if isinstance(summary, dict):
            try:
                check_header(summary)  # what is read from it: config, manifest, run name
            except RecordError as exc:
                raise ResultsLoadError(f"{summary_path}: {exc}") from None
            config = summary.get("config") or {}
            run_name = str(summary.get("run_name") or run_name)
    meta = {**parse_run_stem(path.stem), **{k: v for k, v in config.items() if v is not None}}
    user_strategy = str(meta.get("user_strategy") or "")
    user_model = _user_model(meta)
    rotation = _rotation(config)
    models = _per_record_user_models(path, records, rotation, summary)
    if rotation and models is None:
        # Each episode had one of these models, and which one cannot be known here.
        user_model = f"{', '.join(rotation)} (rotation)"
    for i, record in enumerate(records):
        record.user_strategy = user_strategy
        record.user_model = models[i] if models else None if rotation else user_model
    trials = max((r.trial for r in records), default=0) + 1
    return Run(
        label=run_name,
        path=path,
        source_format=TAU_BENCH,
        records=records,
        env=meta.get("env") or guess_env(records, path.stem),
        agent_strategy=meta.get("agent_strategy"),
        model=meta.get("model"),
        user_strategy=meta.get("user_strategy"),
        user_model=(models[0] if models else None) or user_model,
        num_trials=max(int(config.get("num_trials") or 1), trials),
        task_split=config.get("task_split"),
        config=config,
        manifest=_manifest_of(summary),
        entries=data,
    )


def _refuse_duplicates(path: Path, records: list[EpisodeRecord]) -> None:
    """A τ-bench list holds each (task, trial) once: it has no order that would say
    which of two to keep (a log's last line wins; a list's last entry means nothing)."""
    seen: set[tuple[TaskId, int]] = set()
    duplicates: list[tuple[TaskId, int]] = []
    for record in records:
        if record.key in seen and record.key not in duplicates:
            duplicates.append(record.key)
        seen.add(record.key)
    if duplicates:
        shown = ", ".join(f"task {t} trial {n}" for t, n in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        raise ResultsLoadError(
            f"{path}: {len(duplicates)} (task, trial) pair(s) appear more than once "
            f"({shown}{more}); a τ-bench results file holds each episode once"
        )


def _manifest_of(container: Any) -> dict[str, Any]:
    manifest = container.get("manifest") if isinstance(container, dict) else None
    return manifest if isinstance(manifest, dict) else {}


def _user_model(meta: dict[str, Any]) -> str | None:
    if meta.get("user_strategy") in ("scripted", "human"):
        return None
    return meta.get("user_model")


def _rotation(config: dict[str, Any]) -> list[str]:
    """The user models a run rotated over (`--user-models`); [] if it did not."""
    models = config.get("user_models")
    if not isinstance(models, list) or config.get("user_strategy") in ("scripted", "human"):
        return []
    return [str(m) for m in models]


def _per_record_user_models(
    path: Path, records: list[EpisodeRecord], rotation: list[str], summary: Any
) -> list[str | None] | None:
    """Each τ-bench entry's user model in a rotation run, which the format does not
    record: from the run's log next to the file (by task and trial), else from the
    runner's round-robin over the sample index - which is the entry's position when the
    file holds every planned episode (none errored or missing). None when not a
    rotation run or when it cannot be known."""
    if not rotation:
        return None
    log = path.with_suffix(".jsonl")
    if log.is_file():
        try:
            logged = read_log(log).records
        except LogFileError:  # the log itself reports it when read
            logged = {}
        found = [logged.get(r.key) for r in records]
        if all(f is not None for f in found):
            return [f.user_model if f is not None else None for f in found]
    planned = summary.get("episodes_planned") if isinstance(summary, dict) else None
    if planned == len(records):
        return [rotation[i % len(rotation)] for i in range(len(records))]
    return None


def malformed_line(path: Path) -> str | None:
    """`<file> line N: why` for the first line of a log whose header or record is
    malformed (a record `read_log` skipped as it skips a line that is not JSON, a trial
    of `MAX_TRIALS` or more), or None when there is none. Read as `read_log` reads it:
    a line longer than `results_log.MAX_LINE_SIZE` is a bad line (skipped, counted by
    `read_log`), read past in chunks and never held whole nor shown."""
    header_seen = False
    with open_regular(path) as fh:
        for n, line in enumerate(log_lines(fh), 1):
            if line is None or not line.strip():
                continue
            try:
                obj = loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            is_header, header_seen = not header_seen, True
            try:
                if is_header:
                    check_header(obj)
                elif isinstance(obj, dict) and obj.get("type") == "episode":
                    EpisodeRecord.from_dict(obj, max_trials=MAX_TRIALS)
            except RecordError as exc:
                return f"{path} line {n}: {'header: ' if is_header else ''}{exc}"
    return None


def _unfinished_last_line(path: Path) -> bool:
    """Whether the log's last line was cut off mid-write: no newline after it and not
    JSON, or longer than `results_log.MAX_LINE_SIZE` (what `--resume` drops as cut off).
    Found from the end, so a long log costs a few short reads, a long line no memory."""
    with path.open("rb") as fh:
        start = last_line_start(fh)
        end = fh.seek(0, os.SEEK_END)
        if end - start > results_log.MAX_LINE_SIZE:
            return True
        fh.seek(start)
        last = fh.read(end - start)
    if not last.strip():
        return False
    try:
        loads(last)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return True
    return False


def read_checked_log(path: Path) -> LogContents:
    """`read_log`, refusing (`ResultsLoadError` naming the line) a log whose header or
    a record is malformed, or has a trial of `MAX_TRIALS` or more. Lines that are not
    JSON (a run killed mid-write) stay skipped and counted in `bad_lines`."""
    try:
        contents = read_log(path)
    except LogFileError as exc:
        raise ResultsLoadError(str(exc)) from None
    suspect = bool(contents.bad_lines)  # a malformed record is skipped by read_log
    try:
        check_header(contents.header)
    except RecordError:
        suspect = True
    if suspect or any(trial >= MAX_TRIALS for _, trial in contents.records):
        try:
            bad = malformed_line(path)
        except LogFileError as exc:  # replaced since read_log read it
            raise ResultsLoadError(str(exc)) from None
        if bad is not None:
            raise ResultsLoadError(bad)
    return contents


def _load_log(path: Path) -> Run:
    contents = read_checked_log(path)
    header = contents.header
    config = dict(header.get("config") or {})
    records = sorted(contents.records.values(), key=lambda r: (r.trial, sort_key(r.task_id)))
    trials = max((r.trial for r in records), default=0) + 1
    first = records[0] if records else None
    return Run(
        label=str(header.get("run_name") or path.stem),
        path=path,
        source_format=LOG,
        records=records,
        env=config.get("env") or guess_env(records, path.stem),
        agent_strategy=config.get("agent_strategy") or (first.agent_strategy if first else None),
        model=config.get("model") or (first.model if first else None),
        user_strategy=config.get("user_strategy") or (first.user_strategy if first else None),
        user_model=(first.user_model if first else None) or _user_model(config),
        num_trials=max(int(config.get("num_trials") or 1), trials),
        task_split=config.get("task_split"),
        config=config,
        header=header,
        bad_lines=contents.bad_lines,
        manifest=_manifest_of(header),
        unfinished_line=bool(contents.bad_lines) and _unfinished_last_line(path),
    )


def _head(path: Path) -> bytes:
    """The file's first 4 KiB, refused (`ResultsLoadError`) unless it is a regular file.
    Opened without blocking, so a FIFO is refused rather than waited on for a writer that
    never comes, and a device (`/dev/zero`) or a directory is not mistaken for a missing
    file; the same check and wording as `--resume` (`results_log.open_regular`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        raise ResultsLoadError(f"no such results file: {path}") from None
    except IsADirectoryError:  # where a directory cannot be opened (not Linux)
        raise ResultsLoadError(f"{path} {NOT_REGULAR}") from None
    except OSError as exc:
        raise ResultsLoadError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResultsLoadError(f"{path} {NOT_REGULAR}")
    with os.fdopen(fd, "rb") as fh:
        return fh.read(4096)


def load_run(path: str | Path) -> Run:
    """One results file, whichever of the two formats it is."""
    p = Path(path)
    head = _head(p).removeprefix(codecs.BOM_UTF8).lstrip()  # a BOM: read_log skips it
    if p.name.endswith(".summary.json"):
        raise ResultsLoadError(f"{p} is a run summary; pass the run's .jsonl or .json file")
    run = _load_log(p) if head.startswith(b"{") else _load_tau_bench(p)
    # Names every output shows (labels, the agent's and user's models), from a file that
    # may come from elsewhere: secrets in them masked as in every trajectory shown.
    run.label = masked(run.label)
    for name in ("agent_strategy", "model", "user_strategy", "user_model"):
        value = getattr(run, name)
        if isinstance(value, str):
            setattr(run, name, masked(value))
    return run


@dataclass
class Loaded:
    runs: list[Run]
    skipped: list[str] = field(default_factory=list)


def _folder_files(folder: Path) -> list[Path]:
    """Results files under `folder`: a run's log is preferred to its derived `.json`."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl") and not p.name.endswith(".summary.json")
    )
    logs = {p.with_suffix("") for p in files if p.suffix == ".jsonl"}
    return [p for p in files if p.suffix == ".jsonl" or p.with_suffix("") not in logs]


def _unreadable(said: str) -> ResultsLoadError:
    return ResultsLoadError(f"cannot read {said}")


def load_runs(paths: list[str | Path]) -> Loaded:
    """Runs from files and folders, with unique labels.

    An explicit file that cannot be read is an error; inside a folder, files that are
    not results (an analysis output, a compare JSON) are skipped and listed.
    """
    runs: list[Run] = []
    skipped: list[str] = []
    for raw in paths:
        path = Path(raw)
        if looked_at(path.is_dir, path, _unreadable):
            found = 0
            for file in _folder_files(path):
                try:
                    runs.append(load_run(file))
                    found += 1
                except ResultsLoadError as exc:  # malformed files included
                    skipped.append(str(exc))
            if not found:
                raise ResultsLoadError(f"no results files in folder {path}")
        elif looked_at(path.exists, path, _unreadable):
            runs.append(load_run(path))
        else:
            raise ResultsLoadError(f"no such results file or folder: {path}")
    seen: dict[str, int] = {}
    for run in runs:
        n = seen.get(run.label, 0) + 1
        seen[run.label] = n
        if n > 1:
            run.label = f"{run.label}#{n}"
    return Loaded(runs=runs, skipped=skipped)
