"""`pull_dataset` against a fake upstream (respx) serving local bytes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import httpx
import pytest
import respx

from tau_bench.data import pull as pull_module
from tau_bench.data.download import raw_url
from tau_bench.data.errors import ChecksumError, PullError
from tau_bench.data.paths import DataDirError, missing_files, resolve_data_dir
from tau_bench.data.pinned import PinnedTable, Source, load_pinned, verify_files
from tau_bench.data.pull import pull_dataset
from tau_bench.data.upstream import PINNED_COMMIT, UPSTREAM_REPO
from tests.conftest import DATA_DIR
from tests.tau_bench.data.conftest import RAW_PATTERN, FakeUpstream
from tests.tau_bench.data.fake_upstream import single_file_table, table_for, tasks_source


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _leftovers(parent: Path, dest: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p != dest)


# --------------------------------------------------------------------------- the table


def test_pinned_table_matches_the_pinned_commit_and_layout(real_table):
    assert real_table.commit == PINNED_COMMIT
    assert real_table.repo == UPSTREAM_REPO
    paths = {f.path for f in real_table.files}
    for domain in ("airline", "retail"):
        for name in ("policy.md", "rules.json", "tools.json", "few_shot.jsonl"):
            assert f"{domain}/{name}" in paths
    # Everything the data-dir resolver requires is produced by a pull.
    assert missing_files(DATA_DIR) == []
    from tau_bench.data.paths import REQUIRED_FILES

    assert set(REQUIRED_FILES) <= paths
    assert not any(p.startswith(("conformance/", "historical_trajectories/")) for p in paths)
    for f in real_table.files:
        assert len(f.sha256) == 64
        if f.kind == "verbatim":
            assert f.sources[0].sha256 == f.sha256
        elif f.kind in ("tasks", "rules"):
            assert f.sources[0].sha256 and f.sources[0].path.endswith(".py")
        else:
            assert f.sources[0].path.endswith("tools/__init__.py")


def test_shared_data_matches_pinned_table(real_table):
    assert all(c.ok for c in verify_files(DATA_DIR, real_table))


def test_table_round_trips_through_dict(real_table):
    assert PinnedTable.from_dict(real_table.to_dict()) == real_table


def test_raw_url():
    assert raw_url("a/b.py") == (
        f"https://raw.githubusercontent.com/sierra-research/tau-bench/{PINNED_COMMIT}/a/b.py"
    )


# --------------------------------------------------------------------------- full pull


def test_full_pull_reproduces_the_reference_layout(tmp_path, upstream, fake_table, real_table):
    dest = tmp_path / "cache" / "tau-bench" / "abc"
    with httpx.Client() as client:
        pull_dataset(dest, client=client, progress=False, table=fake_table)

    # Every derived file passes the sha256 checks of the real pinned table …
    checks = verify_files(dest, real_table)
    assert [c.path for c in checks if not c.ok] == []
    # … and equals the shared reference byte for byte; nothing else is written.
    got = _snapshot(dest)
    assert set(got) == {f.path for f in real_table.files}
    for rel, data in got.items():
        assert data == (DATA_DIR / rel).read_bytes(), rel
    assert missing_files(dest) == []
    assert _leftovers(dest.parent, dest) == []
    # Each upstream file was fetched once.
    assert sorted(upstream.requested) == sorted({s.path for s in fake_table.sources()})


def test_pull_with_progress_bar_and_own_client(tmp_path, upstream, fake_table, capsys):
    dest = tmp_path / "data"
    pull_dataset(dest, table=fake_table)  # creates its own httpx client; respx intercepts
    assert missing_files(dest) == []
    captured = capsys.readouterr()
    assert captured.out == ""  # progress goes to stderr


def test_pull_replaces_previous_content(tmp_path, upstream, fake_table):
    dest = tmp_path / "data"
    (dest / "airline").mkdir(parents=True)
    (dest / "stale.txt").write_text("old")
    pull_dataset(dest, progress=False, table=fake_table)
    assert not (dest / "stale.txt").exists()
    assert missing_files(dest) == []
    assert _leftovers(tmp_path, dest) == []


def test_auto_pull_on_first_use(tmp_path, upstream, fake_table, monkeypatch):
    cache = tmp_path / "user-cache" / "tau-bench" / PINNED_COMMIT[:12]
    monkeypatch.delenv("TAU_BENCH_DATA", raising=False)
    monkeypatch.setattr("tau_bench.data.paths.cache_dir", lambda: cache)
    monkeypatch.setattr(pull_module, "load_pinned", lambda: fake_table)
    assert resolve_data_dir() == cache
    assert missing_files(cache) == []
    n = len(upstream.requested)
    assert resolve_data_dir() == cache  # second use: no download
    assert len(upstream.requested) == n


def test_auto_pull_failure_is_a_data_dir_error(tmp_path, upstream, monkeypatch):
    upstream.files.clear()
    cache = tmp_path / "c"
    monkeypatch.delenv("TAU_BENCH_DATA", raising=False)
    monkeypatch.setattr("tau_bench.data.paths.cache_dir", lambda: cache)
    with pytest.raises(DataDirError, match="HTTP 404"):
        resolve_data_dir()
    assert not cache.exists()


# --------------------------------------------------------------------------- checksums


def test_corrupted_verbatim_file(tmp_path, upstream, fake_table):
    path = "tau_bench/envs/airline/data/users.json"
    good = upstream.files[path]
    upstream.files[path] = good.replace(b"mia_li_3668", b"mia_li_3669", 1)
    expected = hashlib.sha256(good).hexdigest()
    actual = hashlib.sha256(upstream.files[path]).hexdigest()
    dest = tmp_path / "data"

    with pytest.raises(ChecksumError) as info:
        pull_dataset(dest, progress=False, table=fake_table)

    message = str(info.value)
    assert path in message and expected in message and actual in message
    assert (info.value.expected, info.value.actual) == (expected, actual)
    assert not dest.exists()
    assert _leftovers(tmp_path, dest) == []


def test_corrupted_file_keeps_previous_content(tmp_path, upstream, fake_table):
    dest = tmp_path / "data"
    pull_dataset(dest, progress=False, table=fake_table)
    before = _snapshot(dest)
    upstream.files["tau_bench/envs/retail/wiki.md"] += b"\nextra"

    with pytest.raises(ChecksumError, match=r"tau_bench/envs/retail/wiki\.md"):
        pull_dataset(dest, progress=False, table=fake_table)

    assert _snapshot(dest) == before
    assert _leftovers(tmp_path, dest) == []


def test_derived_file_is_verified_too(tmp_path, upstream, fake_table):
    """A task source that matches its (test) source hash but reads differently is caught."""
    entry = next(f for f in fake_table.files if f.path == "retail/tasks/dev.json")
    tasks = json.loads((DATA_DIR / entry.path).read_text())
    tasks[3]["actions"][0]["kwargs"]["payment_method_id"] = "paypal_0000000"
    assert entry.variable
    upstream.files[entry.sources[0].path] = tasks_source(tasks, entry.variable).encode()
    table = table_for(upstream.files, fake_table)
    dest = tmp_path / "data"

    with pytest.raises(ChecksumError) as info:
        pull_dataset(dest, progress=False, table=table)

    assert "retail/tasks/dev.json" in str(info.value)
    assert entry.sha256 in str(info.value)
    assert not dest.exists()
    assert _leftovers(tmp_path, dest) == []


def test_tool_schema_change_is_caught(tmp_path, upstream, fake_table):
    path = "tau_bench/envs/airline/tools/think.py"
    upstream.files[path] = upstream.files[path].replace(b"think about", b"ponder")
    table = table_for(upstream.files, fake_table)
    with pytest.raises(ChecksumError, match=r"airline/tools\.json"):
        pull_dataset(tmp_path / "data", progress=False, table=table)
    assert list(tmp_path.iterdir()) == []


def test_real_table_rejects_generated_sources(tmp_path, upstream, real_table):
    """The shipped table pins upstream's own .py bytes, which the generated ones are not."""
    with pytest.raises(ChecksumError, match=r"upstream file tau_bench/envs/airline/rules\.py"):
        pull_dataset(tmp_path / "data", progress=False, table=real_table)
    assert list(tmp_path.iterdir()) == []


