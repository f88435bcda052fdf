"""A broken or impostor `tau_adapters.commands` plug-in costs only its own command: the
built-in commands and the other plug-ins keep working (the installed `tau`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tau_adapters.plugin_dist import make_plugin_site, one_error_line, tau

PKG = "evilcmds"
ENTRY_POINTS = f"""[tau_adapters.commands]
zzbroken = {PKG}.raises:app
zzsyntax = {PKG}.syntax:app
zzgood = {PKG}.good:app
run = {PKG}.good:app
http = {PKG}.good:app
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_plugin_site(tmp_path_factory.mktemp("commands"), PKG, ENTRY_POINTS)


def test_help_lists_the_commands_and_warns_about_the_broken_ones(site: Path) -> None:
    proc = tau(site, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    for command in ("run", "adapters", "tasks", "zzgood"):
        assert command in proc.stdout
    warnings = proc.stderr.strip().splitlines()
    assert all(line.startswith("warning: ") for line in warnings), proc.stderr
    assert "\x1b" not in proc.stderr
    text = "\n".join(warnings)
    assert f"'zzbroken' of evil-plugins ({PKG}.raises:app) failed to load: RuntimeError" in text
    assert "'zzsyntax'" in text and "SyntaxError" in text
    assert f"'run' of evil-plugins ({PKG}.good:app) is not registered" in text
    assert f"'http' of evil-plugins ({PKG}.good:app) is not registered" in text


def test_builtin_commands_do_not_import_plugins(site: Path) -> None:
    proc = tau(site, "adapters")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "oracle" in proc.stdout.split()


def test_a_plugin_cannot_take_over_tau_run(site: Path) -> None:
    proc = tau(site, "run", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--env" in proc.stdout and "--agent-strategy" in proc.stdout
    assert "PLUGIN" not in proc.stdout
    hijack = tau(site, "run", "go")
    assert "PLUGIN GO" not in hijack.stdout
    assert hijack.returncode == 2 and "Traceback" not in hijack.stderr


def test_a_plugin_cannot_take_over_a_builtin_plugin_command(site: Path) -> None:
    proc = tau(site, "http", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "HTTP" in proc.stdout and "A plug-in command" not in proc.stdout


def test_invoking_a_broken_plugin_is_one_line(site: Path) -> None:
    one_error_line(
        tau(site, "zzbroken", "anything", "--flag"),
        "'zzbroken'",
        f"{PKG}.raises:app",
        "RuntimeError: import failed on purpose",
    )
    one_error_line(tau(site, "zzsyntax"), "'zzsyntax'", "SyntaxError")


def test_a_working_plugin_still_runs(site: Path) -> None:
    proc = tau(site, "zzgood", "go")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "PLUGIN GO" and proc.stderr == ""
