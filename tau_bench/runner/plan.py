"""What a run will do, decided before anything is written: tasks, order, files, resume.

`prepare_run(config)` does everything that can fail on bad input (env, split, task
selection, resume compatibility) before any file is written. A run may span several
domains (`env="retail,airline"`, or `tau3/retail,tau3/telecom`): task ids are then
namespaced, `"retail/12"`.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import truncate
from tau_bench.analysis.loading import ResultsLoadError, read_checked_log
from tau_bench.config import RunConfig, RunConfigError, fingerprint_differences
from tau_bench.records import EpisodeRecord
from tau_bench.results import run_file_stem
from tau_bench.results_log import LogContents
from tau_bench.suites import Domain, Task, load_domain

TaskId = int | str  # an index into the split; "domain/index" in multi-domain runs
Key = tuple[TaskId, int]  # (task id, trial)


@dataclass(frozen=True)
class TaskRef:
    """Where a run's task comes from: its domain and its index in that domain's list."""

    domain: str
    index: int


@dataclass
class RunPlan:
    """What a run will do, fully validated: tasks, the (task, trial) order, file names.

    `domain` is the first (usually only) domain; `domains` and `refs` say which domain
    each task id belongs to. `recorded_manifest` is the resumed log's manifest (what
    `check_agent` compares the rebuilt agent with). `replaced` are the resumed log's
    attempts that a later line of it replaced (earlier resumes ran them again), their
    spend only (`results_log.LogContents.replaced`).
    """

    config: RunConfig
    domain: Domain
    tasks: dict[TaskId, Task]
    order: list[Key]
    task_hash: str
    run_name: str
    log_path: Path
    existing: dict[Key, EpisodeRecord] = field(default_factory=dict)
    resumed: bool = False
    source: str = ""
    domains: dict[str, Domain] = field(default_factory=dict)
    refs: dict[TaskId, TaskRef] = field(default_factory=dict)
    recorded_manifest: dict[str, Any] = field(default_factory=dict)
    replaced: list[EpisodeRecord] = field(default_factory=list)
    _positions: dict[TaskId, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.domains:
            self.domains = {self.domain.name: self.domain}
        if not self.refs:
            self.refs = {
                tid: TaskRef(self.domain.name, tid if isinstance(tid, int) else -1)
                for tid in self.tasks
            }
        self._positions = {tid: i for i, tid in enumerate(self.tasks)}

    def sample_index(self, key: Key) -> int:
        """The position of (task, trial) in the run's canonical order: trial by trial,
        tasks in selection order (`trial * len(tasks) + task position`), whatever the
        shuffle or the scheduling. It does not change when a resume adds trials."""
        task_id, trial = key
        return trial * len(self.tasks) + self._positions[task_id]

    @property
    def pending(self) -> list[Key]:
        """Pairs still to run: missing from the log, or recorded with an error."""
        return [k for k in self.order if k not in self.existing or self.existing[k].is_error]

    def superseded(self, final: Mapping[Key, EpisodeRecord]) -> list[EpisodeRecord]:
        """Every attempt of the log that `final` (the latest record per pair) does not
        hold: the ones earlier resumes replaced (`replaced`), and the errored ones this
        resume ran again. Their spend still counts (`metrics.summarize`), each once."""
        now = [r for k, r in self.existing.items() if final.get(k, r) is not r]
        return [*self.replaced, *now]

    def check_agent(self, manifest: Mapping[str, Any]) -> None:
        """Refuse to resume with an agent other than the log's: the fingerprint holds the
        `--http-config` path, not what the file says; the manifest's `config_hash`
        (settings plus the provider's `config_digest`) does. Call it once the provider
        is built, before any episode runs or the log is reopened."""
        if not self.resumed:
            return
        problem = agent_difference(self.recorded_manifest, manifest)
        if problem is not None:
            raise RunConfigError(
                f"cannot resume {self.log_path}: the agent's configuration differs ({problem})"
            )

    @property
    def results_path(self) -> Path:
        return self.log_path.with_suffix(".json")

    @property
    def summary_path(self) -> Path:
        return self.log_path.with_name(self.log_path.stem + ".summary.json")


def _agent_part(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    agent = manifest.get("agent") if isinstance(manifest, Mapping) else None
    return agent if isinstance(agent, Mapping) else {}


def agent_difference(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """What differs between two manifests' agents (`name`, `config_hash`), shown safely;
    None when they match, or when `recorded` has no hash (a log from before manifests,
    or one written by the Ray backend, which records none)."""
    old, new = _agent_part(recorded), _agent_part(current)
    old_hash, new_hash = old.get("config_hash"), new.get("config_hash")
    if not isinstance(old_hash, str) or old_hash == new_hash:
        return None
    parts = []
    if old.get("name") != new.get("name"):
        parts.append(f"name {old.get('name')!r} -> {new.get('name')!r}")
    parts.append(
        f"config_hash {old_hash[:12]} -> {str(new_hash)[:12]}: its settings or its "
        "configuration file (--http-config...) changed"
    )
    return printable("; ".join(parts))


def with_trials(plan: RunPlan, num_trials: int) -> RunPlan:
    """`plan` with `num_trials` trials of every task (the order rebuilt as a fresh plan's)."""
    _check_size(len(plan.tasks), num_trials)
    config = plan.config.model_copy(update={"num_trials": num_trials})
    return dataclasses.replace(plan, config=config, order=_order(plan.tasks, config))


# -- preparation -----------------------------------------------------------------------


def task_data_hash(tasks: dict[TaskId, Task]) -> str:
    """sha256 of the selected tasks' JSON (ids included): resume refuses a mismatch."""
    payload = json.dumps(
        [[tid, task.model_dump(mode="json")] for tid, task in sorted(tasks.items())],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _select(
    ids: list[int] | None, config: RunConfig, all_tasks: list[Task], source: str
) -> tuple[list[int], int]:
    """Indices into `all_tasks`: `ids` if given (None: the start/end range), and the
    range's end."""
    n = len(all_tasks)
    if n == 0:
        raise RunConfigError(f"{source} has no tasks")
    end = n if config.end_index == -1 else min(config.end_index, n)
    if ids is not None:
        bad = [t for t in ids if not 0 <= t < n]
        if bad:
            raise RunConfigError(f"task id {bad[0]} out of range for {source} (valid: 0-{n - 1})")
        return list(dict.fromkeys(ids)), end
    if not 0 <= config.start_index < end:
        raise RunConfigError(
            f"empty task range {config.start_index}-{end} for {source} ({n} tasks)"
        )
    return list(range(config.start_index, end)), end


def _ids_for(config: RunConfig, domain: str) -> list[int] | None:
    """The `task_ids` that select tasks of `domain`: plain ids select in every domain,
    `domain/N` only in its own. None when the run selects by range."""
    if not config.task_ids:
        return None
    out: list[int] = []
    for tid in config.task_ids:
        if isinstance(tid, int):
            out.append(tid)
            continue
        name, _, index = tid.rpartition("/")
        if name not in config.envs:
            raise RunConfigError(f"task id {tid!r} is not in this run's env ({config.env})")
        if name == domain:
            out.append(int(index))
    return out


def _select_tasks(
    config: RunConfig, domains: dict[str, Domain]
) -> tuple[dict[TaskId, Task], dict[TaskId, TaskRef], str, int]:
    """The run's tasks by id, where each comes from, a description, and the range end."""
    tasks: dict[TaskId, Task] = {}
    refs: dict[TaskId, TaskRef] = {}
    if config.tasks_file:
        if config.multi_domain:
            raise RunConfigError("--tasks-file takes a single --env (its tasks are one domain's)")
        name = config.envs[0]
        all_tasks = list(domains[name].load_tasks_file(Path(config.tasks_file)))
        source = f"tasks file {config.tasks_file}"
        ids, end = _select(_ids_for(config, name), config, all_tasks, source)
        for i in ids:
            tasks[i] = all_tasks[i]
            refs[i] = TaskRef(name, i)
        return tasks, refs, source, end
    sources, ends = [], []
    for name, domain in domains.items():
        all_tasks = list(domain.tasks(config.task_split))
        source = f"{name} {config.task_split}"
        wanted = _ids_for(config, name)
        if wanted == []:
            continue  # only other domains' tasks were named
        ids, end = _select(wanted, config, all_tasks, source)
        sources.append(source)
        ends.append(end)
        for i in ids:
            tid: TaskId = f"{name}/{i}" if config.multi_domain else i
            tasks[tid] = all_tasks[i]
            refs[tid] = TaskRef(name, i)
    if not tasks:
        raise RunConfigError(f"no tasks selected from {config.env}")
    return tasks, refs, ", ".join(sources), max(ends)


def resolve_resume_path(path: str) -> Path:
    p = Path(path)
    if p.suffix == ".jsonl":
        return p
    name = p.name.removesuffix(".summary.json").removesuffix(".json")
    candidate = p.with_name(name + ".jsonl")
    # os.path.exists: False, not OSError, for a name too long (reading `p` reports it)
    return candidate if os.path.exists(candidate) else p


LONGEST_SUFFIX = ".summary.json.tmp"
"""The longest ending of a run's file names (`results.write_json`'s temporary summary)."""


def _limits(log_dir: Path) -> tuple[int, int]:
    """(longest file name, longest path) in bytes where `log_dir` is or would be made,
    as its nearest existing ancestor's file system says (255 and 4096 when it will not)."""
    ancestor = next((a for a in (log_dir, *log_dir.parents) if os.path.isdir(a)), Path("."))
    try:
        return os.pathconf(ancestor, "PC_NAME_MAX"), os.pathconf(ancestor, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096


def _log_dir_error(log_dir: Path, reason: str) -> RunConfigError:
    """One line naming `--log-dir` (cut short: the path may be thousands of characters)."""
    shown = truncate(str(log_dir), 200)
    return RunConfigError(f"cannot write results in --log-dir {shown}: {reason}")


def check_log_files(log_dir: Path, stem: str) -> None:
    """RunConfigError, before anything is written, when the file system cannot hold the
    run `stem`'s files in `log_dir`: a folder or file name, or a whole path, longer than it
    takes (making the folders would fail half-way, some made), or a folder that cannot even
    be looked at (`Path.exists` raises for those, where a plain missing folder is False)."""
    name_max, path_max = _limits(log_dir)
    too_long = os.strerror(errno.ENAMETOOLONG)
    for part in log_dir.parts:
        if len(os.fsencode(part)) > name_max:
            raise _log_dir_error(
                log_dir,
                f"{too_long} (a folder name of {len(os.fsencode(part))} bytes, at most {name_max})",
            )
    file_name = f"{stem}{LONGEST_SUFFIX}"
    if len(os.fsencode(file_name)) > name_max:
        raise _log_dir_error(
            log_dir,
            f"{too_long} (the run's file names, {truncate(stem, 60)}.*, would be "
            f"over {name_max} bytes: shorten the run's name)",
        )
    path = len(os.fsencode(str(log_dir / file_name)))
    if path >= path_max:
        raise _log_dir_error(
            log_dir, f"{too_long} (its files' paths would be {path} bytes, under {path_max} fit)"
        )
    try:
        (log_dir / f"{stem}.jsonl").exists()
    except OSError as exc:  # a folder that may not be searched...
        raise _log_dir_error(log_dir, exc.strerror or str(exc)) from None


def _free_stem(log_dir: Path, stem: str) -> str:
    """`stem`, or `stem_2`, `stem_3`... when a run's files already have that name; the
    folder refused as one line when it cannot be looked at (`check_log_files`)."""
    check_log_files(log_dir, stem)
    candidate, n = stem, 1
    try:
        while (log_dir / f"{candidate}.jsonl").exists() or (log_dir / f"{candidate}.json").exists():
            n += 1
            candidate = f"{stem}_{n}"
    except OSError as exc:  # `stem_N` over the limit, a folder changed meanwhile...
        raise _log_dir_error(log_dir, exc.strerror or str(exc)) from None
    return candidate


def for_run(domain: Domain, config: RunConfig) -> Domain:
    """The domain with the run's options when its suite has any (τ³: the NL judge)."""
    for_run = getattr(domain, "for_run", None)
    return for_run(config) if for_run is not None else domain


MAX_EPISODES = 1_000_000  # a run's plan is held in memory; far above any real use


def _check_size(tasks: int, trials: int) -> None:
    """Refuse a plan of more than `MAX_EPISODES` (task, trial) pairs (held in memory)."""
    if tasks * trials > MAX_EPISODES:
        raise RunConfigError(
            f"{tasks} tasks x {trials} trials is more than {MAX_EPISODES:,} "
            "episodes in one run: split it"
        )


def _order(tasks: dict[TaskId, Task], config: RunConfig) -> list[Key]:
    """The (task, trial) pairs, trial by trial; each trial's tasks shuffled when asked."""
    rng = random.Random(config.seed)
    order: list[Key] = []
    for trial in range(config.num_trials):
        trial_ids = list(tasks)
        if config.shuffle:
            rng.shuffle(trial_ids)
        order.extend((tid, trial) for tid in trial_ids)
    return order


def _read_resumed(log_path: Path) -> LogContents:
    """The log to resume, its header and records checked as every reader checks them
    (types, and trials below `MAX_TRIALS`: the plan holds every trial's pairs)."""
    try:
        contents = read_checked_log(log_path)
    except ResultsLoadError as exc:
        raise RunConfigError(f"cannot resume: {exc}") from None
    fingerprint = contents.header.get("fingerprint", {})
    options = fingerprint.get("agent_options") if isinstance(fingerprint, dict) else None
    if not isinstance(fingerprint, dict) or not isinstance(options, dict | None):
        raise RunConfigError(
            f"cannot resume {log_path}: its header's fingerprint (the configuration it was "
            "run with) is malformed"
        )
    return contents


def prepare_run(config: RunConfig) -> RunPlan:
    """Validate the config against the data and any log to resume; writes nothing."""
    domains = {name: for_run(load_domain(name, config.data_dir), config) for name in config.envs}
    domain = domains[config.envs[0]]
    tasks, refs, source, end = _select_tasks(config, domains)
    _check_size(len(tasks), config.num_trials)
    order = _order(tasks, config)
    digest = task_data_hash(tasks)

    if config.resume:
        log_path = resolve_resume_path(config.resume)
        contents = _read_resumed(log_path)
        header = contents.header
        diffs = fingerprint_differences(header.get("fingerprint", {}), config.fingerprint())
        if diffs:
            raise RunConfigError(
                f"cannot resume {log_path}: the configuration differs ({'; '.join(diffs)})"
            )
        if header.get("task_data_hash") != digest:
            raise RunConfigError(
                f"cannot resume {log_path}: the selected tasks differ from that run's "
                "(task selection or task data changed)"
            )
        # Every trial already in the log stays in the results, whatever --num-trials says
        # (a resume that added trials must not be undone by the next plain resume).
        recorded = 1 + max((trial for _, trial in contents.records), default=-1)
        manifest = header.get("manifest")
        # The run keeps its name: its config says the name it was given, as it did before
        # the interruption (a `--run-name` now is not used, and an unnamed run stays so).
        logged = header.get("config")
        name = logged.get("run_name") if isinstance(logged, dict) else None
        config = config.model_copy(update={"run_name": name if isinstance(name, str) else None})
        plan = RunPlan(
            config=config,
            domain=domain,
            tasks=tasks,
            order=order,
            task_hash=digest,
            run_name=str(header.get("run_name") or log_path.stem),
            log_path=log_path,
            existing=contents.records,
            resumed=True,
            source=source,
            domains=domains,
            refs=refs,
            recorded_manifest=manifest if isinstance(manifest, dict) else {},
            replaced=contents.replaced,
        )
        return with_trials(plan, recorded) if recorded > config.num_trials else plan

    log_dir = Path(config.log_dir)
    stem = config.run_name or run_file_stem(
        agent_strategy=config.agent_strategy,
        model=config.model,
        temperature=config.temperature,
        start_index=config.start_index,
        end_index=end,
        user_model="+".join(m.split("/")[-1] for m in config.user_models or [config.user_model]),
        user_strategy=config.user_strategy,
    )
    stem = _free_stem(log_dir, stem)
    return RunPlan(
        config=config,
        domain=domain,
        tasks=tasks,
        order=order,
        task_hash=digest,
        run_name=stem,
        log_path=log_dir / f"{stem}.jsonl",
        source=source,
        domains=domains,
        refs=refs,
    )
