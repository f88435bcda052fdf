"""The shipped known-issue registry validates and names only tasks that exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_bench.tau3.known_issues import (
    KnownIssue,
    known_failing_in_original,
    load_registry,
    registry_for_env,
    split_task_key,
)
from tau_bench.tau3.tasks import load_tasks


def test_registry_validates_and_every_entry_names_an_existing_task(data_root: Path) -> None:
    registry = load_registry("tau3")
    assert registry.version == "1.0.1"
    assert registry.entries
    ids = {d: {t.id for t in load_tasks(data_root, d, None)} for d in registry.domains()}
    for entry in registry.entries:
        if entry.whole_domain:
            continue
        missing = set(entry.task_ids) - ids[entry.domain]
        assert not missing, f"{entry.id}: no such {entry.domain} task(s) {sorted(missing)}"
        assert entry.source.link(), entry.id
        if entry.source.type == "tracker":
            assert entry.source.url and entry.source.url.startswith(
                "https://github.com/sierra-research/tau2-bench/issues/"
            )


def test_upstream_task_issues_are_all_recorded(data_root: Path) -> None:
    """Every `issues` record in the upstream task files has a registry entry."""
    registry = load_registry("tau3")
    for domain in ("airline", "retail", "mock"):
        raw = json.loads(
            (data_root / "data/tau2/domains" / domain / "tasks.json").read_text("utf-8")
        )
        for task in raw:
            for issue in task.get("issues") or []:
                hits = [
                    e
                    for e in registry.issues_for(domain, task["id"])
                    if e.source.type == "upstream_task_issues" and issue["id"] in e.source.ref
                ]
                assert hits, f"{domain} task {task['id']}: upstream issue {issue['id']} missing"


def test_known_failing_in_original_are_the_two_mock_tasks(data_root: Path) -> None:
    failing = known_failing_in_original("tau3/mock")
    assert set(failing) == {
        "update_task_with_user_tools",
        "update_task_with_history_and_env_assertions",
    }
    # ...and the original really scored them below 1.0 (conformance vectors).
    lines = (data_root / "conformance" / "mock.jsonl").read_text("utf-8").splitlines()
    rewards = {r["task_id"]: r["evaluation"]["reward"] for r in map(json.loads, lines)}
    assert {t for t, r in rewards.items() if r != 1.0} == set(failing)
    assert known_failing_in_original("airline") == {}


def test_excluded_and_weak_signal_kinds() -> None:
    registry = load_registry("tau3")
    for tid in ("6", "7", "9", "35"):
        assert any(e.excludes for e in registry.issues_for("airline", tid)), tid
    # only a weak-signal note (#224): kept in the clean subset
    notes = registry.issues_for("airline", "0")
    assert notes and not any(e.excludes for e in notes)
    assert {e.kind for e in notes} == {"weak_signal"}


def test_459_covers_every_telecom_task_of_every_set_and_the_workflow_variant(
    data_root: Path,
) -> None:
    """tau2-bench #459: no telecom task scores the DB, so collateral DB writes go unseen."""
    registry = load_registry("tau3")
    raw = json.loads((data_root / "data/tau2/domains/telecom/tasks.json").read_text("utf-8"))
    assert raw and all("DB" not in t["evaluation_criteria"]["reward_basis"] for t in raw)
    for task in (raw[0], raw[-1]):
        for domain in ("telecom", "telecom-workflow"):
            (entry,) = registry.issues_for(domain, task["id"])
            assert entry.id == "tau2-bench#459" and not entry.excludes
    assert registry.issues_for("telecom", "no such task")  # the whole domain, by design
    assert not any(e.id == "tau2-bench#459" for e in registry.issues_for("retail", "0"))


def test_wildcard_must_stand_alone() -> None:
    good = load_registry("tau3").entries[0].model_dump()
    with pytest.raises(ValueError, match="every task"):
        KnownIssue.model_validate({**good, "task_ids": ["*", "1"]})


def test_env_and_task_keys() -> None:
    assert registry_for_env("airline") is None
    assert registry_for_env(None) is None
    assert registry_for_env("tau3/retail") is load_registry("tau3")
    assert split_task_key("tau3/airline/12") == ("tau3/airline", "12")
    assert split_task_key(12, "tau3/retail") == ("tau3/retail", "12")
    assert split_task_key(3, "tau3/retail,tau3/airline") == (None, "3")


def test_entries_refuse_unknown_fields_and_kinds() -> None:
    good = load_registry("tau3").entries[0].model_dump()
    with pytest.raises(ValueError):
        KnownIssue.model_validate({**good, "kind": "maybe"})
    with pytest.raises(ValueError):
        KnownIssue.model_validate({**good, "extra": 1})
    with pytest.raises(ValueError):
        KnownIssue.model_validate({**good, "task_ids": []})
