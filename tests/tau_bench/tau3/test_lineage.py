"""Cross-version task identity: the shipped mapping is what the generator recomputes."""

from __future__ import annotations

from pathlib import Path

from tau_bench.tau3.lineage import compute_lineage, lineage_entry, load_lineage
from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.tau3_runs import tau


def test_recomputing_gives_the_shipped_file(data_root: Path) -> None:
    assert compute_lineage(DATA_DIR, data_root) == load_lineage()


def test_every_task_has_one_distinct_v1_counterpart() -> None:
    for domain, entries in load_lineage()["domains"].items():
        matched = [e["v1_index"] for e in entries]
        assert None not in matched, domain
        assert len(set(matched)) == len(matched), domain
    airline = load_lineage()["domains"]["airline"]
    assert len(airline) == 50
    # τ² reordered airline's scenarios: exactly one keeps its index.
    assert [e["tau3_id"] for e in airline if str(e["v1_index"]) == e["tau3_id"]] == ["13"]
    assert all(e["same_user"] for e in airline)


def test_known_pairs() -> None:
    entry = lineage_entry("airline", "12")
    assert entry is not None and entry["v1_index"] == 14
    assert lineage_entry("mock", "create_task_1") is None


def test_tasks_show_prints_the_v1_counterpart() -> None:
    proc = tau("tasks", "show", "tau3/airline/12")
    assert "τ-bench v1 counterpart" in proc.stdout
    assert "airline/14 in v1's test split" in proc.stdout
    assert "actions: 0 added, 0 removed, 0 changed" in proc.stdout
    changed = tau("tasks", "show", "tau3/airline/0").stdout
    assert "airline/49" in changed and "actions:" in changed
    bad = tau("tasks", "show", "7", check=False)
    assert bad.returncode == 2 and "pass --env" in bad.stderr
