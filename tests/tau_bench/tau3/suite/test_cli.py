"""The τ³ commands through the installed `tau` console script (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TAU = Path(sys.executable).with_name("tau")


def _tau(args: list[str], data_root: Path, stdin: str | None = None, cwd: Path | None = None):  # type: ignore[no-untyped-def]
    env = {**os.environ, "TAU3_BENCH_DATA": str(data_root), "COLUMNS": "200"}
    return subprocess.run(
        [str(TAU), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_verify_mock_lists_the_known_failures(data_root: Path) -> None:
    done = _tau(["tasks", "verify", "--env", "tau3/mock"], data_root)
    assert done.returncode == 0, done.stderr
    assert "8/10 tasks score 1.0, 2 fail in the original too" in done.stdout
    assert "update_task_with_user_tools" in done.stdout
    assert "fails in the original" in done.stdout


def test_verify_airline_test_split(data_root: Path) -> None:
    done = _tau(
        [
            "tasks",
            "verify",
            "--env",
            "tau3/airline",
            "--task-split",
            "test",
            "--judge-model",
            "assume-met",
        ],
        data_root,
    )
    assert done.returncode == 0, done.stderr
    assert "tau3/airline: 20/20 tasks score 1.0" in done.stdout


def test_verify_prints_telecom_ids_as_they_are(data_root: Path, tmp_path: Path) -> None:
    """Telecom ids open with "[mobile_data_issue]": a table must not take it for a style."""
    tasks = json.loads((data_root / "data/tau2/domains/telecom/tasks_small.json").read_text())
    (tmp_path / "two.json").write_text(json.dumps(tasks[:2]))
    done = _tau(
        ["tasks", "verify", "--env", "tau3/telecom", "--tasks-file", str(tmp_path / "two.json")],
        data_root,
    )
    assert done.returncode == 0, done.stderr
    for task in tasks[:2]:
        assert task["id"].startswith("[mobile_data_issue]") and task["id"] in done.stdout


def test_verify_unknown_split_is_one_line(data_root: Path) -> None:
    done = _tau(["tasks", "verify", "--env", "tau3/retail", "--task-split", "dev"], data_root)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "unknown task split 'dev'" in done.stderr


def test_env_exec_interface(data_root: Path) -> None:
    lines = [
        {"reset": True},
        {"name": "create_task", "kwargs": {"user_id": "user_1", "title": "T"}},
        {"name": "create_task", "kwargs": {"user_id": "user_1"}},
        {"reset": True, "task_id": "update_task_with_message_history"},
    ]
    stdin = "".join(json.dumps(x) + "\n" for x in lines)
    done = _tau(["env", "exec", "--env", "tau3/mock", "--deterministic-ids"], data_root, stdin)
    assert done.returncode == 0, done.stderr
    out = [json.loads(x) for x in done.stdout.splitlines()]
    vectors = {
        r["task_id"]: r
        for r in map(json.loads, (data_root / "conformance/mock.jsonl").read_text().splitlines())
    }
    pristine = vectors["create_task_1"]["initial_hashes"]
    assert out[0] == {
        "data_hash": pristine["agent_db_hash"],
        "user_data_hash": pristine["user_db_hash"],
    }
    assert set(out[1]) == {"observation", "error", "data_hash", "user_data_hash"}
    assert out[1]["error"] is False and '"task_id": "task_2"' in out[1]["observation"]
    assert out[2]["error"] is True and out[2]["observation"].startswith("Error: ")
    want = vectors["update_task_with_message_history"]["initial_hashes"]
    assert out[3] == {"data_hash": want["agent_db_hash"], "user_data_hash": want["user_db_hash"]}


def test_env_exec_bad_line_is_one_line(data_root: Path) -> None:
    done = _tau(["env", "exec", "--env", "tau3/mock"], data_root, '{"name": 3}\n')
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: line 1:")


def test_run_resume_compare_report(data_root: Path, tmp_path: Path) -> None:
    args = [
        "run",
        "--env",
        "tau3/mock",
        "--agent-strategy",
        "oracle",
        "--user-strategy",
        "scripted",
        "--judge-model",
        "assume-met",
        "--log-dir",
        str(tmp_path),
    ]
    done = _tau(args, data_root, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (log,) = tmp_path.glob("*.jsonl")
    records = [json.loads(x) for x in log.read_text().splitlines()]
    episodes = [r for r in records if r.get("type") == "episode"]
    assert [r["reward"] for r in episodes] == [1.0] * 7 + [0.0, 0.0, 1.0]
    assert all(r["reward_info"]["judge"] == "assume-met" for r in episodes)
    assert records[0]["config"]["task_split"] == "base"
    # An interrupted run: only the first 5 episodes reached the log; resume runs the rest.
    lines = log.read_text().splitlines(keepends=True)
    kept = [x for x in lines if json.loads(x).get("type") != "episode"][:1] + [
        x for x in lines if json.loads(x).get("type") == "episode"
    ][:5]
    log.write_text("".join(kept))
    again = _tau(["run", "--resume", str(log)], data_root, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    summary = json.loads(next(tmp_path.glob("*.summary.json")).read_text())
    assert summary["config"]["env"] == "tau3/mock"
    assert summary["episodes_run_now"] == 5
    compared = _tau(["compare", str(log), str(log)], data_root, cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
