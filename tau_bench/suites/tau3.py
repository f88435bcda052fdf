"""τ³-bench (sierra-research/tau2-bench 1.0.1) as a suite: `tau3/airline`, `tau3/retail`, ...

Its implementation is `tau_bench.tau3` (environment, evaluator, tasks, replay); this
module presents it behind the seam (`tau_bench.suites.base`): a `Tau3Domain` per domain
and data root, task sets and splits as upstream (`base` the default, `train`/`test` from
`split_tasks.json`), an episode environment (`tau_bench.suites.tau3_env.Tau3Env`) and
an NL-assertion judge chosen per run (`for_run`; `--judge-model`, `assume-met` offline).
Domains the core registers later (telecom) appear here without changes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tau_bench.errors import TaskFileError, UnknownDomainError, UnknownSplitError
from tau_bench.suites.tau3_env import Tau3Env, Tau3Reward, Tau3Task
from tau_bench.task_files import read_task_records
from tau_bench.tau3 import domain as core
from tau_bench.tau3.data import PINNED_COMMIT, UPSTREAM_REPO, resolve_tau3_data_dir
from tau_bench.tau3.judge import AssumeMetJudge
from tau_bench.tau3.replay import Replay, replay_task
from tau_bench.tau3.tasks import Task, load_splits, load_tasks

__all__ = ["ASSUME_MET", "DEFAULT_JUDGE_MODEL", "SUITE", "Tau3Domain", "Tau3Suite", "make_judge"]

ASSUME_MET = "assume-met"
DEFAULT_JUDGE_MODEL = "gpt-4.1-2025-04-14"
"""The original's NL-assertion judge (`DEFAULT_LLM_NL_ASSERTIONS`, temperature 0)."""
_STANDARD = ("airline", "retail", "mock", "telecom", "telecom-workflow")


def make_judge(model: str | None, options: dict[str, Any] | None = None) -> Any:
    """The NL judge for `--judge-model`: `assume-met`, or an LLM judge (default model)."""
    if model == ASSUME_MET:
        return AssumeMetJudge()
    from tau_bench.tau3.llm_judge import LLMJudge

    return LLMJudge(model or DEFAULT_JUDGE_MODEL, **(options or {}))


@dataclass
class VerifiedTau3:
    """One task's ground-truth replay (`tau_bench.suites.base.Verified`)."""

    task_id: int
    task: Tau3Task
    replay: Replay
    reward: Tau3Reward | None
    error: str | None = None


