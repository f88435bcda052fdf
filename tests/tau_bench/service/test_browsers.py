"""What a web page can make `tau serve` do: nothing. Bodies must be JSON (a page cannot send
JSON to another site without a CORS preflight, never approved); with `--no-auth` only
loopback host names are served (DNS rebinding) and requests a browser marks as coming
from another site are refused (a form, an `<img>` on `GET /scores`). Before any route:
a request without the token gets its 401, never a 405 or a redirect.

Each was accepted: a cross-origin `text/plain` POST submitted runs, any Host was served,
and `<img src="http://127.0.0.1:8000/scores?model=...">` started a run on the operator's
keys."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from .conftest import AUTH, ORACLE, make_settings, running_app

BODY = b'{"env": "airline", "agent_strategy": "oracle", "user_strategy": "scripted"}'


@pytest.fixture
async def open_server(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """`--no-auth`: a client of the loopback address, without a token."""
    async with running_app(make_settings(tmp_path / "state", token=None)) as client:
        client.base_url = httpx.URL("http://127.0.0.1:8000")
        client.headers.pop("Authorization")
        yield client


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_declared_json_is_415(
    client: httpx.AsyncClient, open_server: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    for each in (client, open_server):
        response = await each.post("/runs", content=BODY, headers=headers)
        assert response.status_code == 415, response.text
        assert response.json() == {
            "detail": "content-type: send the body as application/json "
            "(Content-Type: application/json)",
            "field": "content-type",
        }
        assert (await each.get("/runs")).json() == {"runs": []}
    sent = await client.post(
        "/runs", content=BODY, headers={"content-type": "application/json; charset=utf-8"}
    )
    assert sent.status_code == 202, sent.text


async def test_without_auth_only_loopback_host_names_are_served(
    open_server: httpx.AsyncClient,
) -> None:
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost:x"):
        response = await open_server.get("/runs", headers={"host": host})
        assert response.status_code == 421, (host, response.text)
        assert response.json()["field"] == "host"
    for host in ("127.0.0.1:8000", "localhost", "LOCALHOST:80", "[::1]:8000"):
        assert (await open_server.get("/runs", headers={"host": host})).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"origin": "http://evil.example"},
        {"origin": "null"},
    ],
)
async def test_without_auth_a_request_from_another_site_starts_nothing(
    open_server: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    response = await open_server.get(
        "/scores", params={"model": "openai_gpt-4o", "subset": "airline"}, headers=headers
    )
    assert response.status_code == 403, response.text
    assert response.json()["field"] == "origin"
    posted = await open_server.post("/runs", json=ORACLE, headers=headers)
    assert posted.status_code == 403, posted.text
    assert (await open_server.get("/runs")).json() == {"runs": []}


async def test_without_auth_the_servers_own_pages_and_tools_are_served(
    open_server: httpx.AsyncClient,
) -> None:
    same = {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:8000"}
    assert (await open_server.get("/runs", headers=same)).status_code == 200
    assert (await open_server.get("/runs", headers={"sec-fetch-site": "none"})).status_code == 200


async def test_without_the_token_no_route_is_told_apart(client: httpx.AsyncClient) -> None:
    client.headers.pop("Authorization")
    for method, path in (("GET", "/runs/"), ("PUT", "/runs"), ("GET", "/nowhere")):
        response = await client.request(method, path)
        assert response.status_code == 401, (method, path, response.status_code)
        assert "location" not in response.headers
    assert (await client.get("/runs/", headers=AUTH)).status_code == 404  # no redirect


def test_loopback_host_names() -> None:
    from tau_bench.service.request_guard import loopback_host

    assert loopback_host("[::1]")
    assert not loopback_host("[::1]x")
    assert not loopback_host("::1:8000x")
