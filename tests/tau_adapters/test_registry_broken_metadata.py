"""An installed distribution with a malformed entry_points.txt cannot break `tau`: the
installed console script lists its commands and agents as without it, and names the
broken distribution in one warning line. An unparsable file (a line that is not
`name = value`, a section header without its `]`, bytes that are not UTF-8) made
`importlib.metadata.entry_points` raise for every group: out of pydantic's own plug-in
lookup at the first model class (a traceback from `tau --help`), and out of every
entry-point lookup of tau's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_adapters import registry
from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import tau

UNPARSABLE = {  # the body, what the warning says of it
    "no-equals": (
        b"[tau_adapters]\ngarbage line without equals\n",
        "line 2 is not `name = value`: 'garbage line without equals'",
    ),
    "open-section": (
        b"[console_scripts]\nfoo = bar:baz\n[tau_adapters\nx = y:z\n",
        "line 3 is a section header without its `]`: '[tau_adapters'",
    ),
    "not-utf8": (b"[tau_adapters]\nx = y:z \xff\xfe\n", "entry_points.txt is not UTF-8"),
}
MALFORMED_VALUE = {
    "agent": b"[tau_adapters]\nbroken entry = = =\n",
    "command": b"[tau_adapters.commands]\nbroken entry = = =\n",
    "suite": b"[tau_bench.suites]\nbad = = =\n",
}


def broken_site(root: Path, entry_points: bytes) -> Path:
    """`root` holding one distribution, broken-dist 0.1, with this entry_points.txt."""
    info = root / "broken_dist-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_bytes(entry_points)
    return root


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What `tau --help` and `tau adapters` print with no broken distribution."""
    empty = tmp_path_factory.mktemp("empty")
    return {cmd: tau(empty, cmd).stdout for cmd in ("--help", "adapters")}


def _one_warning(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: "), proc.stderr
    for word in ("broken-dist 0.1", *words):
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(("body", "why"), UNPARSABLE.values(), ids=UNPARSABLE.keys())
def test_an_unparsable_entry_points_file_is_one_warning(
    tmp_path: Path, clean: dict[str, str], body: bytes, why: str
) -> None:
    site = broken_site(tmp_path, body)
    for cmd in ("--help", "adapters"):
        proc = tau(site, cmd)
        _one_warning(proc, why, "its entry points are ignored; pydantic plug-ins are off")
        assert proc.stdout == clean[cmd]


@pytest.mark.parametrize("body", MALFORMED_VALUE.values(), ids=MALFORMED_VALUE.keys())
def test_an_entry_point_that_is_not_module_attribute_is_one_warning(
    tmp_path: Path, clean: dict[str, str], body: bytes
) -> None:
    site = broken_site(tmp_path, body)
    for cmd in ("--help", "adapters"):
        proc = tau(site, cmd)
        _one_warning(proc, "not `module:attribute`", "= = =")
        assert proc.stdout == clean[cmd]


def test_tau_run_works_beside_an_unparsable_distribution(tmp_path: Path) -> None:
    site = broken_site(tmp_path / "site", UNPARSABLE["no-equals"][0])
    args = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy"]
    args += ["scripted", "--task-ids", "13", "--log-dir", str(tmp_path / "logs")]
    proc = tau(site, *args, TAU_BENCH_DATA=str(DATA_DIR))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "broken-dist" in warnings[0], proc.stderr
    assert len(list((tmp_path / "logs").glob("*.jsonl"))) == 1


def test_run_py_works_beside_an_unparsable_distribution(tmp_path: Path) -> None:
    site = broken_site(tmp_path / "site", UNPARSABLE["no-equals"][0])
    repo = Path(__file__).resolve().parents[2]
    args = ["--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]
    args += ["--task-ids", "13", "--log-dir", str(tmp_path / "logs")]
    environ = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{repo}"}
    environ["TAU_BENCH_DATA"] = str(DATA_DIR)
    proc = subprocess.run(
        [sys.executable, str(repo / "run.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        check=False,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "broken-dist" in warnings[0], proc.stderr
    assert len(list((tmp_path / "logs").glob("*.jsonl"))) == 1


def test_lookups_skip_the_broken_distribution_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {ep.name for ep in registry.group_entry_points(registry.GROUP)}
    site = broken_site(tmp_path, UNPARSABLE["no-equals"][0])
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    assert {ep.name for ep in registry.group_entry_points(registry.GROUP)} == before
    assert registry.available() == sorted(before | set(registry._extra))
    [problem] = registry.metadata_problems(["tau_adapters"])
    assert problem.unparsable and "broken-dist" in problem.message
