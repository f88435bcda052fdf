"""The HTML report: content, safety, self-containment, and rendering in headless Chromium.

The browser test needs Debian's `chromium` (apt-get install -y chromium). Without it the
test fails with that instruction, unless TAU_SKIP_BROWSER_TESTS=1 is set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tau_bench.analysis.compare import Comparison, compare_runs
from tau_bench.analysis.loading import Run, load_run
from tau_bench.analysis.plots import write_pngs
from tau_bench.analysis.report import render_report, write_report
from tests.tau_bench.analysis.conftest import HISTORICAL, Runs


@pytest.fixture(scope="module")
def pair(runs: Runs) -> tuple[list[Run], Comparison]:
    loaded = [load_run(runs.oracle), load_run(runs.sloppy)]
    return loaded, compare_runs(loaded)


@pytest.fixture(scope="module")
def report_file(
    pair: tuple[list[Run], Comparison], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    loaded, comparison = pair
    return write_report(tmp_path_factory.mktemp("report") / "report.html", comparison, loaded)


def test_sections_and_numbers(report_file: Path) -> None:
    html = report_file.read_text()
    for section in ("summary", "paired", "charts", "heatmap", "trajectories"):
        assert f'id="{section}"' in html
    assert html.count("<svg") == 3  # forest plot, pass^k, cost vs reward
    assert "oracle better" in html and "[-0.500, -0.200]" in html
    assert "<td>0.600</td>" in html  # sloppy's average reward
    # every (run, task) has a heatmap cell linking to its trajectories
    for run in (1, 2):
        for task in (0, 1, 2, 3, 13):
            assert f'href="#t-{run}-{task}"' in html and f'id="t-{run}-{task}"' in html
    assert html.count('class="episode"') == 20


def test_trajectories_are_complete_and_escaped(report_file: Path) -> None:
    html = report_file.read_text()
    # the agent's text is shown, its markup escaped, never executed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert html.count("<script>") == 1  # the page's own filter script
    # tool calls with arguments, observations, the failing episode's DB diff
    assert "→ book_reservation" in html and "&quot;user_id&quot;: &quot;mia_li_3668&quot;" in html
    assert "tool ← <code>book_reservation</code>" in html
    assert "Database difference" in html and "payment_methods.certificate_7504069" in html
    assert "expected actions (1)" in html
    # the policy is shown once per run, not once per episode
    assert html.count("system prompt 1 of this run (") == 2


def test_self_contained(report_file: Path) -> None:
    html = report_file.read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b", html)
    assert "@import" not in html and "url(" not in html


def test_historical_report_renders(tmp_path: Path) -> None:
    run = load_run(HISTORICAL)
    html = render_report(compare_runs([run]), [run], "history")
    assert "One run only" in html and html.count('class="episode"') == 200
    assert "no trajectory recorded" not in html


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("TAU_SKIP_BROWSER_TESTS") == "1":
        pytest.skip("TAU_SKIP_BROWSER_TESTS=1: browser rendering not checked")
    pytest.fail(
        "the report rendering test needs Chromium: apt-get install -y chromium "
        "(or set TAU_SKIP_BROWSER_TESTS=1 to skip it)"
    )


def _browse(url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *extra,
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_chromium_renders_filters_and_opens_links(report_file: Path, tmp_path: Path) -> None:
    url = report_file.resolve().as_uri()
    dom = _browse(url + "?run=2&outcome=fail", tmp_path, "--dump-dom").stdout
    assert 'data-ready="1"' in dom, "the page script did not run to its end"
    assert "4 of 20 episodes shown" in dom  # the sloppy run's four failures
    visible = re.findall(
        r'<details class="episode" id="(e-[\d-]+)" data-outcome="(\w+)"[^>]*?>', dom
    )
    hidden = set(re.findall(r'<details class="episode" id="(e-[\d-]+)"[^>]*hidden', dom))
    shown = [(i, o) for i, o in visible if i not in hidden]
    assert sorted(i for i, _ in shown) == ["e-2-0-0", "e-2-1-1", "e-2-2-0", "e-2-3-1"]
    assert {o for _, o in shown} == {"fail"}
    assert '<section class="run" data-run="1" hidden="">' in dom

    dom = _browse(url + "#e-2-0-0", tmp_path, "--dump-dom").stdout
    assert re.search(r'<details class="task" id="t-2-0" data-task="0" open="">', dom)
    assert re.search(r'<details class="episode" id="e-2-0-0"[^>]*open=""', dom)
    assert "20 of 20 episodes shown" in dom

    shot = tmp_path / "report.png"
    _browse(url, tmp_path, f"--screenshot={shot}", "--window-size=1300,2200")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_png_charts(pair: tuple[list[Run], Comparison], tmp_path: Path) -> None:
    _, comparison = pair
    paths = write_pngs(comparison, tmp_path / "png")
    assert [p.name for p in paths] == ["pass_k.png", "cost_reward.png", "per_task.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