def test_unparsable_upstream_source(tmp_path, upstream, fake_table):
    path = "tau_bench/envs/airline/rules.py"
    upstream.files[path] = b"RULES = load_rules()\n"
    table = table_for(upstream.files, fake_table)
    with pytest.raises(PullError, match=r"cannot build airline/rules\.json .*not a literal"):
        pull_dataset(tmp_path / "data", progress=False, table=table)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- HTTP errors


def _one_file_table(real_table: PinnedTable) -> PinnedTable:
    entry = next(f for f in real_table.files if f.path == "airline/policy.md")
    return single_file_table(entry, real_table)


def test_http_404(tmp_path, upstream, fake_table):
    del upstream.files["tau_bench/envs/retail/data/orders.json"]
    with pytest.raises(PullError) as info:
        pull_dataset(tmp_path / "data", progress=False, table=fake_table)
    message = str(info.value)
    assert "HTTP 404" in message and "tau_bench/envs/retail/data/orders.json" in message
    assert "TAU_BENCH_DATA" in message
    assert upstream.requested.count("tau_bench/envs/retail/data/orders.json") == 1  # no retry
    assert list(tmp_path.iterdir()) == []


def test_http_500_is_retried_then_fails(tmp_path, real_table):
    table = _one_file_table(real_table)
    url = raw_url(table.files[0].sources[0].path, table.commit)
    with respx.mock() as router:
        route = router.get(url).mock(return_value=httpx.Response(500))
        with pytest.raises(PullError, match=r"after 4 attempts \(HTTP 500\)"):
            pull_dataset(tmp_path / "data", progress=False, table=table)
    assert route.call_count == 4
    assert list(tmp_path.iterdir()) == []


