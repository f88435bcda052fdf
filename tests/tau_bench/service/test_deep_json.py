"""`tau serve` answers a 10,000-deep JSON body with a clean 422 naming the body."""

from __future__ import annotations

import httpx


async def test_deep_json_body_is_a_clean_422(client: httpx.AsyncClient) -> None:
    deep = b'{"env": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    response = await client.post(
        "/runs", content=deep, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json() == {
        "detail": "body: JSON nested deeper than 100 levels",
        "field": "body",
    }
    assert (await client.get("/runs")).json()["runs"] == []
