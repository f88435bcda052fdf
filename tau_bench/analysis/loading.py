"""Results files -> `Run`: the run's JSONL log, the original τ-bench JSON, or a folder.

Both formats become `EpisodeRecord`s so every analysis has one input type. What the
original format does not carry (agent, model, user model, domain) is taken, in order,
from a `<stem>.summary.json` next to the file, the runner's file-name pattern, and the
trajectory itself (the policy's title names the domain); what remains unknown stays None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_bench.results import EpisodeRecord, LogFileError, read_log


class ResultsLoadError(ValueError):
    """A results file or folder that cannot be read; the message names the file."""


LOG = "log"
TAU_BENCH = "tau-bench"

# Longest first, so "tool-calling" wins over a model name starting with "act".
_STRATEGIES = ("tool-calling", "few-shot", "oracle", "react", "act")
_USER_STRATEGIES = "llm|react|verify|reflection|human|scripted"
_STEM = re.compile(
    r"^(?P<agent_model>.+)-(?P<temperature>\d+(?:\.\d+)?)_range_(?P<start>-?\d+)-(?P<end>-?\d+)"
    rf"_user-(?P<user_model>.+)-(?P<user_strategy>{_USER_STRATEGIES})_\d{{10}}(?:_\d+)?$"
)
_POLICY_TITLES = {"# airline agent policy": "airline", "# retail agent policy": "retail"}


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
    bad_lines: int = 0

    @property
    def agent(self) -> str:
        """What the tables call the agent: strategy and model, or the label if unknown."""
        parts = [p for p in (self.agent_strategy, self.model) if p]
        return " ".join(parts) if parts else self.label

    @property
    def user(self) -> str | None:
        """The user simulator's model, or its strategy when it has none (scripted, human)."""
        return self.user_model or self.user_strategy

    @property
    def task_ids(self) -> set[int]:
        return {r.task_id for r in self.records}


# -- the original format --------------------------------------------------------------


def record_from_tau_bench(entry: dict[str, Any]) -> EpisodeRecord:
    """One element of a τ-bench results list as a record.

    The original wrote an episode that raised as reward 0 with `info.error` and an
    empty trajectory; such entries become errored records (not scored), as ours are.
    """
    info = entry.get("info")
    if not isinstance(info, dict):
        info = {}
    error = None
    if "error" in info and not entry.get("traj"):
        error = {
            "source": "unknown",
            "kind": "error",
            "message": str(info.get("error")),
            "retryable": False,
            "detail": str(info.get("traceback", "")),
        }
    reward = entry.get("reward")
    task = info.get("task")
    reward_info = info.get("reward_info")
    return EpisodeRecord(
        task_id=int(entry["task_id"]),
        trial=int(entry.get("trial", 0) or 0),
        reward=None if error or reward is None else float(reward),
        reward_info=reward_info if isinstance(reward_info, dict) else None,
        task=task if isinstance(task, dict) else {},
        messages=list(entry.get("traj") or []),
        stop_reason=str(info.get("stop_reason") or ("error" if error else "")),
        agent_usage={"cost": float(info.get("agent_cost") or 0.0)},
        user_usage={"cost": float(info.get("user_cost") or 0.0)},
        error=error,
        warnings=[str(e) for e in info.get("errors") or []],
    )


def parse_run_stem(stem: str) -> dict[str, Any]:
    """What the runner's file name says (agent, model, user model...), or {}."""
    match = _STEM.match(stem)
    if not match:
        return {}
    agent_model = match["agent_model"]
    strategy, model = agent_model, None
    for known in _STRATEGIES:
        if agent_model.startswith(known + "-"):
            strategy, model = known, agent_model[len(known) + 1 :]
            break
    return {
        "agent_strategy": strategy,
        "model": None if model in (None, "default") else model,
        "user_model": match["user_model"],
        "user_strategy": match["user_strategy"],
    }


def guess_env(records: list[EpisodeRecord], name: str) -> str | None:
    """The domain from the policy title in a trajectory, else from the file name."""
    for record in records:
        for message in record.messages[:1]:
            if message.get("role") == "system":
                title = str(message.get("content") or "").lstrip().split("\n", 1)[0]
                env = _POLICY_TITLES.get(title.strip().lower())
                if env:
                    return env
    tokens = set(re.split(r"[^a-z]+", name.lower()))
    found = [env for env in ("airline", "retail") if env in tokens]
    return found[0] if len(found) == 1 else None


def _read_json(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ResultsLoadError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsLoadError(f"{path}: not valid JSON ({exc})") from None


def _load_tau_bench(path: Path) -> Run:
    data = _read_json(path)
    if not isinstance(data, list) or not all(
        isinstance(e, dict) and "task_id" in e and "reward" in e for e in data
    ):
        raise ResultsLoadError(
            f"{path}: not a τ-bench results file (expected a list of "
            "{task_id, reward, info, traj, trial})"
        )
    try:
        records = [record_from_tau_bench(e) for e in data]
    except (TypeError, ValueError) as exc:
        raise ResultsLoadError(f"{path}: malformed τ-bench entry ({exc})") from None
    summary_path = path.with_name(path.stem + ".summary.json")
    config: dict[str, Any] = {}
    run_name = path.stem
    if summary_path.is_file():
        summary = _read_json(summary_path)
        if isinstance(summary, dict) and isinstance(summary.get("config"), dict):
            config = summary["config"]
            run_name = str(summary.get("run_name") or run_name)
    meta = {**parse_run_stem(path.stem), **{k: v for k, v in config.items() if v is not None}}
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
        user_model=_user_model(meta),
        num_trials=max(int(config.get("num_trials") or 1), trials),
        task_split=config.get("task_split"),
        config=config,
    )


def _user_model(meta: dict[str, Any]) -> str | None:
    if meta.get("user_strategy") in ("scripted", "human"):
        return None
    return meta.get("user_model")


def _load_log(path: Path) -> Run:
    try:
        contents = read_log(path)
    except LogFileError as exc:
        raise ResultsLoadError(str(exc)) from None
    header = contents.header
    config = dict(header.get("config") or {})
    records = sorted(contents.records.values(), key=lambda r: (r.trial, r.task_id))
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
    )


def load_run(path: str | Path) -> Run:
    """One results file, whichever of the two formats it is."""
    p = Path(path)
    if not p.is_file():
        raise ResultsLoadError(f"no such results file: {p}")
    if p.name.endswith(".summary.json"):
        raise ResultsLoadError(f"{p} is a run summary; pass the run's .jsonl or .json file")
    with p.open("rb") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith(b"{"):
        return _load_log(p)
    return _load_tau_bench(p)


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


def load_runs(paths: list[str | Path]) -> Loaded:
    """Runs from files and folders, with unique labels.

    An explicit file that cannot be read is an error; inside a folder, files that are
    not results (an analysis output, a compare JSON) are skipped and listed.
    """
    runs: list[Run] = []
    skipped: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = 0
            for file in _folder_files(path):
                try:
                    runs.append(load_run(file))
                    found += 1
                except ResultsLoadError as exc:
                    skipped.append(str(exc))
            if not found:
                raise ResultsLoadError(f"no results files in folder {path}")
        elif path.exists():
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
