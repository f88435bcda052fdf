"""Where `tau compare --json`, `tau report -o` and `--png-dir` write, as users run them
(the installed console script): never over one of the runs compared, never half a report
over a good one, one `error:` line (exit 2) for an output that cannot be written; the
gate's `--max-drop` range; a report that loads nothing from the network."""

from __future__ import annotations

import http.server
import json
import os
import resource
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau_bench.analysis.compare import compare_runs
from tau_bench.analysis.episode_html import markdown_html
from tau_bench.analysis.gate import GateError, evaluate_gate
from tau_bench.analysis.loading import load_run
from tau_bench.analysis.report import render_report
from tau_bench.analysis.variance import trials_needed
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs
from tests.tau_bench.analysis.test_report import _browse

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
BEACON = "![x](http://127.0.0.1/p.png)"


def tau(
    *args: str | Path, cwd: Path | None = None, max_file_size: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # `ulimit -f`: a write past it fails with EFBIG (File too large)
        if max_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_size, max_file_size))

    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=300,
        preexec_fn=limit,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def copy_run(log: Path, folder: Path, name: str) -> Path:
    """The run's log, τ-bench file and summary copied as `<folder>/<name>.*`; the log."""
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".jsonl", ".json", ".summary.json"):
        source = log.with_name(log.stem + suffix)
        assert source.is_file(), f"the runner writes {source.name}"
        (folder / f"{name}{suffix}").write_bytes(source.read_bytes())
    return folder / f"{name}.jsonl"


