"""`GET /runs/{id}/report` is bounded: a finished run's page is rendered once and kept, a
request for a page being rendered waits for that render, and renders beyond the limit
are a 503 with Retry-After.

Was: every request rendered the page again (a 2,000-episode run: 13 MB in 5 s), and ten
at once took the server from 236 MB to 735 MB."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tau_bench.service import artifacts

from .conftest import WAIT, Gate, finished, reached, submit


async def test_a_finished_runs_report_is_rendered_once(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real = artifacts.report_html

    def counted(*args: Any) -> str:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(artifacts, "report_html", counted)
    run_id = await submit(client, task_ids=[13])
    await finished(client, run_id)
    pages = [await client.get(f"/runs/{run_id}/report") for _ in range(3)]
    assert [p.status_code for p in pages] == [200, 200, 200]
    assert pages[0].text == pages[2].text
    assert len(calls) == 1


async def test_a_resumed_runs_report_is_rendered_anew(
    client: httpx.AsyncClient, gate: Gate
) -> None:
    run_id = await submit(client, agent_strategy="gated", task_ids=[13, 0])
    await reached(gate)
    assert (await client.delete(f"/runs/{run_id}")).json()["status"] == "cancelled"
    before = (await client.get(f"/runs/{run_id}/report")).text
    gate.release.set()
    assert (await client.post(f"/runs/{run_id}/resume")).status_code == 202
    assert (await finished(client, run_id))["status"] == "completed"
    after = (await client.get(f"/runs/{run_id}/report")).text
    assert after != before  # task 0 is in it now


async def test_renders_beyond_the_limit_are_refused_and_the_same_page_waits() -> None:
    from tau_bench.service.reports import ReportCache, ReportsBusy

    cache = ReportCache(max_renders=1)
    release = threading.Event()
    started = threading.Event()
    renders: list[str] = []

    def slow() -> str:
        renders.append("slow")
        started.set()
        assert release.wait(WAIT)
        return "<html>a</html>"

    first = asyncio.ensure_future(cache.get(("a",), slow))
    second = asyncio.ensure_future(cache.get(("a",), slow))  # the same page: waits
    assert await asyncio.to_thread(started.wait, WAIT)
    with pytest.raises(ReportsBusy, match="1 report"):
        await cache.get(("b",), lambda: "<html>b</html>")
    release.set()
    assert await first == await second == "<html>a</html>"
    assert renders == ["slow"]
    assert await cache.get(("b",), lambda: "<html>b</html>") == "<html>b</html>"


async def test_a_busy_report_is_a_503_with_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .conftest import make_settings, running_app

    release = threading.Event()
    started = threading.Event()

    def slow(*args: Any) -> str:
        started.set()
        assert release.wait(WAIT)
        return "<html></html>"

    monkeypatch.setattr(artifacts, "report_html", slow)
    async with running_app(make_settings(tmp_path / "state")) as client:
        one, two = await submit(client, task_ids=[13]), await submit(client, task_ids=[14])
        await finished(client, one)
        await finished(client, two)
        first = asyncio.ensure_future(client.get(f"/runs/{one}/report"))
        assert await asyncio.to_thread(started.wait, WAIT)
        busy = await client.get(f"/runs/{two}/report")
        assert busy.status_code == 503, busy.text
        assert busy.headers["retry-after"] == "5"
        release.set()
        assert (await first).status_code == 200


def test_the_cache_keeps_a_bounded_number_of_bytes() -> None:
    from tau_bench.service.reports import ReportCache

    cache = ReportCache(max_renders=1, max_bytes=10)

    async def fill() -> None:
        for key in "abc":
            await cache.get((key,), lambda: "x" * 4)

    asyncio.run(fill())
    assert list(cache._pages) == [("b",), ("c",)]
