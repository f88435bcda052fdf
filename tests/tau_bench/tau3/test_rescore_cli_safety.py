"""`tau rescore FILE --env tau3/<domain>` on hostile or mistaken input, as users run it:
task ids from the file reach the terminal escaped, a huge (sparse) file is one line (not
a MemoryError), a replay mismatch says what differs on its one line, and our own run
log is recognised with the export that makes it rescorable."""

from __future__ import annotations

import copy
import json
import resource
import subprocess
from pathlib import Path

import pytest

from tests.tau_bench.tau3.tau3_runs import ENV, TAU, oracle_run, tau

MUTATING = ("book_reservation", "cancel_reservation", "update_reservation")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """(run log, exported τ² data) of an airline oracle run with writes."""
    folder = tmp_path_factory.mktemp("tau3run")
    log = oracle_run(folder / "runs", "tau3/airline", "5,6,12,31")
    tau("export", log, "--format", "tau2", "-o", folder / "tau2")
    (path,) = (folder / "tau2").glob("*.airline.json")
    return log, json.loads(path.read_text())


def rescore(path: Path) -> subprocess.CompletedProcess[str]:
    return tau("rescore", path, "--env", "tau3/airline", "--judge-model", "assume-met", check=False)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


def test_task_ids_from_the_file_are_printed_escaped(
    exported: tuple[Path, dict], tmp_path: Path
) -> None:
    data = copy.deepcopy(exported[1])
    evil = "\x1b[31mRED\x1b]0;pwned\x07"
    sim = data["simulations"][0]
    for task in data["tasks"]:
        if task["id"] == sim["task_id"]:
            task["id"] = evil + task["id"]
    sim["task_id"] = evil + sim["task_id"]
    sim["reward_info"]["reward"] = 0.25  # so the rescore reports it as changed
    src = tmp_path / "evil.json"
    src.write_text(json.dumps(data))
    proc = rescore(src)
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 0, err
    assert "\\x1b[31mRED\\x1b]0;pwned\\x07" in out and "0.2500 -> 1.0000" in out
    assert "\x1b" not in out + err and "\x07" not in out + err


def test_a_huge_sparse_file_is_one_line_not_a_memory_error(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(3 << 30)  # sparse: costs no disk
    limit = 2 << 30  # the old reader's 3 GiB read fails here, as on a small machine

    proc = subprocess.run(
        [str(TAU), "rescore", str(big), "--env", "tau3/airline", "--judge-model", "assume-met"],
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )
    line = one_error_line(proc)
    assert "is larger than 256 MiB" in line


def test_a_replay_mismatch_says_what_differs_on_one_line(
    exported: tuple[Path, dict], tmp_path: Path
) -> None:
    data = copy.deepcopy(exported[1])
    changed = False
    for sim in data["simulations"]:
        messages = sim["messages"]
        for i, m in enumerate(messages[:-1]):
            calls = m.get("tool_calls") or []
            if not changed and calls and calls[0]["name"].startswith(MUTATING):
                messages[i + 1]["content"] = "tampered\nresult"
                changed = True
    assert changed
    src = tmp_path / "mismatch.json"
    src.write_text(json.dumps(data))
    line = one_error_line(rescore(src))
    assert "cannot evaluate: ReplayMismatch: Tool call: ToolCall(" in line
    assert "Returned: " in line and "Expected: tampered result" in line


def test_our_own_run_log_names_the_export_to_make_first(exported: tuple[Path, dict]) -> None:
    log = exported[0]
    line = one_error_line(rescore(log))
    assert "is a tau run results log, not a τ² results file" in line
    assert f"`tau export {log} --format tau2 -o DIR`" in line


def test_our_own_run_log_without_env_names_the_export_too(exported: tuple[Path, dict]) -> None:
    """Without --env the run log's own (τ³) domains are read: the same advice, not "rescore
    it with a v1 --env"."""
    log = exported[0]
    line = one_error_line(tau("rescore", log, check=False))
    assert "is a τ³ run: export it first" in line, line
    assert f"`tau export {log} --format tau2 -o DIR`" in line and "--env tau3/<domain>" in line


def test_an_output_the_write_fails_on_is_one_line(
    exported: tuple[Path, dict], tmp_path: Path
) -> None:
    """A write only the write itself can refuse (here a file size limit: EFBIG; also a
    full disk, a path under /proc as root) is one `cannot write` line, not a traceback."""
    src = tmp_path / "in.json"
    src.write_text(json.dumps(exported[1]))
    out = tmp_path / "out.json"
    limit = 2048  # smaller than the rescored file; the check before the work passes

    proc = subprocess.run(
        [str(TAU), "rescore", str(src), "--env", "tau3/airline", "--judge-model", "assume-met",
         "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )  # fmt: skip
    line = one_error_line(proc)
    assert line.startswith(f"error: cannot write {out}: "), line
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))