@pytest.fixture
def two(runs: Runs, tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the oracle's and the sloppy oracle's runs (the tests try to damage them)."""
    return copy_run(runs.oracle, tmp_path, "oracle"), copy_run(runs.sloppy, tmp_path, "sloppy")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- 1. an output that is one of the inputs ---------------------------------------------


@pytest.mark.parametrize(
    ("args", "flag", "overwritten"),
    [
        (["report", "oracle.jsonl", "-o", "oracle.jsonl"], "-o", "an input"),
        (["report", "oracle.json", "-o", "oracle.summary.json"], "-o", "part of input run"),
        (["report", "oracle.jsonl", "-o", "sub/../oracle.json"], "-o", "part of input run"),
        (["report", "oracle.jsonl", "-o", "link.html"], "-o", "an input"),  # a symlink
        (["report", "sloppy.json", "-o", "hard.html"], "-o", "an input"),  # a hard link
        (["compare", "oracle.jsonl", "sloppy.jsonl", "--json", "sloppy.jsonl"], "--json", ""),
        (["compare", "oracle.json", "sloppy.json", "--json", "sloppy.summary.json"], "--json", ""),
        (["compare", ".", "--json", "sloppy.json"], "--json", "part of input run sloppy"),
        (["report", "per_task.png", "--png-dir", "."], "--png-dir", "an input"),
        (["compare", "r.json.tmp", "--json", "r.json"], "--json", "an input"),  # its temp file
    ],
)
def test_an_output_that_is_one_of_the_runs_is_refused(
    two: tuple[Path, Path], args: list[str], flag: str, overwritten: str
) -> None:
    folder = two[0].parent
    (folder / "sub").mkdir()
    (folder / "link.html").symlink_to(folder / "oracle.jsonl")
    os.link(folder / "sloppy.json", folder / "hard.html")
    for name in ("per_task.png", "r.json.tmp"):  # any file is a results file when named
        (folder / name).write_bytes(two[0].read_bytes())
    before = snapshot(folder)
    line = one_error_line(tau(*args, cwd=folder))
    assert line.startswith(f"error: {flag} ") and "would overwrite" in line
    assert overwritten in line and "choose another output file" in line
    assert snapshot(folder) == before, "no file was written or changed"


def test_an_output_next_to_the_runs_is_written(two: tuple[Path, Path]) -> None:
    folder = two[0].parent
    proc = tau("compare", "oracle.jsonl", "sloppy.jsonl", "--json", "cmp.json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((folder / "cmp.json").read_text())["runs"][0]["label"] == "oracle"


# -- 2. the report is replaced whole or not at all --------------------------------------


def test_a_report_that_cannot_be_written_leaves_the_previous_one(two: tuple[Path, Path]) -> None:
    folder = two[0].parent / "out"
    folder.mkdir()
    previous = folder / "report.html"
    previous.write_text("<p>the good report</p>")
    proc = tau("report", two[0], "-o", previous, max_file_size=20_000)
    line = one_error_line(proc)
    assert line == f"error: cannot write {previous}: File too large"
    assert previous.read_text() == "<p>the good report</p>"
    assert [p.name for p in folder.iterdir()] == ["report.html"], "no temporary file is left"
    ok = tau("report", two[0], "-o", previous)
    assert ok.returncode == 0, ok.stderr
    assert previous.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in folder.iterdir()] == ["report.html"]


# -- 4. outputs that cannot be written ---------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("adir", "--json {folder}/adir is a folder; give a file name"),
        ("afile/x.json", "--json {folder}/afile/x.json: {folder}/afile is not a folder"),
        ("/proc/x.json", "--json: cannot write /proc/x.json: "),
        ("big.json", "--json: cannot write {folder}/big.json: File too large"),
    ],
)
def test_compare_json_that_cannot_be_written(
    two: tuple[Path, Path], target: str, message: str
) -> None:
    folder = two[0].parent
    (folder / "adir").mkdir()
    (folder / "afile").write_text("x")
    out = target if target.startswith("/") else str(folder / target)
    small = 2_000 if target == "big.json" else None  # the comparison's JSON is larger
    proc = tau("compare", *two, "--json", out, "--no-matrix", max_file_size=small)
    assert one_error_line(proc).startswith("error: " + message.format(folder=folder))
    if target in ("adir", "afile/x.json"):  # refused before any work: no table printed
        assert proc.stdout == ""
    assert not (folder / "big.json").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("a\nfile/x.json", "--json {folder}/a\\nfile/x.json: {folder}/a\\nfile is not a folder"),
        ("a\ndir", "--json {folder}/a\\ndir is a folder; give a file name"),
        ("/proc/x\ny.json", "--json: cannot write /proc/x\\ny.json: "),
        ("/proc/x\ty.json", "--json: cannot write /proc/x\\ty.json: "),
    ],
)
def test_a_newline_in_an_output_path_stays_on_the_error_line(
    two: tuple[Path, Path], target: str, message: str
) -> None:
    folder = two[0].parent
    (folder / "a\nfile").write_text("x")
    (folder / "a\ndir").mkdir()
    out = target if target.startswith("/") else str(folder / target)
    proc = tau("compare", *two, "--json", out, "--no-matrix")
    assert one_error_line(proc).startswith("error: " + message.format(folder=folder))


@pytest.mark.parametrize(
    ("png_dir", "message"),
    [
        ("afile", "--png-dir {folder}/afile is a file, not a folder"),
        ("afile/pngs", "--png-dir {folder}/afile/pngs: {folder}/afile is not a folder"),
        ("/proc/pp", "--png-dir: cannot make /proc/pp: "),
    ],
)
def test_png_dir_that_cannot_be_made_stops_before_the_page(
    two: tuple[Path, Path], png_dir: str, message: str
) -> None:
    folder = two[0].parent
    (folder / "afile").write_text("x")
    out = folder / "report.html"
    target = png_dir if png_dir.startswith("/") else str(folder / png_dir)
    proc = tau("report", two[0], "-o", out, "--png-dir", target)
    assert one_error_line(proc).startswith("error: " + message.format(folder=folder))
    assert not out.exists(), "nothing is written when an output cannot be"
    assert (folder / "afile").read_text() == "x"


# -- 5. --max-drop ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.5", "-0.1"])
def test_max_drop_must_be_a_number_from_0_to_1(two: tuple[Path, Path], value: str) -> None:
    proc = tau("compare", "--gate", *two, "--max-drop", value, "--no-matrix")
    line = one_error_line(proc)
    assert line.startswith("error: --max-drop must be a number from 0 to 1"), line
    assert proc.stdout == "", "refused before any work"


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_max_drop_bounds_are_accepted(two: tuple[Path, Path], value: float) -> None:
    proc = tau("compare", "--gate", *two, "--max-drop", str(value), "--no-matrix")
    assert proc.returncode in (0, 1), proc.stderr  # the verdict, not a refusal
    assert "gate: " in proc.stdout


def test_gate_and_trials_needed_refuse_a_max_drop_that_is_not_a_number(runs: Runs) -> None:
    comparison = compare_runs([load_run(runs.oracle), load_run(runs.sloppy)])
    for bad in (float("nan"), float("inf"), 2.0):
        with pytest.raises(GateError, match="from 0 to 1"):
            evaluate_gate(comparison, bad)
    rewards = {0: [1.0, 0.0], 1: [1.0, 1.0]}
    for bad in (float("nan"), float("inf")):
        assert trials_needed(rewards, rewards, half_width=bad) is None


# -- 3. nothing in a trajectory makes the page load a URL ---------------------------------


def test_markdown_images_are_links_and_the_page_forbids_fetching(
    two: tuple[Path, Path],
) -> None:
    assert "<img" not in markdown_html(f"look {BEACON}")
    log = two[0]
    lines = log.read_text().splitlines()
    planted = []
    for line in lines:
        record = json.loads(line)
        for m in record.get("messages") or []:
            if m.get("role") in ("assistant", "user") and isinstance(m.get("content"), str):
                m["content"] += f" {BEACON}"
        planted.append(json.dumps(record))
    log.write_text("\n".join(planted) + "\n")
    out = log.parent / "beacon.html"
    proc = tau("report", log, "-o", out)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert '!<a href="http://127.0.0.1/p.png">x</a>' in html  # shown, not loaded
    assert "<img" not in html
    assert (
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "base-uri 'none'; form-action 'none'\">" in html
    )
    assert html.index("Content-Security-Policy") < html.index("<style>")


@pytest.fixture
def beacon_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that records the paths it is asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_chromium_fetches_nothing_even_from_an_img_tag_in_the_page(
    runs: Runs, tmp_path: Path, beacon_server: tuple[str, list[str]]
) -> None:
    """Defence in depth: were an `<img>` to reach the page (a future escaping bug), the
    page's Content-Security-Policy still keeps the browser from fetching it; the page's
    own script still runs."""
    base, asked = beacon_server
    run = load_run(runs.oracle)
    html = render_report(compare_runs([run]), [run])
    planted = html.replace("<body>", f'<body><img src="{base}/beacon.png">', 1)
    page = tmp_path / "planted.html"
    page.write_text(planted)
    dom = _browse(page.as_uri(), tmp_path, "--dump-dom").stdout
    assert 'data-ready="1"' in dom, "the page script ran under the policy"
    assert asked == [], "the browser fetched a URL from the page"


# -- a lone surrogate in a trajectory ------------------------------------------------------


def test_a_lone_surrogate_in_a_message_does_not_stop_the_report(two: tuple[Path, Path]) -> None:
    log = two[0]
    text = log.read_text()
    first = text.index('"content": "') + len('"content": "')
    log.write_text(text[:first] + "\\ud800 " + text[first:])  # JSON's escape of U+D800
    out = log.parent / "surrogate.html"
    proc = tau("report", log, "-o", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_pipe_or_device_output_is_refused_not_replaced(
    two: tuple[Path, Path], command: str
) -> None:
    """The atomic rename replaced the special file itself (`-o /dev/null` as root
    replaced the system's device with a report)."""
    fifo = two[0].parent / "pipe"
    os.mkfifo(fifo)
    args = ("-o", fifo) if command == "report" else ("--json", fifo, "--no-matrix")
    proc = tau(command, *two, *args)
    line = one_error_line(proc)
    assert line.endswith("is a named pipe, not a regular file; give a file name"), line
    assert stat.S_ISFIFO(fifo.stat().st_mode)
