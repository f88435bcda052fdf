"""The known-issue registry: which τ³ tasks are known to be broken, and who says so.

Why: a published τ³ score includes tasks that no agent can pass (they fail in the
original) or that score correct agents wrong (tracker reports, the upstream `issues` of
`tasks.json`). Summaries show the official score and the score on the *clean subset*
(tasks with no issue of an excluding kind) side by side; see `tau_bench.analysis.clean_subset`.

The registry is package data, one JSON file per suite version (`tau3-1.0.1.json`): each
entry names a domain, its task ids (the task file's `id`s, or `["*"]` for an issue of the
whole domain: every task of every task set), a `kind` and its `source` (a tracker link,
the upstream task-issue record, or the conformance vectors). A policy variant shares its
domain's entries (`telecom-workflow` runs telecom's tasks). Kinds:

* `fails_in_original` — the original's own ground truth does not score 1.0;
* `broken` — the task's data can mis-score an agent;
* `weak_signal` — scores as designed but full reward does not need what the task is
  about; listed, kept in the clean subset.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "EXCLUDING_KINDS",
    "IssueSource",
    "KnownIssue",
    "Registry",
    "RegistryError",
    "known_failing_in_original",
    "load_registry",
    "registry_for_env",
    "split_task_key",
]

SUITES = {"tau3": "1.0.1"}
EXCLUDING_KINDS = frozenset({"fails_in_original", "broken"})
ALL_TASKS = "*"

Kind = Literal["fails_in_original", "broken", "weak_signal"]


class RegistryError(ValueError):
    """The registry file is missing or does not validate."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IssueSource(_Strict):
    """Where an entry comes from: a tracker issue, an upstream task-issue record, a vector."""

    type: Literal["tracker", "upstream_task_issues", "conformance"]
    url: str | None = None
    ref: str = ""

    def link(self) -> str:
        return self.url or self.ref


class KnownIssue(_Strict):
    id: str
    domain: str
    task_ids: list[str] = Field(min_length=1)
    kind: Kind
    summary: str
    source: IssueSource

    @field_validator("task_ids")
    @classmethod
    def _wildcard_alone(cls, ids: list[str]) -> list[str]:
        if ALL_TASKS in ids and len(ids) > 1:
            raise ValueError(f'"{ALL_TASKS}" (every task) cannot be listed with task ids')
        return ids

    @property
    def whole_domain(self) -> bool:
        return self.task_ids == [ALL_TASKS]

    @property
    def excludes(self) -> bool:
        """True when the task leaves the clean subset."""
        return self.kind in EXCLUDING_KINDS

    def covers(self, domain: str, task_id: str) -> bool:
        return self.domain == _task_domain(domain) and (
            self.whole_domain or str(task_id) in self.task_ids
        )


class Registry(_Strict):
    suite: str
    version: str
    upstream_commit: str
    kinds: dict[str, str]
    entries: list[KnownIssue]

    @property
    def label(self) -> str:
        return f"{self.suite} {self.version}"

    def issues_for(self, domain: str, task_id: str) -> list[KnownIssue]:
        """Every entry about task `task_id` of `domain` (plain domain name: `airline`)."""
        return [e for e in self.entries if e.covers(domain, task_id)]

    def domains(self) -> list[str]:
        return sorted({e.domain for e in self.entries})


@cache
def load_registry(suite: str = "tau3", version: str | None = None) -> Registry:
    """The shipped registry of `suite` at `version` (default: the version we implement)."""
    version = version or SUITES.get(suite)
    if version is None:
        raise RegistryError(f"no known-issue registry for suite {suite!r}")
    name = f"{suite}-{version}.json"
    try:
        text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"known-issue registry {name} is not installed") from None
    try:
        return Registry.model_validate(json.loads(text))
    except ValueError as exc:
        raise RegistryError(f"known-issue registry {name} is invalid: {exc}") from None


def _task_domain(name: str) -> str:
    """The domain whose tasks `name` runs: a policy variant maps to its data folder
    (`telecom-workflow` → `telecom`); unknown names stay as they are."""
    from tau_bench.tau3.domain import get_domain

    try:
        return get_domain(name).subdir
    except (KeyError, ValueError):
        return name


def split_task_key(task_id: object, env: str | None = None) -> tuple[str | None, str]:
    """(suite domain, task id) of a results record: `"tau3/airline/12"` → (`tau3/airline`,
    `"12"`); a plain id takes the run's `env` (when it names one domain)."""
    text = str(task_id)
    if "/" in text:
        prefix, _, tid = text.rpartition("/")
        return prefix, tid
    single = env if env and "," not in env else None
    return single, text


def registry_for_env(env: str | None) -> Registry | None:
    """The registry of an env like `tau3/airline`; None for suites without one (v1)."""
    if not env or "/" not in env:
        return None
    suite = env.split("/", 1)[0]
    if suite not in SUITES:
        return None
    return load_registry(suite)


def known_failing_in_original(domain: str) -> dict[str, KnownIssue]:
    """Task id → entry for τ³ `domain` tasks whose ground truth fails in the original;
    `tau tasks verify --env tau3/<domain>` lists these as known failing, not as errors."""
    name = domain.split("/", 1)[1] if domain.startswith("tau3/") else domain
    registry = load_registry("tau3")
    return {
        t: e
        for e in registry.entries
        if e.domain == _task_domain(name) and e.kind == "fails_in_original"
        for t in e.task_ids
    }
