"""A third-party suite plug-in that fails to import (with anything but ImportError) or
is not a suite costs only itself: `tau run` on the built-in suites works beside it and
names it in one warning line, where it gave a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import tau

BROKEN = {
    "raises": ("raise RuntimeError('suite data missing')", "failed to load (RuntimeError"),
    "not-a-suite": ("SUITE = 42", "is not a suite"),
    "names-not-a-tuple": (
        "class S:\n    prefix = 'x/'\n    def domain_names(self):\n        return 7\n"
        "    def load_domain(self, name, data_dir=None):\n        raise KeyError(name)\n"
        "SUITE = S()",
        "`domain_names()` must give a tuple",
    ),
    "domain-names-raise": (
        "class S:\n    prefix = 'x/'\n    def domain_names(self):\n        raise ValueError('no')\n"
        "SUITE = S()",
        "failed to load (ValueError: no)",
    ),
}


def suite_site(root: Path, source: str) -> Path:
    """`root` holding module `broken_suite` (`source`) registered as suite `broken`."""
    (root / "broken_suite.py").write_text(textwrap.dedent(source) + "\n")
    info = root / "broken_suite-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-suite\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tau_bench.suites]\nbroken = broken_suite:SUITE\n")
    return root


@pytest.mark.parametrize(("source", "why"), BROKEN.values(), ids=BROKEN.keys())
def test_tau_run_works_beside_a_broken_suite_plugin(tmp_path: Path, source: str, why: str) -> None:
    (tmp_path / "site").mkdir()
    site = suite_site(tmp_path / "site", source)
    args = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy"]
    args += ["scripted", "--task-ids", "13", "--log-dir", str(tmp_path / "logs")]
    proc = tau(site, *args, TAU_BENCH_DATA=str(DATA_DIR))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, proc.stderr
    assert "suite plug-in broken (broken_suite:SUITE)" in warnings[0] and why in warnings[0]
    assert len(list((tmp_path / "logs").glob("*.jsonl"))) == 1
