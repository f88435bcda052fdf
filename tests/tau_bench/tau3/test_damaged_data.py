"""A damaged or incomplete τ³ data directory is one `DataDirError` naming the file (and
what is wrong); the installed `tau run` / `tau tasks` print it on one line and exit 2,
never a traceback. Each case damages one file of a symlinked copy of the τ³ data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tau_bench.data.errors import DataDirError
from tau_bench.suites.tau3 import Tau3Suite
from tau_bench.tau3.tasks import load_tasks
from tests.tau_bench.data.mirror import mirror_except
from tests.tau_bench.tau3.conftest import require_data

TAU = str(Path(sys.executable).parent / "tau")
DOMAINS = "data/tau2/domains"
DIR = object()  # "make the file a directory"

# case -> (domain, file under the data root, its new content (None: absent), error text)
CASES: dict[str, tuple[str, str, object, str]] = {
    "db-missing": ("airline", f"{DOMAINS}/airline/db.json", None, "db.json: No such file"),
    "tools-missing": ("airline", "airline/tools.json", None, "tools.json: No such file"),
    "db-not-json": ("airline", f"{DOMAINS}/airline/db.json", b'{"x":', "db.json is not valid JSON"),
    "db-not-object": (
        "airline",
        f"{DOMAINS}/airline/db.json",
        b"[1]",
        "db.json is not a JSON object of tables",
    ),
    "db-table-missing": (
        "airline",
        f"{DOMAINS}/airline/db.json",
        b'{"flights": {}, "users": {}}',
        "db.json has no table 'reservations'",
    ),
    "db-record-invalid": (
        "retail",
        f"{DOMAINS}/retail/db.json",
        b'{"products": {}, "users": {"u1": {"name": 5}}, "orders": {}}',
        "db.json does not hold a valid database (users.u1: ",
    ),
    "tools-not-array": ("airline", "airline/tools.json", b"{}", "tools.json is not a JSON array"),
    "split-not-lists": (
        "airline",
        f"{DOMAINS}/airline/split_tasks.json",
        b'{"base": 5}',
        "split_tasks.json is not a JSON object of split names to lists of task ids",
    ),
    "split-too-deep": (
        "airline",
        f"{DOMAINS}/airline/split_tasks.json",
        b"[" * 50_000 + b"]" * 50_000,
        "split_tasks.json is not valid JSON (nested too deep)",
    ),
    "tasks-a-directory": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        DIR,
        "tasks.json is a directory, not a file",
    ),
    "tasks-not-array": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        b'{"tasks": 5}',
        "tasks.json is not a JSON array of tasks",
    ),
    "task-invalid": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        b'[{"id": "0", "user_scenario": {"instructions": "x"}, "evaluation_criteria": 5}]',
        "tasks.json has an invalid task '0' (evaluation_criteria: ",
    ),
    "mock-db-invalid": (
        "mock",
        f"{DOMAINS}/mock/db.json",
        b'{"tasks": 5}',
        "db.json does not hold a valid database (tasks: ",
    ),
    "policy-not-utf8": (
        "airline",
        f"{DOMAINS}/airline/policy.md",
        b"\xff\xfe",
        "policy.md is not UTF-8 text",
    ),
    "toml-invalid": (
        "telecom",
        f"{DOMAINS}/telecom/db.toml",
        b"x = [\n",
        "db.toml is not valid TOML",
    ),
    "toml-not-utf8": ("telecom", f"{DOMAINS}/telecom/db.toml", b"\xff", "db.toml is not UTF-8"),
    "toml-invalid-db": (
        "telecom",
        f"{DOMAINS}/telecom/user_db.toml",
        b"[device]\nsim_card_status = 5\n",
        "user_db.toml does not hold a valid database (",
    ),
    "domain-dir-missing": ("mock", f"{DOMAINS}/mock", None, "mock/ is missing"),
    # A task entry the split filter cannot even look at is damage, not left out.
    "task-not-an-object": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        b'["garbage"]',
        "tasks.json has an invalid task 0 (Input should be a valid dictionary",
    ),
    "task-id-not-a-string": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        b'[{"id": 1}]',
        "tasks.json has an invalid task 0 (id: Input should be a valid string)",
    ),
    "task-id-twice": (
        "airline",
        f"{DOMAINS}/airline/tasks.json",
        b'[{"id": "0", "user_scenario": {"instructions": "x"}}, '
        b'{"id": "0", "user_scenario": {"instructions": "x"}}]',
        "tasks.json has two tasks with the id '0'",
    ),
    "split-task-missing": (
        "airline",
        f"{DOMAINS}/airline/split_tasks.json",
        b'{"base": ["0", "no-such-task", "another"]}',
        "split_tasks.json lists task 'no-such-task' and 1 more in split 'base', "
        "which tasks.json does not have",
    ),
    "user-tools-not-array": (
        "mock",
        "mock/user_tools.json",
        b"5",
        "user_tools.json is not a JSON array of tool schemas",
    ),
    "user-tools-entry-invalid": (
        "telecom",
        "telecom/user_tools.json",
        b'[{"type": "function", "function": {"parameters": {}}}]',
        "user_tools.json entry 0 is not a function schema with a name",
    ),
    "tools-entry-invalid": (
        "retail",
        "retail/tools.json",
        b"[5]",
        "tools.json entry 0 is not a function schema with a name",
    ),
}


def damaged_root(tmp_path: Path, case: str) -> tuple[str, Path, str]:
    """(domain, data root with the case's damage, expected error text)."""
    domain, rel, content, problem = CASES[case]
    root = tmp_path / "tau3"
    path = mirror_except(require_data(), root, rel)
    if content is DIR:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    return domain, root, problem.replace("mock/ is missing", f"{path} is missing")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_suite_raises_one_data_dir_error_naming_the_file(tmp_path: Path, case: str) -> None:
    domain, root, problem = damaged_root(tmp_path, case)
    with pytest.raises(DataDirError) as caught:
        Tau3Suite().load_domain(domain, root).tasks()
    message = str(caught.value)
    assert problem in message, message
    assert str(root) in message and "\n" not in message
    assert message.endswith("`tau data pull --suite tau3`")


def test_every_task_is_checked_when_no_split_filters_them(tmp_path: Path) -> None:
    """Core `load_tasks` of mock (no default split) validates every record."""
    root = tmp_path / "tau3"
    mirror_except(require_data(), root, f"{DOMAINS}/mock/tasks.json").write_bytes(b"[null]")
    with pytest.raises(DataDirError, match=r"tasks.json has an invalid task 0 \(Input should be"):
        load_tasks(root, "mock")


def _tau(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU3_BENCH_DATA": str(root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [TAU, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def _one_line(proc: subprocess.CompletedProcess[str], problem: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0], proc.stderr


RUN = ["--agent-strategy", "oracle", "--user-strategy", "scripted", "--task-ids", "1"]


# Every main case through `tau run`; `tau tasks list` / `verify` for some of them.
MAIN_CASES = {
    "db-missing": ("verify",),
    "tools-missing": ("list",),
    "db-not-json": ("list",),
    "db-not-object": ("verify",),
    "split-not-lists": ("list", "verify"),
    "tasks-a-directory": ("list",),
    "policy-not-utf8": ("verify",),
    "task-not-an-object": ("list",),
    "split-task-missing": ("list",),
    "user-tools-not-array": (),
}


@pytest.mark.parametrize("case", sorted(MAIN_CASES))
def test_tau_run_and_tau_tasks_say_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    domain, root, problem = damaged_root(tmp_path, case)
    env = f"tau3/{domain}"
    _one_line(_tau(root, "run", "--env", env, *RUN, "--log-dir", str(tmp_path / "l")), problem)
    for command in MAIN_CASES[case]:
        _one_line(_tau(root, "tasks", command, "--env", env), problem)


@pytest.mark.parametrize("case", ["toml-invalid", "toml-not-utf8"])
def test_telecom_tasks_list_says_one_line_and_exits_2(tmp_path: Path, case: str) -> None:
    domain, root, problem = damaged_root(tmp_path, case)
    _one_line(_tau(root, "tasks", "list", "--env", f"tau3/{domain}"), problem)


def test_user_guidelines_that_are_not_text_are_a_data_dir_error(tmp_path: Path) -> None:
    from tau_bench.tau3.data import PROMPTS_DIR
    from tau_bench.users.tau3_user import GUIDELINES, tau3_user_system_prompt

    (tmp_path / PROMPTS_DIR).mkdir(parents=True)
    (tmp_path / PROMPTS_DIR / "user_system_prompt.txt").write_text("{instructions}")
    guidelines = tmp_path / GUIDELINES
    guidelines.parent.mkdir(parents=True)
    guidelines.write_bytes(b"\xff\xfe not text")
    with pytest.raises(DataDirError, match=r"simulation_guidelines\.md is not UTF-8 text"):
        tau3_user_system_prompt(tmp_path, "scenario")


def _not_an_object(task: dict[str, Any]) -> Any:
    return "garbage"


def _id_not_a_string(task: dict[str, Any]) -> Any:
    return {**task, "id": 1}


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (_not_an_object, "has an invalid task 0 (Input should be a valid dictionary"),
        (_id_not_a_string, "has an invalid task 0 (id: Input should be a valid string)"),
    ],
)
def test_one_damaged_task_of_a_real_file_is_not_left_out(
    tmp_path: Path, damage: Callable[[dict[str, Any]], Any], problem: str
) -> None:
    """mock's real tasks.json with its first task damaged: `tau tasks list` and `tau run`
    stop with one line (they used to go on with the 9 others)."""
    root = tmp_path / "tau3"
    rel = f"{DOMAINS}/mock/tasks.json"
    tasks = json.loads((require_data() / rel).read_text(encoding="utf-8"))
    tasks[0] = damage(tasks[0])
    mirror_except(require_data(), root, rel).write_text(json.dumps(tasks), encoding="utf-8")
    path = root / rel
    _one_line(_tau(root, "tasks", "list", "--env", "tau3/mock"), f"{path} {problem}")
    run = _tau(root, "run", "--env", "tau3/mock", *RUN, "--log-dir", str(tmp_path / "l"))
    _one_line(run, f"{path} {problem}")
