"""`GET /runs` pages: every run is reachable however many there are, through `next`."""

from __future__ import annotations

import httpx

from tests.tau_bench.service.conftest import finished, submit


async def test_next_pages_through_every_run_newest_first(client: httpx.AsyncClient) -> None:
    submitted = [await submit(client, task_ids=[13]) for _ in range(5)]
    for run_id in submitted:
        await finished(client, run_id)

    seen: list[str] = []
    url: str | None = "/runs?limit=2"
    pages = 0
    while url is not None:
        response = await client.get(url)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["runs"]) <= 2
        seen += [r["run_id"] for r in page["runs"]]
        url = page.get("next")
        pages += 1
        assert pages <= 5, "next never ends"
    assert seen == submitted[::-1]
    assert pages == 3  # 2 + 2 + 1: the last page has no `next`


async def test_a_full_last_page_has_no_next(client: httpx.AsyncClient) -> None:
    submitted = [await submit(client, task_ids=[13]) for _ in range(2)]
    for run_id in submitted:
        await finished(client, run_id)
    page = (await client.get("/runs", params={"limit": 2})).json()
    assert [r["run_id"] for r in page["runs"]] == submitted[::-1]
    assert "next" not in page


async def test_next_keeps_the_status_filter(client: httpx.AsyncClient) -> None:
    submitted = [await submit(client, task_ids=[13]) for _ in range(3)]
    for run_id in submitted:
        await finished(client, run_id)
    first = (await client.get("/runs", params={"status": "completed", "limit": 1})).json()
    assert first["next"].startswith("/runs?") and "status=completed" in first["next"]
    second = (await client.get(first["next"])).json()
    assert [r["run_id"] for r in second["runs"]] == [submitted[1]]
    assert all(r["status"] == "completed" for r in second["runs"])


async def test_an_unknown_cursor_is_422_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.get("/runs", params={"before": "nope"})
    assert response.status_code == 422
    assert response.json()["field"] == "before"
    assert "nope" not in response.json()["detail"]
    too_long = await client.get("/runs", params={"before": "x" * 65})
    assert too_long.status_code == 422 and too_long.json()["field"] == "before"
