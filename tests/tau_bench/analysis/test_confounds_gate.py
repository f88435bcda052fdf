"""`tau compare` refuses unlike runs (exit 3), `--allow-mismatch`, old files without a
manifest, changed task definitions, and the regression gate: all on real runs made by
the installed `tau` console script, with an LLM user and agent on the fake OpenAI server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer

from ...conftest import DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TASKS = ["0", "1", "2", "3"]


def fake_model(request: ChatRequest) -> ChatReply:
    """As a user: asks once, then ends. As an agent: never helps (no tool calls)."""
    if request.tools:
        return ChatReply(text="I am sorry, I cannot help with that.")
    said = sum(1 for m in request.messages if m.get("role") == "assistant")
    return ChatReply(text="Please help me with my reservation." if said == 0 else "###STOP###")


@dataclass
class Runs:
    scripted: Path  # oracle agent, scripted user
    llm_user: Path  # oracle agent, LLM user
    weak: Path  # tool-calling agent that never helps, scripted user
    folder: Path


def tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=300
    )


def _run(log_dir: Path, *args: str) -> Path:
    proc = tau("run", "--env", "airline", "--task-ids", *TASKS, "--num-trials", "2",
               "--log-dir", log_dir, "--quiet", *args)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (log,) = log_dir.glob("*.jsonl")
    return log


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    folder = tmp_path_factory.mktemp("confounds")
    server = OpenAIServer(fake_model).start()
    try:
        scripted = _run(folder / "a", "--agent-strategy", "oracle", "--user-strategy", "scripted")
        llm = _run(folder / "b", "--agent-strategy", "oracle", "--user-strategy", "llm",
                   "--user-model", "openai/fake", "--user-api-base", server.base_url)  # fmt: skip
        weak = _run(folder / "c", "--agent-strategy", "tool-calling", "--model", "openai/fake",
                    "--api-base", server.base_url, "--user-strategy", "scripted")  # fmt: skip
    finally:
        server.stop()
    yield Runs(scripted, llm, weak, folder)


def test_different_user_strategies_are_refused_with_exit_3_and_a_table(runs: Runs) -> None:
    proc = tau("compare", runs.scripted, runs.llm_user)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Runs differ in more than the agent" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "user simulator" in line)
    assert "scripted" in row and "llm openai/fake" in row
    assert "Paired difference" not in proc.stdout  # no verdict was printed
    assert proc.stderr.startswith("error: runs differ in user simulator")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_allow_mismatch_proceeds_and_every_output_says_so_first(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    proc = tau("compare", runs.scripted, runs.llm_user, "--allow-mismatch", "--json", out)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("WARNING: comparing unlike runs (--allow-mismatch)")
    assert "user simulator" in first and "Paired difference" in proc.stdout
    data = json.loads(out.read_text())
    assert next(iter(data)) == "warning" and data["warning"] == first
    html = tmp_path / "r.html"
    rep = tau("report", runs.scripted, runs.llm_user, "--allow-mismatch", "-o", html)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.splitlines()[0] == first
    assert f"<title>{first}" in html.read_text().splitlines()[0] or first in html.read_text()[:2000]
    refused = tau("report", runs.scripted, runs.llm_user, "-o", tmp_path / "no.html")
    assert refused.returncode == 3 and not (tmp_path / "no.html").exists()


def test_the_agent_may_differ(runs: Runs) -> None:
    proc = tau("compare", runs.scripted, runs.weak, "--no-matrix")
    assert proc.returncode == 0, proc.stderr
    assert not proc.stdout.startswith("WARNING") and "better" in proc.stdout


def _rewrite(src: Path, dst: Path, header_fn: object = None, record_fn: object = None) -> Path:
    lines = src.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i == 0 and callable(header_fn):
            header_fn(obj)
        elif obj.get("type") == "episode" and callable(record_fn):
            record_fn(obj)
        out.append(json.dumps(obj))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(out) + "\n")
    return dst


def test_old_file_without_manifest_still_loads_and_compares(runs: Runs, tmp_path: Path) -> None:
    old = _rewrite(runs.scripted, tmp_path / "old.jsonl", header_fn=lambda h: h.pop("manifest"))
    same = tau("compare", old, runs.weak, "--no-matrix")
    assert same.returncode == 0, same.stderr
    assert ": no manifest (an older results file); compared on what it records" in same.stderr
    # what it does record (the user strategy) still refuses an unlike run
    unlike = tau("compare", old, runs.llm_user)
    assert unlike.returncode == 3 and "no manifest" in unlike.stdout


def test_changed_task_definitions_are_refused_by_hash(runs: Runs, tmp_path: Path) -> None:
    def edit(record: dict[str, object]) -> None:
        if record["task_id"] == 2:
            task = dict(record["task"])  # type: ignore[call-overload]
            task["instruction"] = "You want something else entirely."
            record["task"] = task

    changed = _rewrite(runs.weak, tmp_path / "changed.jsonl", record_fn=edit)
    proc = tau("compare", runs.scripted, changed)
    assert proc.returncode == 3
    row = next(line for line in proc.stdout.splitlines() if "task definitions" in line)
    assert "tasks whose definition differs: 2" in row


def test_different_task_sets_are_refused_unless_intersect(runs: Runs, tmp_path: Path) -> None:
    fewer = _rewrite(runs.weak, tmp_path / "fewer.jsonl")
    lines = [ln for ln in fewer.read_text().splitlines() if '"task_id": 3,' not in ln]
    fewer.write_text("\n".join(lines) + "\n")
    proc = tau("compare", runs.scripted, fewer)
    assert proc.returncode == 3 and "task set" in proc.stdout
    assert tau("compare", runs.scripted, fewer, "--intersect").returncode == 0


def test_gate_fails_a_regression_and_passes_an_improvement(runs: Runs) -> None:
    bad = tau("compare", "--gate", runs.scripted, runs.weak, "--max-drop", "0.1", "--no-matrix")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    lines = [ln for ln in bad.stdout.splitlines() if ln.startswith("gate: ")]
    assert lines[0].startswith("gate: FAIL: ") and "by more than 0.1" in lines[0]
    assert lines[1].startswith("gate: trials needed for a 95% CI half-width of 0.1 on 4 tasks")
    good = tau("compare", "--gate", runs.weak, runs.scripted, "--max-drop", "0.1", "--no-matrix")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "gate: pass: " in good.stdout
    usage = tau("compare", "--gate", runs.weak, runs.scripted)
    assert usage.returncode == 2 and usage.stderr.startswith("error: --gate needs --max-drop")
