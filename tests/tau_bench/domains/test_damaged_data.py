"""A damaged v1 data directory (policy not UTF-8, a DB table, tool schema or rules file of
the wrong shape) is one line naming the file and exit 2 in `tau run` and `tau tasks`,
never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.data.errors import DataDirError
from tau_bench.domains import load_domain
from tests.conftest import DATA_DIR
from tests.tau_bench.data.mirror import mirror_except

TAU = str(Path(sys.executable).parent / "tau")

CASES = {
    "policy-not-utf8": ("airline/policy.md", b"\xff\xfe policy", "policy.md is not UTF-8 text"),
    "table-not-object": (
        "airline/db/users.json",
        b"[1, 2, 3]\n",
        "users.json is not a JSON object of records keyed by id",
    ),
    "tools-not-list": ("airline/tools.json", b'{"type": "function"}', "not a JSON array of tool"),
    "tool-without-name": (
        "airline/tools.json",
        b'[{"type": "function", "function": {"description": "x"}}]',
        "tools.json entry 0 is not a function schema with a name",
    ),
    "rules-not-strings": ("airline/rules.json", b"[1]", "rules.json is not a JSON list of strings"),
}


def _damaged(tmp_path: Path, case: str) -> tuple[Path, str]:
    rel, content, problem = CASES[case]
    root = tmp_path / "data"
    mirror_except(DATA_DIR, root, rel).write_bytes(content)
    return root, problem


@pytest.mark.parametrize("case", sorted(CASES))
def test_load_domain_raises_one_data_dir_error(tmp_path: Path, case: str) -> None:
    root, problem = _damaged(tmp_path, case)
    with pytest.raises(DataDirError, match=problem) as caught:
        load_domain("airline", root)
    assert str(root) in str(caught.value) and "\n" not in str(caught.value)


def _tau(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [TAU, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_installed_cli_says_one_line_and_exits_2(tmp_path: Path, case: str) -> None:
    root, problem = _damaged(tmp_path, case)
    data = ["--env", "airline", "--data-dir", str(root)]
    oracle = ["--agent-strategy", "oracle", "--user-strategy", "scripted", "--task-ids", "1"]
    for args in (
        ["run", *data, *oracle, "--log-dir", str(tmp_path / "logs")],
        ["tasks", "list", *data],
        ["tasks", "show", "1", *data],
        ["tasks", "verify", *data],
    ):
        proc = _tau(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0], (
            args,
            proc.stderr,
        )
