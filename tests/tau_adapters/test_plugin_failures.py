"""A broken agent-strategy plug-in is one `error:` line naming it (exit 2), never a
traceback, and never replaces a built-in strategy of the same name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tau_adapters import registry
from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import make_plugin_site, one_error_line, tau

PKG = "evilstrat"
ENTRY_POINTS = f"""[tau_adapters]
evil-missing-attr = {PKG}.good:nope
evil-bad-import = {PKG}.raises:build
evil-syntax = {PKG}.syntax:build
evil-build = {PKG}.good:build
oracle = {PKG}.good:build
"""
RUN = ["--env", "airline", "--user-strategy", "scripted", "--task-ids", "13"]
BROKEN = [
    ("evil-missing-attr", f"{PKG}.good:nope", "AttributeError"),
    ("evil-bad-import", f"{PKG}.raises:build", "RuntimeError: import failed on purpose"),
    ("evil-syntax", f"{PKG}.syntax:build", "SyntaxError"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_plugin_site(tmp_path_factory.mktemp("plugins"), PKG, ENTRY_POINTS)


@pytest.mark.parametrize(("name", "value", "error"), BROKEN)
def test_tau_adapters_names_a_plugin_that_fails_to_load(
    site: Path, name: str, value: str, error: str
) -> None:
    one_error_line(tau(site, "adapters", name), f"agent strategy {name!r}", value, error)


@pytest.mark.parametrize(("name", "value", "error"), BROKEN)
def test_tau_run_names_a_plugin_that_fails_to_load(
    site: Path, tmp_path: Path, name: str, value: str, error: str
) -> None:
    proc = tau(
        site,
        "run",
        "--agent-strategy",
        name,
        *RUN,
        "--log-dir",
        str(tmp_path),
        TAU_BENCH_DATA=str(DATA_DIR),
    )
    one_error_line(proc, repr(name), value, error)


def test_a_builder_raising_anything_is_one_line_without_the_secret(
    site: Path, tmp_path: Path
) -> None:
    secret, token = "zzBUILDSECRETzz123", "zzENVTOKENzz456"
    proc = tau(
        site,
        "run",
        "--agent-strategy",
        "evil-build",
        *RUN,
        "--agent-option",
        f"api_key={secret}",
        "--log-dir",
        str(tmp_path),
        TAU_BENCH_DATA=str(DATA_DIR),
        EVIL_TOKEN=token,
    )
    line = one_error_line(proc, "'evil-build'", f"{PKG}.good:build", "RuntimeError: boom in build")
    assert secret not in proc.stderr + proc.stdout, line
    assert token not in proc.stderr + proc.stdout, line


def test_a_plugin_named_like_a_builtin_strategy_does_not_replace_it(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Last on sys.path: a name -> entry point table filled in order would let it win.
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    from tau_bench.agents import oracle

    assert registry.load_builder("oracle") is oracle.build
    (shadowed, winner), *_ = [(s, w) for s, w in registry.shadowed() if s.name == "oracle"]
    assert shadowed.value == f"{PKG}.good:build"
    assert winner.value == "tau_bench.agents.oracle:build"


def test_tau_adapters_notes_the_shadowed_plugin(site: Path) -> None:
    proc = tau(site, "adapters")
    assert proc.returncode == 0, proc.stderr
    assert "oracle" in proc.stdout.split()
    notes = [line for line in proc.stderr.splitlines() if "'oracle'" in line]
    assert notes and notes[0].startswith("note: "), proc.stderr
    assert f"{PKG}.good:build" in notes[0] and "shadowed" in notes[0]
