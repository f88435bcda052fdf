"""`tau sdg generate|stats --env tau3/...`: validation of τ³ task files on every τ³ domain,
one-line errors, and the end-to-end path through the installed `tau` console script:
generate against a real OpenAI-compatible server on 127.0.0.1, then `tau tasks verify`,
`tau sdg stats` and `tau run` on the generated file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli.sdg_cmd import app
from tau_bench.fakes import OpenAIServer
from tau_bench.sdg.fake import FakeModel
from tests.conftest import DATA_DIR, TAU3_DATA_DIR
from tests.tau_bench.sdg.targets.test_tau3_check import broken_retail

TAU = Path(sys.executable).parent / "tau"
DOMAINS = TAU3_DATA_DIR / "data" / "tau2" / "domains"
DATA = ["--data-dir", str(TAU3_DATA_DIR)]


def _stats(*args: str) -> Any:
    return CliRunner().invoke(app, ["stats", *args, *DATA])


def _error_line(result: Any) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_stats_rejects_broken_tau3_tasks(tau3_retail: Any, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in broken_retail(tau3_retail)))

    result = _stats(str(path), "--env", "tau3/retail", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["env"] == "tau3/retail" and report["suite"] == "tau3" and report["tasks"] == 3
    ver = report["verification"]
    assert ver["checked"] == 3 and ver["passed"] == 1 and ver["failed"] == [1, 2]
    assert ver["judge"] == "assume-met"
    assert ver["by_reason"] == {"tool_error": 1, "no_change": 1}
    assert "Order not found" in ver["problems"]["1"]["problems"][0]
    assert report["action_mix"]["by_tool"]["get_order_details"] == 3
    assert report["action_mix"]["writes"] == 2  # the exchange, twice; reads are not writes
    assert report["duplicates"]["near_identical_instructions"]  # the same scenario, thrice

    table = _stats(str(path), "--env", "tau3/retail")
    assert table.exit_code == 1
    assert "tasks that fail validation" in table.output and "reads-only" in table.output
    assert "tau3/retail: 1/3 tasks valid 2 FAILED" in table.output

    valid = tmp_path / "valid.json"
    valid.write_text(json.dumps(broken_retail(tau3_retail)[:1]))
    ok = _stats(str(valid), "--env", "tau3/retail")
    assert ok.exit_code == 0, ok.output
    assert "tau3/retail: 1/1 tasks valid OK" in ok.output
    assert _stats(str(path), "--env", "tau3/retail", "--no-verify").exit_code == 0


@pytest.mark.parametrize(
    ("env", "path", "tasks", "valid", "exit_code"),
    [
        # upstream builds some tasks on purpose around a failing lookup or a refusal (no DB
        # change): sound benchmark tasks, but not ones the generator would write
        ("tau3/airline", "airline/tasks.json", 50, 26, 1),
        ("tau3/retail", "retail/tasks.json", 114, 91, 1),
        ("tau3/mock", "mock/tasks.json", 10, 6, 1),
        ("tau3/telecom", "telecom/tasks_small.json", 20, 20, 0),
    ],
)
def test_stats_validates_every_tau3_domain(
    env: str, path: str, tasks: int, valid: int, exit_code: int
) -> None:
    result = _stats(str(DOMAINS / path), "--env", env, "--json")
    assert result.exit_code == exit_code, result.output
    report = json.loads(result.output)
    ver = report["verification"]
    assert report["tasks"] == ver["checked"] == tasks and ver["passed"] == valid
    assert set(ver["by_reason"]) <= {"tool_error", "no_change"}
    assert report["difficulty"]["by_difficulty"]["undeclared"]["tasks"] == tasks


def test_bad_input_is_one_line(tmp_path: Path, tau3_retail: Any) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[{"id": "1", ')
    result = _stats(str(broken), "--env", "tau3/retail")
    assert result.exit_code == 2 and "not valid JSON" in _error_line(result)

    shapeless = tmp_path / "shapeless.json"
    shapeless.write_text(json.dumps([{"user_scenario": {}}]))
    result = _stats(str(shapeless), "--env", "tau3/retail")
    assert result.exit_code == 2 and "task 0: id: Field required" in _error_line(result)

    upstream = str(DOMAINS / "retail" / "tasks.json")
    result = _stats(upstream)
    assert result.exit_code == 2 and "--env tau3/<domain>" in _error_line(result)
    result = CliRunner().invoke(app, ["stats", upstream, "--env", "retail"])
    assert result.exit_code == 2 and "use --env tau3/retail" in _error_line(result)

    generated = tmp_path / "generated.jsonl"
    task = broken_retail(tau3_retail)[0] | {"provenance": {"env": "tau3/retail"}}
    generated.write_text(json.dumps(task) + "\n")
    result = _stats(str(generated), "--env", "tau3/airline")
    assert result.exit_code == 2
    assert "generated for tau3/retail, not tau3/airline" in _error_line(result)
    assert _stats(str(generated)).exit_code == 0  # the env comes from the provenance

    for env in ("tau3/mock", "tau3/telecom"):
        result = CliRunner().invoke(
            app,
            [
                "generate",
                "--env",
                env,
                "--difficulty",
                "easy",
                "--output-file",
                str(tmp_path / "x.jsonl"),
                "--model",
                "openai/gpt-4o-mini",
                *DATA,
            ],
        )
        assert result.exit_code == 2
        assert "supports tau3/airline and tau3/retail" in _error_line(result)
    assert not (tmp_path / "x.jsonl").exists()


def _tau(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TAU), *args], env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("name", ["tau3/retail", "tau3/airline"])
def test_end_to_end_generate_verify_stats_and_run(
    name: str, tau3_airline: Any, tau3_retail: Any, tmp_path: Path
) -> None:
    domain = tau3_airline if name == "tau3/airline" else tau3_retail
    out = tmp_path / "tau3.jsonl"
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(TAU3_DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-local-fake-0000",
    }
    model = FakeModel(domain)
    with OpenAIServer(model.respond) as server:
        gen = _tau(
            [
                "sdg",
                "generate",
                "--env",
                name,
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
                "--seed",
                "5",
            ],
            env,
        )
    assert gen.returncode == 0, gen.stderr
    assert model.calls >= 8  # scenario + instruction per sample, over HTTP
    assert f"tau tasks verify --env {name} --tasks-file {out}" in gen.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) >= 3
    assert all(r["evaluation_criteria"]["reward_basis"] == ["DB", "COMMUNICATE"] for r in records)
    assert all(r["provenance"]["env"] == name for r in records)

    verify = _tau(["tasks", "verify", "--env", name, "--tasks-file", str(out)], env)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"{name}: {len(records)}/{len(records)} tasks score 1.0" in verify.stdout

    stats = _tau(["sdg", "stats", str(out), "--json"], env)
    assert stats.returncode == 0, stats.stdout + stats.stderr
    report = json.loads(stats.stdout)
    assert report["env"] == name and report["verification"]["passed"] == len(records)
    assert report["difficulty"]["consistency_rate"] == 1.0
    assert report["validation"]["samples"] == 4

    run = _tau(
        [
            "run",
            "--env",
            name,
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
        env,
    )
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "runs" / "sdg.json").read_text())
    assert len(results) == len(records) and all(r["reward"] == 1.0 for r in results)
