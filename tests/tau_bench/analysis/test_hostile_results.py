"""Results files that pass the field checks but are hostile or broken in what they hold
(an adversarial probe's findings): outputs over the run's own files, values nested deep
inside strings, lone surrogates, huge messages, secrets never masked, costs that overflow,
stdout that cannot be written. Most through the installed `tau`, as users meet them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tau_bench.analysis import svg
from tau_bench.analysis.loading import load_run
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs

TAU = Path(sys.executable).parent / "tau"
KEY = "sk-abc123def456ghi789jkl012mno345"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"


def tau(*args: str | Path, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [str(TAU), *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def edited(
    src: Path, dst: Path, change: Callable[[dict[str, Any]], None], *, header: bool = False
) -> Path:
    """A copy of the log `src` with `change` applied to its header or its first record
    that made a tool call (a failed one in the sloppy run)."""
    lines = src.read_text().splitlines()
    objs = [json.loads(line) for line in lines]
    if header:
        change(objs[0])
    else:
        target = next(
            o for o in objs[1:] if any(m.get("tool_calls") for m in o.get("messages", []))
        )
        change(target)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    return dst


def first_call(record: dict[str, Any]) -> dict[str, Any]:
    message = next(m for m in record["messages"] if m.get("tool_calls"))
    return message["tool_calls"][0]["function"]


def agent_text(record: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in record["messages"] if m.get("role") == "assistant" and m.get("content"))


# -- 1, 2: outputs over the run's own files ---------------------------------------------


@pytest.mark.parametrize("sibling", [".jsonl", ".json", ".summary.json"])
def test_analyze_refuses_to_write_over_its_run_before_any_judge_call(
    runs: Runs, tmp_path: Path, sibling: str
) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(runs.sloppy.read_bytes())
    target = log.with_name("run" + sibling)
    before = target.read_bytes() if target.exists() else None
    # no judge is reachable: a call would fail, the refusal comes first
    proc = tau(
        "analyze", log, "--model", "openai/x", "--api-base", "http://127.0.0.1:9", "-o", target
    )
    assert "would overwrite" in one_error_line(proc)
    assert (target.read_bytes() if target.exists() else None) == before


@pytest.mark.parametrize(("source", "output"), [(".json", ".summary.json"), (".jsonl", ".json")])
def test_rescore_refuses_to_write_over_its_run(
    runs: Runs, tmp_path: Path, source: str, output: str
) -> None:
    for suffix in (".jsonl", ".json", ".summary.json"):
        (tmp_path / ("sloppy" + suffix)).write_bytes(
            runs.sloppy.with_name("sloppy" + suffix).read_bytes()
        )
    target = tmp_path / ("sloppy" + output)
    before = target.read_bytes()
    proc = tau("rescore", tmp_path / ("sloppy" + source), "-o", target)
    assert "would overwrite" in one_error_line(proc)
    assert target.read_bytes() == before


# -- 3: values the field checks let through --------------------------------------------


def test_bounded_decoding_of_arguments() -> None:
    from tau_bench.analysis.shown import arguments_text, decode_arguments

    deep = "[" * 100_000 + "]" * 100_000
    long_int = '{"n": ' + "9" * 5000 + "}"
    assert decode_arguments(deep) == (deep, False)
    assert decode_arguments(long_int) == (long_int, False)
    assert decode_arguments('{"a": 1}') == ({"a": 1}, True)
    assert decode_arguments("") == ({}, True)
    shown = arguments_text(deep)
    assert shown.startswith("[[[") and "more characters]" in shown and len(shown) < 21_000


def test_hostile_values_are_one_line_or_shown(runs: Runs, tmp_path: Path) -> None:
    kind = edited(
        runs.sloppy,
        tmp_path / "kind.jsonl",
        lambda r: r.update(reward=None, error={"kind": ["x"], "source": "agent"}),
    )
    for command in ("view", "compare"):  # refused as every reader refuses a bad field
        assert "error.kind: expected a string or null" in one_error_line(tau(command, kind))
    cases = {
        "deep.jsonl": lambda r: first_call(r).update(arguments="[" * 100_000 + "]" * 100_000),
        "long.jsonl": lambda r: first_call(r).update(arguments='{"n": ' + "9" * 5000 + "}"),
        "kwargs.jsonl": lambda r: r["task"]["actions"][0].update(kwargs="[" * 100_000),
    }
    for name, change in cases.items():
        log = edited(runs.sloppy, tmp_path / name, change)
        for args in (("view", log, "--no-interactive", "-x"), ("compare", log, "--no-matrix")):
            proc = tau(*args, "--bootstrap", "10") if args[0] == "compare" else tau(*args)
            assert proc.returncode == 0, (name, proc.stderr)
            assert "Traceback" not in proc.stderr
        if name == "long.jsonl":  # shown as the text it is
            assert "9" * 40 in tau("view", log, "--no-interactive", "-x").stdout


def test_a_header_agent_name_that_is_not_text_is_one_line(runs: Runs, tmp_path: Path) -> None:
    def change(header: dict[str, Any]) -> None:
        header["manifest"]["agent"]["name"] = ["x"]

    log = edited(runs.sloppy, tmp_path / "name.jsonl", change, header=True)
    assert "manifest.agent.name: expected a string" in one_error_line(tau("view", log))


@pytest.mark.parametrize("where", ["error", "traceback", "errors", "stop_reason"])
def test_tau_bench_fields_nested_deep_load(runs: Runs, tmp_path: Path, where: str) -> None:
    entries = json.loads(runs.sloppy.with_suffix(".json").read_text())
    info = entries[0].setdefault("info", {})
    if where in ("error", "traceback"):
        entries[0]["traj"] = []
        info.setdefault("error", "boom")
    info[where] = ["__DEEP__"] if where == "errors" else "__DEEP__"
    text = json.dumps(entries).replace('"__DEEP__"', "[" * 1000 + "]" * 1000)
    path = tmp_path / "run.json"
    path.write_text(text)
    run = load_run(path)  # no RecursionError
    record = next(r for r in run.records if r.key == run.records[0].key)
    assert record is not None


# -- 4, 8: lone surrogates and secrets ---------------------------------------------------


def test_view_and_report_escape_surrogates_and_mask_secrets(runs: Runs, tmp_path: Path) -> None:
    said = f"hi \ud800 key {KEY} Authorization: Bearer {BEARER}"

    def change(record: dict[str, Any]) -> None:
        agent_text(record)["content"] = said
        first_call(record)["arguments"] = json.dumps({"token": f"Bearer {BEARER}"})

    log = edited(runs.sloppy, tmp_path / "s.jsonl", change)
    view = tau("view", log, "--no-interactive", "--expand")
    assert view.returncode == 0, view.stderr
    assert "\\ud800" in view.stdout and KEY not in view.stdout and BEARER not in view.stdout
    report = tau("report", log, "-o", tmp_path / "r.html", "--bootstrap", "10")
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert KEY not in page and BEARER not in page and "***" in page
    export = tau("export", log, "-o", tmp_path / "exp")
    assert export.returncode == 0, export.stderr
    for file in (tmp_path / "exp").rglob("*"):
        if file.is_file():
            assert KEY not in file.read_text() and BEARER not in file.read_text()


def test_rescore_of_a_surrogate_writes_no_tmp_and_masks(runs: Runs, tmp_path: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        agent_text(record)["content"] = f"hi \ud800 {KEY}"
        record["task"]["instruction"] = "x \ud800 y"

    log = edited(runs.sloppy, tmp_path / "s.jsonl", change)
    out = tmp_path / "out" / "rescored.jsonl"
    proc = tau("rescore", log, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert not out.with_name(out.name + ".tmp").exists()
    text = out.read_text()
    assert KEY not in text and "\ufffd" in text  # as the runner writes a log
    assert load_run(out).records  # still a log the readers take


def test_compare_takes_a_surrogate_in_an_instruction(runs: Runs, tmp_path: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        record["task"]["instruction"] = "x \ud800 y"

    log = edited(runs.sloppy, tmp_path / "s.jsonl", change)
    proc = tau("compare", log, "--no-matrix", "--bootstrap", "10")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


# -- 5: rescore -o on a τ-bench file reuses what was read --------------------------------


def test_rescore_of_a_tau_bench_file_with_a_bom_keeps_its_keys(runs: Runs, tmp_path: Path) -> None:
    entries = json.loads(runs.sloppy.with_suffix(".json").read_text())
    entries[0]["info"]["extra"] = "__DEEP__"
    entries[1]["mine"] = {"kept": True}
    path = tmp_path / "run.json"
    path.write_text("\ufeff" + json.dumps(entries).replace('"__DEEP__"', "[" * 300 + "]" * 300))
    out = tmp_path / "out.json"
    proc = tau("rescore", path, "--env", "airline", "-o", out)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(out.read_text())
    assert written[1]["mine"] == {"kept": True}
    assert "rescored" in written[0]["info"] or "rescored" in written[1]["info"]


# -- 6, 7: bounds on what is rendered and read -------------------------------------------


def test_clip_says_what_it_left_out() -> None:
    from tau_bench.analysis.shown import clip

    assert clip("short") == "short"
    lines = clip("x\n" * 1_000_000)
    assert lines.endswith("[... 999,500 more lines]") and lines.count("\n") == 500
    chars = clip("y" * 100_000)
    assert chars.endswith("[... 80,000 more characters]")


def test_a_huge_message_is_clipped_in_view(runs: Runs, tmp_path: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        agent_text(record)["content"] = "x\n" * 1_000_000

    log = edited(runs.sloppy, tmp_path / "m.jsonl", change)
    task = next(json.loads(line) for line in log.read_text().splitlines()[1:] if "x\\nx\\n" in line)
    proc = tau(
        "view",
        log,
        "--no-interactive",
        "--task",
        str(task["task_id"]),
        "--trial",
        str(task["trial"]),
    )
    assert proc.returncode == 0, proc.stderr
    assert "more lines]" in proc.stdout and proc.stdout.count("\n") < 5_000


def test_a_tau_bench_json_past_its_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with path.open("wb") as fh:  # sparse: `[` then zeros, never read
        fh.write(b"[")
        fh.truncate(256 * 1024**2 + 1)
    proc = tau("view", path)
    assert "larger than 256 MiB" in one_error_line(proc)


def test_a_log_with_a_bom_is_read_as_a_log(runs: Runs, tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + runs.sloppy.read_bytes())
    assert load_run(path).source_format == "log"


# -- 9: costs that overflow --------------------------------------------------------------


def test_costs_that_overflow_are_unknown_not_a_crash(runs: Runs, tmp_path: Path) -> None:
    lines = runs.sloppy.read_text().splitlines()
    objs = [json.loads(line) for line in lines]
    for record in objs[1:]:
        record["agent_usage"]["cost"] = 1e308
        if record.get("cost"):  # the cost record the tables and the chart read
            record["cost"].update(agent=1e308, total=1e308, known=1e308)
    log = tmp_path / "c.jsonl"
    log.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    report = tau("report", log, "-o", tmp_path / "r.html", "--bootstrap", "10")
    assert report.returncode == 0, report.stderr
    compare = tau(
        "compare", log, "--no-matrix", "--bootstrap", "10", "--json", tmp_path / "cmp.json"
    )
    assert compare.returncode == 0, compare.stderr
    row = json.loads((tmp_path / "cmp.json").read_text())["runs"][0]
    assert row["cost_total"] is None and row["cost_agent"] is None
    assert svg.nice_ticks(1.7e308)[-1] == 1.7e308 and svg.nice_ticks(float("inf"))[-1] == 1.0


# -- 10: smaller ---------------------------------------------------------------------------


def test_view_to_a_full_device_is_one_line(runs: Runs) -> None:
    with open("/dev/full", "w") as full:
        proc = tau("view", runs.sloppy, "--no-interactive", stdout=full)
    assert "cannot write the output to stdout" in one_error_line(proc)


def test_non_ascii_digits_in_task_are_refused_plainly(runs: Runs) -> None:
    line = one_error_line(tau("view", runs.sloppy, "--task", "²"))
    assert "invalid literal" not in line and "'²'" in line


def test_a_newline_in_a_file_name_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a\nb.json"
    path.write_text("not json")
    assert "a\\nb.json" in one_error_line(tau("view", path))


def test_gate_with_one_run_is_refused_before_any_table(runs: Runs) -> None:
    proc = tau("compare", runs.sloppy, "--gate", "--max-drop", "0.1")
    assert "compares exactly two runs" in one_error_line(proc)
    assert proc.stdout == ""


def test_analyze_with_every_judge_call_failing_exits_2_and_keeps_the_file(
    runs: Runs, tmp_path: Path
) -> None:
    from tau_bench.fakes.openai_server import ChatReply, OpenAIServer

    out = tmp_path / "a.json"
    with OpenAIServer(lambda request: ChatReply(status=404, error="no such model")) as server:
        proc = tau(
            "analyze",
            runs.sloppy,
            "--model",
            "openai/nope",
            "--api-base",
            server.base_url,
            "-n",
            "1",
            "-o",
            out,
        )
    line = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and line.startswith("error: no episode classified"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(out.read_text())["summary"]["classified"] == 0
