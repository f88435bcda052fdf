"""τ² results interchange: `tau export --format tau2` and `tau rescore --env tau3/<domain>`.

Round trip: a real τ³ run → exported → validated by the models of the upstream schema →
rescored → the same rewards; and a rescore that must change rewards does.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tau_bench.results_log import read_log
from tau_bench.tau3.interchange.schema import Results
from tests.tau_bench.tau3.tau3_runs import oracle_run, tau


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run log, exported τ² file) of an airline oracle run, 2 trials of 4 tasks."""
    folder = tmp_path_factory.mktemp("tau3run")
    log = oracle_run(folder / "runs", "tau3/airline", "5,6,12,31", trials=2)
    out = folder / "tau2"
    tau("export", log, "--format", "tau2", "-o", out)
    (path,) = out.glob("*.airline.json")
    return log, path


def _rewards(data: dict) -> dict[tuple[str, int], float]:
    return {(s["task_id"], s["trial"]): s["reward_info"]["reward"] for s in data["simulations"]}


def test_export_is_upstream_shaped_and_rescores_to_the_same_rewards(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    log, path = exported
    data = json.loads(path.read_text())
    model = Results.model_validate(data)
    assert model.info.environment_info.domain_name == "airline"
    assert len(model.simulations) == 8
    assert {t["id"] for t in data["tasks"]} == {"5", "6", "12", "31"}
    run = {(str(r.task["id"]), r.trial): r.reward for r in read_log(log).records.values()}
    assert _rewards(data) == run
    first = data["simulations"][0]["messages"]
    assert first[0]["role"] == "assistant"  # the agent greeting starts the trajectory
    calls = [m for m in first if m.get("tool_calls")]
    assert calls and all(c["requestor"] == "assistant" for m in calls for c in m["tool_calls"])
    assert all("error" in m for m in first if m["role"] == "tool")

    out = tmp_path / "rescored.json"
    proc = tau("rescore", path, "--env", "tau3/airline", "--judge-model", "assume-met", "-o", out)
    assert "8 simulation(s) rescored" in proc.stdout and "0 changed" in proc.stdout
    again = json.loads(out.read_text())
    Results.model_validate(again)
    assert _rewards(again) == _rewards(data)
    for a, b in zip(again["simulations"], data["simulations"], strict=True):
        assert a["reward_info"] == b["reward_info"]
        assert a["messages"] == b["messages"]


def test_rescore_uses_fresh_tasks_and_changes_what_changed(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    _, path = exported
    data = json.loads(path.read_text())
    tampered = copy.deepcopy(data)
    # A stale embedded task definition: --fresh-tasks semantics replace it.
    for task in tampered["tasks"]:
        if task["id"] == "12":
            task["evaluation_criteria"]["communicate_info"] = ["something never said"]
    # One simulation loses its last write: the DB no longer matches gold.
    sim = next(s for s in tampered["simulations"] if s["task_id"] == "12")
    sim["review"] = {"kept": True}  # fields we do not model survive
    idx = max(i for i, m in enumerate(sim["messages"]) if m.get("tool_calls"))
    del sim["messages"][idx : idx + 2]
    src = tmp_path / "in.json"
    src.write_text(json.dumps(tampered))
    out = tmp_path / "out.json"
    proc = tau("rescore", src, "--env", "tau3/airline", "-o", out)
    assert "1 changed" in proc.stdout, proc.stdout
    result = json.loads(out.read_text())
    fresh = next(t for t in result["tasks"] if t["id"] == "12")
    assert fresh["evaluation_criteria"].get("communicate_info") != ["something never said"]
    changed = next(s for s in result["simulations"] if s["id"] == sim["id"])
    assert changed["reward_info"]["reward"] == 0.0
    assert changed["reward_info"]["db_check"]["db_match"] is False
    assert changed["review"] == {"kept": True}
    others = [s for s in result["simulations"] if s["id"] != sim["id"]]
    assert all(s["reward_info"]["reward"] == 1.0 for s in others)


@pytest.mark.parametrize(
    ("content", "env", "expected"),
    [
        ("not json", "tau3/airline", "is not JSON"),
        ('[{"task_id": 0, "reward": 1}]', "tau3/airline", "is not a τ² results file"),
        ('{"info": {}, "tasks": [], "simulations": []}', "tau3/airline", "info.git_commit"),
    ],
)
def test_rescore_bad_input_is_one_line(
    tmp_path: Path, content: str, env: str, expected: str
) -> None:
    src = tmp_path / "bad.json"
    src.write_text(content)
    proc = tau("rescore", src, "--env", env, "--judge-model", "assume-met", check=False)
    assert proc.returncode == 2
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_rescore_refuses_another_domains_file(exported: tuple[Path, Path]) -> None:
    _, path = exported
    proc = tau("rescore", path, "--env", "tau3/retail", "--judge-model", "assume-met", check=False)
    assert proc.returncode == 2
    assert "pass --env tau3/airline" in proc.stderr


def test_retail_nl_tasks_round_trip_with_assume_met(tmp_path: Path) -> None:
    log = oracle_run(tmp_path / "runs", "tau3/retail", "0,4,5")
    tau("export", log, "--format", "tau2", "-o", tmp_path / "t2")
    (path,) = (tmp_path / "t2").glob("*.retail.json")
    data = json.loads(path.read_text())
    assert any(s["reward_info"].get("nl_assertions") for s in data["simulations"])
    out = tmp_path / "re.json"
    tau("rescore", path, "--env", "tau3/retail", "--judge-model", "assume-met", "-o", out)
    assert _rewards(json.loads(out.read_text())) == _rewards(data)


def test_export_refuses_v1_runs(tmp_path: Path) -> None:
    log = tmp_path / "v1.jsonl"
    log.write_text(
        json.dumps({"type": "header", "format": "tau-adapters-run/1", "config": {"env": "airline"}})
        + "\n"
        + json.dumps({"type": "episode", "task_id": 0, "trial": 0, "reward": 1.0})
        + "\n"
    )
    proc = tau("export", log, "--format", "tau2", "-o", tmp_path / "o", check=False)
    assert proc.returncode == 2 and "not a τ³ run" in proc.stderr


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda d: d["simulations"][0]["reward_info"].update(reward=float("nan")), "finite"),
        (lambda d: d["simulations"][1].update(agent_cost=float("inf")), "finite"),
        (lambda d: d["simulations"].append(copy.deepcopy(d["simulations"][0])), "appears twice"),
        (lambda d: d["tasks"].append(copy.deepcopy(d["tasks"][0])), "task id '5' appears twice"),
        (
            lambda d: d["simulations"].append({**copy.deepcopy(d["simulations"][0]), "id": "x"}),
            "trial 0 appears twice",
        ),
    ],
)
def test_rescore_refuses_non_finite_numbers_and_duplicates(
    exported: tuple[Path, Path], tmp_path: Path, damage: object, expected: str
) -> None:
    """A NaN reward made the "before" average NaN; a simulation listed twice counted twice."""
    _, path = exported
    data = json.loads(path.read_text())
    damage(data)  # type: ignore[operator]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(data))  # NaN/Infinity as Python's json writes them
    proc = tau("rescore", src, "--env", "tau3/airline", "--judge-model", "assume-met", check=False)
    assert proc.returncode == 2, proc.stdout
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