class Tau3Domain:
    """One τ³ domain over a data root, with the run's NL judge."""

    suite = "tau3"
    terminate_tools: frozenset[str] = frozenset()

    def __init__(self, loaded: core.LoadedDomain, judge: Any = None) -> None:
        self.loaded = loaded
        self.name = f"tau3/{loaded.name}"
        self.tool_schemas: list[dict[str, Any]] = loaded.tool_schemas()
        self.policy: str = loaded.policy()
        self.judge: Any = judge if judge is not None else make_judge(None)
        self._tasks: dict[str, list[Tau3Task]] = {}
        self._lock = threading.Lock()

    @property
    def judge_name(self) -> str:
        return str(getattr(self.judge, "name", None) or getattr(self.judge, "model", "judge"))

    @property
    def root(self) -> Path:
        return self.loaded.root

    @property
    def user_tool_schemas(self) -> list[dict[str, Any]] | None:
        return self.loaded.user_tool_schemas()

    # -- per-run options ---------------------------------------------------------------
    def with_judge(self, judge: Any) -> Tau3Domain:
        """This domain with another NL judge (tasks are shared, not reloaded)."""
        other = Tau3Domain.__new__(Tau3Domain)
        other.__dict__.update(self.__dict__)
        other.judge = judge
        return other

    def for_run(self, config: Any) -> Tau3Domain:
        """The domain as run `config` uses it: its `judge_model` judges NL assertions."""
        model = getattr(config, "judge_model", None)
        return self.with_judge(make_judge(model, {"root": self.root}))

    # -- tasks -------------------------------------------------------------------------
    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(load_splits(self.root, self.loaded.name))

    @property
    def default_split(self) -> str:
        return "base"

    def tasks(self, split: str | None = None) -> list[Tau3Task]:
        split = split or self.default_split
        with self._lock:
            if split not in self._tasks:
                if split not in self.splits:
                    raise UnknownSplitError(
                        f"unknown task split {split!r} for {self.name} "
                        f"(available: {', '.join(self.splits)})"
                    )
                found = load_tasks(self.root, self.loaded.name, split)
                self._tasks[split] = [Tau3Task(t) for t in found]
            return self._tasks[split]

    def load_tasks_file(self, path: Path) -> list[Tau3Task]:
        """τ³ tasks from a file: a JSON array (as upstream's `tasks.json`), `{"tasks": [...]}`,
        or JSON lines (what `tau sdg generate` writes); a bad file is one `TaskFileError`."""
        tasks = []
        for i, item in enumerate(read_task_records(Path(path))):
            if not isinstance(item, dict):
                raise TaskFileError(f"{path}: task {i}: expected a JSON object (a τ³ task)")
            try:
                tasks.append(Tau3Task(Task.from_dict(item)))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise TaskFileError(f"{path}: task {i}: {where}: {first['msg']}") from None
        return tasks

    def task_by_id(self, task_id: str, split: str | None = None) -> tuple[int, Tau3Task]:
        """(index, task) of the task whose τ³ id is `task_id` in `split`."""
        for i, task in enumerate(self.tasks(split)):
            if task.id == task_id:
                return i, task
        raise UnknownSplitError(f"no task {task_id!r} in {self.name}/{split or 'base'}")

    # -- episodes ----------------------------------------------------------------------
    def new_env(self, task: Any = None, *, deterministic_ids: bool = False) -> Tau3Env:
        """A fresh episode environment with `task`'s initial state applied."""
        if task is not None and not isinstance(task, Tau3Task):
            task = Tau3Task(task) if isinstance(task, Task) else task
        return Tau3Env(self, task, deterministic_ids=deterministic_ids)

    def data_version(self) -> dict[str, Any]:
        return {
            "suite": "tau3",
            "upstream_repo": UPSTREAM_REPO,
            "commit": PINNED_COMMIT,
            "data_dir": str(self.root),
            "domain": self.loaded.name,
        }

    def verify(self, tasks: Sequence[Any], *, with_hashes: bool = False) -> list[VerifiedTau3]:
        """Replay each task's expected actions and communicate message, then evaluate
        (`with_hashes`: keep the DB hashes before and after each action, e.g. to tell
        whether the actions change anything)."""
        out = []
        for i, task in enumerate(tasks):
            replay = replay_task(self.loaded, task.task, self.judge, with_hashes=with_hashes)
            ev = replay.evaluation
            reward = None
            if ev is not None:
                reward = Tau3Reward(ev.reward, ev, "agent_stop", self.judge_name)
            out.append(VerifiedTau3(i, task, replay, reward, replay.error))
        return out


class Tau3Suite:
    """τ³-bench: domains are spelled `tau3/<name>` on the command line."""

    name = "tau3"
    prefix = "tau3/"
    default_split = "base"

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], Tau3Domain] = {}
        self._lock = threading.Lock()

    def domain_names(self) -> tuple[str, ...]:
        names = []
        for name in _STANDARD:
            try:
                core.get_domain(name)
            except Exception:  # a domain whose package is absent or not importable
                continue
            names.append(name)
        return tuple(names)

    def load_domain(self, name: str, data_dir: str | Path | None = None) -> Tau3Domain:
        if name not in self.domain_names():
            raise UnknownDomainError(f"unknown env 'tau3/{name}'")
        root = resolve_tau3_data_dir(data_dir).resolve()
        key = (name, str(root))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = Tau3Domain(core.load_domain(name, root))
            return self._cache[key]


SUITE = Tau3Suite()
