"""`tau data pull | path | verify` through the real CLI app."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_bench.cli.app import app
from tau_bench.data import pinned as pinned_module
from tau_bench.data.paths import missing_files
from tests.conftest import DATA_DIR, TAU3_DATA_DIR

runner = CliRunner()


def _copy_layout(real_table, dest: Path) -> Path:
    for f in real_table.files:
        (dest / f.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA_DIR / f.path, dest / f.path)
    return dest


def test_data_group_is_registered():
    result = runner.invoke(app, ["data", "--help"])
    assert result.exit_code == 0
    for command in ("pull", "path", "verify"):
        assert command in result.output


def test_path_prefers_data_dir_then_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU_BENCH_DATA", str(DATA_DIR))
    result = runner.invoke(app, ["data", "path"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(DATA_DIR)

    other = tmp_path / "copy"
    shutil.copytree(DATA_DIR / "airline", other / "airline")
    shutil.copytree(DATA_DIR / "retail", other / "retail")
    result = runner.invoke(app, ["data", "path", "--data-dir", str(other)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(other)


def test_path_without_data_does_not_download(tmp_path, monkeypatch):
    monkeypatch.delenv("TAU_BENCH_DATA", raising=False)
    monkeypatch.setattr("tau_bench.data.paths.cache_dir", lambda: tmp_path / "cache")
    result = runner.invoke(app, ["data", "path"])
    assert result.exit_code == 2
    assert "tau data pull" in result.stderr
    assert not (tmp_path / "cache").exists()


def test_path_rejects_non_data_dir(tmp_path):
    result = runner.invoke(app, ["data", "path", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a τ-bench data directory" in result.stderr


def test_verify_ok(real_table):
    result = runner.invoke(app, ["data", "verify", "--data-dir", str(DATA_DIR)])
    assert result.exit_code == 0, result.output
    for f in real_table.files:
        assert f.path in result.stdout
    assert "mismatch" not in result.stdout
    assert f"all {len(real_table.files)} files match" in result.stderr


def test_verify_reports_mismatch_and_missing(tmp_path, real_table):
    root = _copy_layout(real_table, tmp_path / "data")
    (root / "retail/policy.md").write_text("changed\n")
    (root / "airline/few_shot.jsonl").unlink()
    result = runner.invoke(app, ["data", "verify", "--data-dir", str(root)])
    assert result.exit_code == 2
    assert "mismatch" in result.stdout and "missing" in result.stdout
    assert "2 of" in result.stderr
    assert "retail/policy.md (mismatch)" in result.stderr
    assert "airline/few_shot.jsonl (missing)" in result.stderr


def test_tau3_data_is_found_and_verified_with_suite_tau3(tmp_path, monkeypatch):
    """`tau data verify --suite tau3` was "No such option": τ³ data could not be checked."""
    from tau_bench.data.tau3_pull import load_manifest

    monkeypatch.setenv("TAU3_BENCH_DATA", str(TAU3_DATA_DIR))
    result = runner.invoke(app, ["data", "path", "--suite", "tau3"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(TAU3_DATA_DIR)

    manifest = load_manifest()
    copy = tmp_path / "tau3"
    for entry in manifest.files:
        (copy / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TAU3_DATA_DIR / entry["path"], copy / entry["path"])
    (copy / manifest.files[0]["path"]).write_text("changed\n")
    result = runner.invoke(app, ["data", "verify", "--suite", "tau3", "--data-dir", str(copy)])
    assert result.exit_code == 2
    every = len(manifest.files) + len(manifest.prompts) + len(manifest.derived)
    assert f"of {every} files do not match the pinned sha256" in result.stderr
    assert f"{manifest.files[0]['path']} (mismatch)" in result.stderr
    for entry in manifest.files[1:]:
        assert entry["path"] in result.stdout


def test_an_unknown_suite_is_one_line():
    result = runner.invoke(app, ["data", "verify", "--suite", "tau4"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: unknown suite 'tau4' (available: tau-bench, tau3)"


@pytest.fixture
def cli_table(monkeypatch, fake_table):
    """The CLI loads the shipped table; point it at the test table (generated .py hashes)."""
    monkeypatch.setattr(pinned_module, "load_pinned", lambda: fake_table)
    return fake_table


def test_pull_to_dest_then_up_to_date_then_force(tmp_path, upstream, cli_table):
    dest = tmp_path / "data"
    result = runner.invoke(app, ["data", "pull", "--dest", str(dest)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(dest)
    assert missing_files(dest) == []
    fetched = len(upstream.requested)

    result = runner.invoke(app, ["data", "pull", "--dest", str(dest)])
    assert result.exit_code == 0, result.output
    assert "already up to date" in result.stderr
    assert len(upstream.requested) == fetched

    result = runner.invoke(app, ["data", "pull", "--dest", str(dest), "--force"])
    assert result.exit_code == 0, result.output
    assert len(upstream.requested) == 2 * fetched

    result = runner.invoke(app, ["data", "verify", "--data-dir", str(dest)])
    assert result.exit_code == 0, result.output


def test_pull_default_dest_is_the_cache(tmp_path, upstream, cli_table, monkeypatch):
    cache = tmp_path / "cache" / "tau-bench" / "59a200c6d575"
    monkeypatch.setattr("tau_bench.data.paths.cache_dir", lambda: cache)
    result = runner.invoke(app, ["data", "pull"])
    assert result.exit_code == 0, result.output
    assert missing_files(cache) == []


def test_pull_refuses_to_replace_other_content(tmp_path, upstream, cli_table):
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["data", "pull", "--dest", str(dest)])
    assert result.exit_code == 2
    assert "--force" in result.stderr
    assert (dest / "notes.txt").read_text() == "keep me"
    assert upstream.requested == []


def test_pull_checksum_error_is_reported(tmp_path, upstream, cli_table):
    upstream.files["tau_bench/envs/airline/wiki.md"] = b"tampered\n"
    dest = tmp_path / "data"
    result = runner.invoke(app, ["data", "pull", "--dest", str(dest)])
    assert result.exit_code == 2
    assert "checksum mismatch" in result.stderr
    assert "tau_bench/envs/airline/wiki.md" in result.stderr
    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []
