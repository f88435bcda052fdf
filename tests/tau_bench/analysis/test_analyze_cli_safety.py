"""`tau analyze` as users run it (the installed console script, a judge on the fake
OpenAI server): where the default output goes, secrets the judge echoes, outputs that
cannot be written, Ctrl-C part way, and refused temperatures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs

TAU = Path(sys.executable).parent / "tau"
SECRET = "sk-judge-secret-4242424242"
GOOD = {"fault_author": "agent", "fault_type": "other", "description": "The agent stopped."}


def env() -> dict[str, str]:
    return {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": SECRET,
    }


def tau(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=env(),
        cwd=cwd,
        timeout=300,
    )


def judged(server: OpenAIServer, *extra: str | Path) -> list[str]:
    return ["--model", "openai/judge", "--api-base", server.base_url, *map(str, extra)]


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@pytest.fixture
def judge() -> Iterator[OpenAIServer]:
    with OpenAIServer(lambda request: ChatReply(text=json.dumps(GOOD))) as server:
        yield server


def with_run_name(src: Path, dst: Path, run_name: str) -> Path:
    lines = src.read_text().splitlines()
    header = json.loads(lines[0])
    header["run_name"] = run_name
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return dst


# -- 1. the default output stays in the current folder ----------------------------------


def test_a_run_name_with_folders_cannot_send_the_default_output_elsewhere(
    runs: Runs, judge: OpenAIServer, tmp_path: Path
) -> None:
    log = with_run_name(runs.sloppy, tmp_path / "in" / "evil.jsonl", "/../../target/victim")
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    proc = tau("analyze", log, *judged(judge, "-n", "1"), cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "target").exists() and not (tmp_path / "a" / "target").exists()
    assert [p.name for p in cwd.iterdir()] == ["analysis-target_victim.json"]
    assert json.loads((cwd / "analysis-target_victim.json").read_text())["summary"]["analyzed"] == 1


def test_a_very_long_run_name_gives_a_short_stable_default_output(
    runs: Runs, judge: OpenAIServer, tmp_path: Path
) -> None:
    log = with_run_name(runs.sloppy, tmp_path / "in" / "long.jsonl", "L" * 300)
    names = []
    for folder in ("one", "two"):
        cwd = tmp_path / folder
        cwd.mkdir()
        proc = tau("analyze", log, *judged(judge, "-n", "1"), cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        (written,) = cwd.iterdir()
        names.append(written.name)
    assert names[0] == names[1]  # the same run, the same name
    assert names[0].startswith("analysis-LLLL") and len(names[0]) <= 100


# -- 2. secrets the judge echoes -----------------------------------------------------------


def echo_key(request: ChatRequest) -> ChatReply:
    """A judge that repeats the API key it was sent, plainly and URL-encoded."""
    key = request.headers.get("authorization", "").split()[-1]
    described = f"key={key}; quoted {key.replace('-', '%2D')}; done"
    return ChatReply(text=json.dumps({**GOOD, "description": described}))


def test_secrets_the_judge_echoes_are_masked_in_the_file_and_the_terminal(
    runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "analysis.json"
    with OpenAIServer(echo_key) as server:
        proc = tau("analyze", runs.sloppy, *judged(server, "-o", out))
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert SECRET not in text and SECRET.replace("-", "%2D") not in text
    assert SECRET not in proc.stdout + proc.stderr
    results = json.loads(text)["results"]
    assert len(results) == 4
    assert all(r["description"] == "key=***; quoted ***; done" for r in results)


# -- 3. outputs that cannot be written, and Ctrl-C -----------------------------------------


@pytest.mark.parametrize("where", ["folder", "under_a_file", "default_is_a_folder"])
def test_an_unwritable_output_is_refused_before_any_judge_call(
    runs: Runs, judge: OpenAIServer, tmp_path: Path, where: str
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.jsonl").write_text("{}\n")
    (tmp_path / "analysis-sloppy.json").mkdir()
    output = {
        "folder": ["-o", tmp_path / "folder"],
        "under_a_file": ["-o", tmp_path / "file.jsonl" / "x.json"],
        "default_is_a_folder": [],
    }[where]
    proc = tau("analyze", runs.sloppy, *judged(judge, *output), cwd=tmp_path)
    line = one_error_line(proc)
    assert "folder" in line
    assert judge.requests == []  # nothing paid for
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "analysis-sloppy.json",
        "file.jsonl",
        "folder",
    ]
    assert list((tmp_path / "folder").iterdir()) == []


def test_ctrl_c_keeps_the_results_already_paid_for(runs: Runs, tmp_path: Path) -> None:
    second_call = threading.Event()

    async def respond(request: ChatRequest) -> ChatReply:
        if len(server.requests) == 1:
            return ChatReply(text=json.dumps(GOOD))
        second_call.set()  # the first result is finished: the second call needs it done
        await asyncio.Event().wait()  # never answered (cancelled when the server stops)
        raise AssertionError("unreachable")

    out = tmp_path / "analysis.json"
    server = OpenAIServer(respond).start()
    try:
        proc = subprocess.Popen(
            [str(TAU), "analyze", str(runs.sloppy), *judged(server, "-o", out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        try:
            assert second_call.wait(timeout=120), "the second judge call never came"
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    finally:
        server.stop()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted: wrote the 1 finished result(s) to" in stderr
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    assert [(r["task_id"], r["status"]) for r in data["results"]] == [(0, "classified")]
    assert data["failed_episodes"] == {"sloppy": 4}
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left


# -- 5. temperatures no model takes ----------------------------------------------------------


@pytest.mark.parametrize("temperature", ["nan", "inf", "-inf", "-0.5", "2.5"])
def test_a_temperature_no_model_takes_is_refused_up_front(
    runs: Runs, judge: OpenAIServer, tmp_path: Path, temperature: str
) -> None:
    out = tmp_path / "analysis.json"
    proc = tau("analyze", runs.sloppy, *judged(judge, f"--temperature={temperature}", "-o", out))
    assert "--temperature" in one_error_line(proc)
    assert judge.requests == [] and not out.exists()


def test_temperatures_in_range_are_sent(runs: Runs, judge: OpenAIServer, tmp_path: Path) -> None:
    proc = tau(
        "analyze", runs.sloppy, *judged(judge, "--temperature", "2", "-n", "1"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert judge.requests[0].body["temperature"] == 2
