"""`tau sdg generate|stats`, the quality report, and the end-to-end path: generate against
a real OpenAI-compatible server on 127.0.0.1, then run the tasks with `tau run`."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tau_bench.cli.sdg_cmd import app
from tau_bench.fakes import OpenAIServer
from tau_bench.fakes.openai_server import ChatReply, ChatRequest
from tau_bench.sdg import stats
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


SECRET_KEY = "sk-sdg-secret-4f9a2c71"


def _sdg_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-local-fake-0000",
        **extra,
    }


def _tau_sdg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), "sdg", *args],
        env=env or _sdg_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _one_error_line(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_generate_masks_the_api_key_a_model_echoes_in_every_file(airline, tmp_path: Path) -> None:
    scenarios = 0

    def every_other(stage: str, view: dict[str, Any]) -> str | None:
        nonlocal scenarios
        if stage != "scenario":
            return None
        scenarios += 1
        return "read_only" if scenarios % 2 else None  # rejected: no change

    model = FakeModel(airline, every_other)

    def echo_the_key(request: ChatRequest) -> ChatReply:
        key = request.headers.get("authorization", "").split()[-1]
        answer = json.loads(model.reply(request.messages))
        if "summary" in answer:
            answer["summary"] += f" (key {key})"
        if "instruction" in answer:
            answer["instruction"] += f" Mention nothing about {key}."
        return ChatReply(text=json.dumps(answer))

    out, rejected = tmp_path / "tasks.jsonl", tmp_path / "rejected.jsonl"
    with OpenAIServer(echo_the_key) as server:
        done = _tau_sdg(
            "generate", "--env", "airline", "--difficulty", "medium", "--num-samples", "4",
            "--max-concurrency", "1", "--output-file", str(out), "--rejected-file",
            str(rejected), "--model", "openai/fake-sdg", "--api-base", server.base_url,
            "--quiet",
            env=_sdg_env(OPENAI_API_KEY=SECRET_KEY),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    rejects = [json.loads(line) for line in rejected.read_text().splitlines()]
    assert tasks and rejects
    assert "Mention nothing about ***." in tasks[0]["instruction"]
    assert "(key ***)" in tasks[0]["provenance"]["scenario"]
    for path in (out, rejected, out.with_suffix(".runs.jsonl")):
        assert SECRET_KEY not in path.read_text(), path
    assert SECRET_KEY not in done.stdout + done.stderr


MALFORMED_RUNS = [
    '{"samples": "abc"}',
    '{"samples": [1]}',
    '{"rejected": [1, 2]}',
    '{"usage": "x"}',
    '{"samples": 1e400}',
    '{"samples": -3}',
    '{"validated": 2.5}',
    '{"usage": {"cost": NaN}}',
    '{"rejected": {"malformed": "many"}}',
    "[1, 2]",
    "not json",
]


def test_stats_leaves_out_malformed_runs_lines_and_says_how_many(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    task = _task(
        "a", "Cancel my order please, I no longer need it.", ["cancel_pending_order"], "easy"
    )
    out.write_text(json.dumps(task.model_dump(mode="json")) + "\n")
    good = {"samples": 4, "validated": 2, "written": 1, "rejected": {"malformed": 2}}
    with out.with_suffix(".runs.jsonl").open("wb") as fh:
        fh.write("\n".join([*MALFORMED_RUNS, json.dumps(good)]).encode() + b"\n")
        fh.write(b'\xff\xfe{"samples": 3}\n')  # not UTF-8
    done = _tau_sdg("stats", str(out), "--no-verify", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    validation = json.loads(done.stdout)["validation"]
    assert validation["malformed_runs"] == len(MALFORMED_RUNS) + 1
    assert (validation["runs"], validation["samples"], validation["validated"]) == (1, 4, 2)
    assert validation["rejected"] == {"malformed": 2} and validation["rate"] == 0.5
    table = _tau_sdg("stats", str(out), "--no-verify")
    assert table.returncode == 0 and "runs lines left out (malformed)" in table.stdout


def _generate_args(out: Path, *extra: str) -> list[str]:
    return [
        "generate", "--env", "retail", "--difficulty", "easy", "--num-samples", "1",
        "--output-file", str(out), "--model", "openai/fake-sdg",
        "--api-base", "http://127.0.0.1:9/v1", "--quiet", *extra,
    ]  # fmt: skip


def test_generate_refuses_files_it_would_corrupt_and_a_non_finite_temperature(
    tmp_path: Path,
) -> None:
    out = tmp_path / "tasks.jsonl"
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    (tmp_path / "sub").mkdir()
    cases = [
        (_generate_args(binary), "--output-file: "),
        (_generate_args(out, "--rejected-file", str(binary)), "--rejected-file: "),
        (_generate_args(out, "--rejected-file", str(tmp_path / "sub" / ".." / "tasks.jsonl")),
         "is the --output-file"),
        (_generate_args(out, "--rejected-file", str(tmp_path / "tasks.runs.jsonl")),
         "runs sidecar"),
        (_generate_args(out, "--temperature", "nan"), "--temperature"),
        (_generate_args(out, "--temperature", "inf"), "--temperature"),
        (_generate_args(out, "--temperature", "-1"), "--temperature"),
        (_generate_args(out, "--api-base", "localhost:8000"), "--api-base: expected an http(s)"),
    ]  # fmt: skip
    for args, needle in cases:
        _one_error_line(_tau_sdg(*args), needle)
    assert binary.read_bytes() == b"\xff\xfe\x00garbage\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["binary.jsonl", "sub"]


def test_generate_refuses_a_rejected_file_linked_to_the_output_file(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    out.write_text("")
    (tmp_path / "link.jsonl").symlink_to(out)
    os.link(out, tmp_path / "hard.jsonl")
    for other in ("link.jsonl", "hard.jsonl"):
        args = _generate_args(out, "--rejected-file", str(tmp_path / other))
        _one_error_line(_tau_sdg(*args), "is the --output-file")
    assert out.read_text() == ""


def test_next_sample_index_skips_lines_that_are_not_utf8_or_not_provenance(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "t.jsonl"
    prov = {"env": "retail", "difficulty": "easy", "seed": 1, "sample_index": 4}
    tasks.write_bytes(
        b"\xff\xfe\n"
        + json.dumps({"provenance": "text"}).encode()
        + b"\n"
        + json.dumps({"provenance": {**prov, "sample_index": True}}).encode()
        + b"\n"
        + json.dumps({"provenance": prov}).encode()
        + b"\n"
    )
    assert next_sample_index([tasks], "retail", "easy", 1) == 5


def _copies(n: int) -> list[Task]:
    text = "You want to cancel your pending order because you no longer need it at all."
    return [_task("a", text, ["cancel_pending_order"], "easy") for _ in range(n)]


def test_stats_on_many_equal_tasks_counts_every_pair_and_lists_the_first() -> None:
    dup = compute_stats(_copies(2000), verify=False)["duplicates"]
    assert dup["near_identical_pairs"] == 2000 * 1999 // 2
    assert dup["near_identical_complete"] is True
    listed = dup["near_identical_instructions"]
    assert len(listed) == stats.MAX_LISTED_PAIRS
    assert listed[:2] == [[0, 1, 1.0], [0, 2, 1.0]]
    assert dup["near_identical_unlisted"] == 2000 * 1999 // 2 - stats.MAX_LISTED_PAIRS
    assert dup["duplicate_tasks"] == 1999 and dup["identical_actions"] == [list(range(2000))]


def test_near_duplicates_agree_with_comparing_every_pair() -> None:
    rng = random.Random(7)
    words = ["cancel", "order", "the", "my", "please", "refund", "item", "gift", "card"]
    for _ in range(300):
        base = [" ".join(rng.choices(words, k=rng.randint(0, 12))) for _ in range(3)]
        texts = [
            rng.choice(base) + (" " + rng.choice(words)) * rng.randint(0, 1)
            if rng.random() < 0.7
            else " ".join(rng.choices(words, k=rng.randint(0, 12)))
            for _ in range(rng.randint(0, 25))
        ]
        threshold = rng.choice([0.0, 0.3, 0.5, 2 / 3, 0.8, 0.9, 1.0, rng.random()])
        expected = _every_pair(texts, threshold)
        for limit in (None, 0, 1, 5):
            found = stats.find_near_duplicates(texts, threshold, limit)
            assert found.pairs == (expected if limit is None else expected[:limit])
            assert found.total == len(expected) and found.complete
            assert found.duplicates == {j for _, j, _ in expected}


def _every_pair(texts: list[str], threshold: float) -> list[tuple[int, int, float]]:
    def shingles(text: str) -> set[str]:
        words = re.findall(r"[a-z0-9#_]+", text.lower())
        return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)} or set(words)

    sets = [shingles(t) for t in texts]
    pairs = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            union = len(sets[i] | sets[j])
            similarity = len(sets[i] & sets[j]) / union if union else 1.0
            if similarity >= threshold:
                pairs.append((i, j, round(similarity, 3)))
    return pairs


def test_a_near_duplicate_search_past_its_budget_says_its_counts_are_lower_bounds() -> None:
    texts = [f"please cancel order number {i} of mine today thank you" for i in range(300)]
    full = stats.find_near_duplicates(texts, 0.3)
    cut = stats.find_near_duplicates(texts, 0.3, budget=1_000)
    assert full.complete and full.total == 300 * 299 // 2
    assert not cut.complete and 0 < cut.total < full.total


def test_generate_exits_1_when_the_model_never_answers(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.brain = lambda request: Reply(status=400, error="no such model")
    out = tmp_path / "x.jsonl"
    args = [
        "generate", "--env", "retail", "--difficulty", "easy", "--num-samples", "2",
        "--output-file", str(out), "--model", "openai/gpt-4o-mini",
        "--data-dir", str(DATA_DIR), "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "every sample (2) failed on the model call (llm_error)" in result.output
    assert "rejected: llm_error" in result.output  # the table is still shown
    negative = CliRunner().invoke(app, [*args, "--start-index", "-1"])
    assert negative.exit_code == 2 and "--start-index" in negative.output
