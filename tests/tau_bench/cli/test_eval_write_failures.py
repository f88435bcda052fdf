"""`tau eval` whose files cannot be written (a full disk, a file size limit) stops every
run, keeps every line it wrote, and says so in one line with the command that continues
it; `tau eval --resume` then completes the eval, every (task, sample) exactly once.

Through the installed `tau` in a subprocess, the full disk made by `RLIMIT_FSIZE`
(`ulimit -f`: a write past the limit fails with EFBIG, as on a full disk with ENOSPC), as
`tests/tau_bench/runner/test_write_failures.py` does for `tau run`."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TASKS = 20
USER_MODELS = ["a/one", "b/two"]
LOG_LIMIT = 100_000  # bytes: the header and a handful of retail episodes


def tau(*args: str | Path, max_file_size: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # `ulimit -f`: a write past it fails with EFBIG (File too large)
        if max_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_size, max_file_size))

    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
        preexec_fn=limit,
    )


def write_eval(tmp_path: Path) -> Path:
    path = tmp_path / "eval.yaml"
    data = {
        "name": "eval",
        "env": "retail",
        "agent-strategy": "oracle",
        "user-strategy": "scripted",
        "user-models": USER_MODELS,
        "task-ids": f"0-{TASKS - 1}",
        "num-samples": 1,
        "max-concurrency": 4,
        "log-dir": str(tmp_path / "results"),
    }
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def logs(tmp_path: Path, name: str) -> list[Path]:
    folder = tmp_path / "results" / name
    return [folder / f"{name}__{m.replace('/', '_')}.jsonl" for m in USER_MODELS]


def episode_keys(log: Path) -> list[tuple[int, int]]:
    """Every line of the log is a whole JSON document (a half line fails here)."""
    rows = [json.loads(line) for line in log.read_bytes().split(b"\n") if line]
    return [(d["task_id"], d["trial"]) for d in rows if d["type"] == "episode"]


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    return lines[0]


def report(tmp_path: Path, name: str) -> dict[str, Any]:
    return json.loads((tmp_path / "results" / f"{name}.eval.json").read_text())


def test_logs_that_cannot_be_written_stop_the_eval_and_resume_completes_it(tmp_path):
    config = write_eval(tmp_path)
    flags = ["--name", "full", "--quiet"]  # a flag given is part of the resume command
    proc = tau("eval", "--config", config, *flags, max_file_size=LOG_LIMIT)
    line = one_error_line(proc)
    folder = tmp_path / "results" / "full"
    assert line.startswith(f"error: cannot write {folder}/full__"), line
    assert ".jsonl: File too large; the eval was stopped" in line
    assert line.endswith(f"continue with: tau eval --config {config} --name full --resume")
    saved = {log: episode_keys(log) for log in logs(tmp_path, "full")}
    for keys in saved.values():  # whole lines only, each once: nothing half-written
        assert len(keys) < TASKS and len(keys) == len(set(keys))
    assert all(log.stat().st_size <= LOG_LIMIT for log in saved)
    assert report(tmp_path, "full")["interrupted"] is True

    resumed = tau("eval", "--config", config, "--name", "full", "--quiet", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for log, before in saved.items():
        keys = episode_keys(log)
        assert keys[: len(before)] == before  # what was written before is still there
        assert sorted(keys) == [(t, 0) for t in range(TASKS)]  # none lost, none twice
    final = report(tmp_path, "full")
    assert final["interrupted"] is False
    assert final["overall"]["episodes"] == TASKS * len(USER_MODELS)


def test_a_report_that_cannot_be_written_is_one_line_and_the_logs_are_kept(tmp_path):
    config = write_eval(tmp_path)
    blocker = tmp_path / "results" / "eval.eval.json.tmp"
    blocker.mkdir(parents=True)  # where the report is written first: it cannot be
    proc = tau("eval", "--config", config, "--quiet")
    line = one_error_line(proc)
    assert line.startswith(f"error: cannot write {tmp_path / 'results' / 'eval.eval.json'}: ")
    assert f"the results logs in {tmp_path / 'results' / 'eval'} hold every finished" in line
    assert line.endswith(f"continue with: tau eval --config {config} --resume")
    for log in logs(tmp_path, "eval"):
        assert sorted(episode_keys(log)) == [(t, 0) for t in range(TASKS)]
    assert "overall" in proc.stdout  # the table is shown all the same

    blocker.rmdir()
    resumed = tau("eval", "--config", config, "--quiet", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert report(tmp_path, "eval")["overall"]["episodes"] == TASKS * len(USER_MODELS)
    for log in logs(tmp_path, "eval"):
        assert sorted(episode_keys(log)) == [(t, 0) for t in range(TASKS)]
