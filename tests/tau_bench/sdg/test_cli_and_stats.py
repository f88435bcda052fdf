"""`tau sdg generate|stats`, the quality report, and the end-to-end path: generate against
a real OpenAI-compatible server on 127.0.0.1, then run the tasks with `tau run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tau_bench.cli.sdg_cmd import app
from tau_bench.fakes import OpenAIServer
from tau_bench.sdg.fake import FakeModel
from tau_bench.sdg.output import next_sample_index
from tau_bench.sdg.stats import compute_stats, near_duplicates, provenance
from tau_bench.tasks import Action, Task, load_tasks
from tests.conftest import DATA_DIR
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply
from tests.tau_bench.sdg.conftest import use_fake_model

TAU = Path(sys.executable).parent / "tau"


def _task(user: str, instruction: str, names: list[str], difficulty: str | None) -> Task:
    data: dict[str, Any] = {
        "user_id": user,
        "instruction": instruction,
        "actions": [
            Action(name=n, kwargs={"order_id": f"#W{i}"}).model_dump() for i, n in enumerate(names)
        ],
    }
    if difficulty:
        data["provenance"] = {"difficulty": difficulty, "env": "retail", "repaired": user == "b"}
    return Task.model_validate(data)


def test_stats_report(retail) -> None:
    long = "You are Ann Lee in 12345 and you want to cancel your pending order because you no longer need it at all"
    tasks = [
        _task("a", long, ["get_order_details", "cancel_pending_order"], "medium"),
        _task("b", long + " today", ["get_order_details", "cancel_pending_order"], "medium"),
        _task(
            "c",
            "You want to return a lamp from your delivered order, refund to the gift card.",
            ["return_delivered_order_items"],
            "hard",
        ),
        _task("d", "Something else entirely different here.", ["get_order_details"], None),
    ]
    runs = [
        {
            "samples": 5,
            "validated": 3,
            "written": 3,
            "rejected": {"malformed": 1, "no_change": 1},
            "usage": {"cost": 0.01},
        },
        {
            "samples": 3,
            "validated": 1,
            "written": 1,
            "rejected": {"malformed": 2},
            "usage": {"cost": 0.02},
        },
    ]
    report = compute_stats(tasks, runs, domain=retail, similarity=0.85, verify=False)
    diff = report["difficulty"]
    assert diff["by_difficulty"]["medium"] == {
        "tasks": 2,
        "consistent": 2,
        "min": 2,
        "max": 2,
        "mean": 2.0,
    }
    assert diff["by_difficulty"]["hard"]["consistent"] == 0 and diff["inconsistent"] == [2]
    assert diff["consistency_rate"] == 2 / 3
    assert diff["by_difficulty"]["undeclared"]["by_count"] == {"easy": 1}
    mix = report["action_mix"]
    assert mix["by_tool"]["get_order_details"] == 3 and mix["writes"] == 3 and mix["reads"] == 3
    dup = report["duplicates"]
    assert dup["identical_actions"] == [[0, 1]]
    assert [p[:2] for p in dup["near_identical_instructions"]] == [[0, 1]]
    assert dup["duplicate_tasks"] == 1
    val = report["validation"]
    assert val["samples"] == 8 and val["validated"] == 4 and val["rate"] == 0.5
    assert val["rejected"] == {"malformed": 3, "no_change": 1} and val["repaired_tasks"] == 1
    assert abs(val["cost"] - 0.03) < 1e-9 and report["verification"] is None


def test_near_duplicates_threshold() -> None:
    texts = ["a b c d e f g h", "a b c d e f g h", "a b c d e f g x", "z y x w v"]
    assert near_duplicates(texts, 1.0) == [(0, 1, 1.0)]
    assert {(i, j) for i, j, _ in near_duplicates(texts, 0.7)} == {(0, 1), (0, 2), (1, 2)}


def test_next_sample_index_skips_used_indices(tmp_path: Path) -> None:
    tasks, rejected = tmp_path / "t.jsonl", tmp_path / "r.jsonl"
    prov = {"env": "retail", "difficulty": "easy", "seed": 1}
    tasks.write_text(json.dumps({"provenance": {**prov, "sample_index": 4}}) + "\nnot json\n")
    rejected.write_text(json.dumps({"provenance": {**prov, "sample_index": 9}}) + "\n")
    assert next_sample_index([tasks, rejected, None], "retail", "easy", 1) == 10
    assert next_sample_index([tasks], "retail", "easy", 2) == 0
    assert next_sample_index([tmp_path / "missing.jsonl"], "retail", "hard", 1) == 0


def test_cli_generate_then_stats(fake_llm: FakeLLM, retail, tmp_path: Path) -> None:
    use_fake_model(fake_llm, retail)
    out = tmp_path / "gen.jsonl"
    args = [
        "generate",
        "--env",
        "retail",
        "--difficulty",
        "medium",
        "--num-samples",
        "3",
        "--max-concurrency",
        "2",
        "--output-file",
        str(out),
        "--model",
        "openai/gpt-4o-mini",
        "--seed",
        "3",
        "--data-dir",
        str(DATA_DIR),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "tasks written" in result.output and "scenarios validated" in result.output
    assert f"--tasks-file {out}" in result.output
    tasks = load_tasks(out)
    assert tasks and all(provenance(t)["seed"] == 3 for t in tasks)

    result = CliRunner().invoke(app, ["stats", str(out), "--json", "--data-dir", str(DATA_DIR)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["env"] == "retail" and report["tasks"] == len(tasks)
    assert report["difficulty"]["consistency_rate"] == 1.0
    assert report["verification"] == {"checked": len(tasks), "passed": len(tasks), "failed": []}
    assert report["validation"]["samples"] == 3

    table = CliRunner().invoke(app, ["stats", str(out), "--no-verify", "--data-dir", str(DATA_DIR)])
    assert table.exit_code == 0 and "difficulty consistency 100%" in table.output


def test_cli_errors_are_one_line(fake_llm: FakeLLM, tmp_path: Path) -> None:
    base = [
        "generate",
        "--num-samples",
        "1",
        "--output-file",
        str(tmp_path / "x.jsonl"),
        "--model",
        "openai/gpt-4o-mini",
        "--data-dir",
        str(DATA_DIR),
    ]
    bad_level = CliRunner().invoke(app, [*base, "--env", "retail", "--difficulty", "extreme"])
    assert bad_level.exit_code == 2 and "unknown difficulty 'extreme'" in bad_level.output
    bad_env = CliRunner().invoke(app, [*base, "--env", "railway", "--difficulty", "easy"])
    assert bad_env.exit_code == 2 and "unknown env 'railway'" in bad_env.output
    fake_llm.brain = lambda request: Reply(status=401, error="bad key sk-test-openai-0000")
    denied = CliRunner().invoke(app, [*base, "--env", "retail", "--difficulty", "easy", "--quiet"])
    assert denied.exit_code == 2 and "the model refused the credentials" in denied.output
    assert "sk-test-openai-0000" not in denied.output and "Traceback" not in denied.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert CliRunner().invoke(app, ["stats", str(empty)]).exit_code == 2


def test_end_to_end_generate_over_http_then_tau_run(airline, tmp_path: Path) -> None:
    out = tmp_path / "airline.jsonl"
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-local-fake-0000",
    }
    model = FakeModel(airline)
    with OpenAIServer(model.respond) as server:
        gen = subprocess.run(
            [
                str(TAU),
                "sdg",
                "generate",
                "--env",
                "airline",
                "--difficulty",
                "medium",
                "--num-samples",
                "4",
                "--max-concurrency",
                "2",
                "--output-file",
                str(out),
                "--model",
                "openai/fake-sdg",
                "--api-base",
                server.base_url,
                "--quiet",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert gen.returncode == 0, gen.stderr
    assert model.calls >= 8  # scenario + instruction per sample, over HTTP
    tasks = load_tasks(out)
    assert len(tasks) >= 3
    run = subprocess.run(
        [
            str(TAU),
            "run",
            "--env",
            "airline",
            "--tasks-file",
            str(out),
            "--agent-strategy",
            "oracle",
            "--user-strategy",
            "scripted",
            "--log-dir",
            str(tmp_path / "runs"),
            "--run-name",
            "sdg",
            "--max-concurrency",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "runs" / "sdg.json").read_text())
    assert len(results) == len(tasks) and all(r["reward"] == 1.0 for r in results)


def test_benchmark_runs_against_the_mock_server() -> None:
    from tau_bench.benchmarks import sdg_bench

    results = sdg_bench.run(
        domains=["retail"],
        levels=["easy"],
        samples=3,
        concurrency=2,
        latency=0.0,
        fault_rate=0.0,
        data_dir=DATA_DIR,
    )
    (run,) = results["runs"]
    assert run["samples"] == run["validated"] == run["written"] == 3 and run["rejected"] == {}
    assert run["usage"]["calls"] == 6  # scenario + instruction per sample, over HTTP
    assert (
        results["total"]["validation_rate"] == 1.0 and results["total"]["scenarios_per_minute"] > 0
    )
    table, *lines = sdg_bench.render(results)
    assert table.row_count == 2 and lines == ["rejected retail/easy: none"]