def test_transient_errors_are_retried(tmp_path, real_table):
    table = _one_file_table(real_table)
    source = table.files[0].sources[0]
    url = raw_url(source.path, table.commit)
    body = (DATA_DIR / "airline/policy.md").read_bytes()
    with respx.mock() as router:
        route = router.get(url).mock(
            side_effect=[
                httpx.ConnectError("connection refused"),
                httpx.Response(503),
                httpx.Response(200, content=body),
            ]
        )
        pull_dataset(tmp_path / "data", progress=False, table=table)
    assert route.call_count == 3
    assert (tmp_path / "data/airline/policy.md").read_bytes() == body


def test_connection_errors_fail_clearly(tmp_path, real_table):
    table = _one_file_table(real_table)
    with respx.mock() as router:
        router.get(url__regex=RAW_PATTERN.pattern).mock(side_effect=httpx.ConnectError("no dns"))
        with pytest.raises(PullError, match=r"ConnectError: no dns.*set TAU_BENCH_DATA"):
            pull_dataset(tmp_path / "data", progress=False, table=table)
    assert list(tmp_path.iterdir()) == []


def test_other_commit_is_requested(tmp_path, real_table):
    table = _one_file_table(real_table)
    other = "0" * 40
    server = FakeUpstream({}, other)
    with respx.mock() as router:
        router.get(url__regex=RAW_PATTERN.pattern).mock(side_effect=server)
        with pytest.raises(PullError, match="HTTP 404"):
            pull_dataset(tmp_path / "d", progress=False, table=table, commit=other)
    assert server.requested == [table.files[0].sources[0].path]


def test_load_pinned_is_packaged():
    table = load_pinned()
    assert isinstance(table.files[0].sources[0], Source)
    assert dataclasses.is_dataclass(table)
