"""The tool server answers a 10,000-deep JSON body with a clean 400."""

from __future__ import annotations

import httpx

from tau_bench.domains import Domain
from tau_bench.toolserver import BackgroundServer, SessionStore, create_app

TOKEN = "tool-token-deep"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_deep_json_body_is_a_clean_400(toy: Domain) -> None:
    store = SessionStore(toy, ttl=60)
    with (
        BackgroundServer(create_app(store, TOKEN)) as server,
        httpx.Client(base_url=server.url, headers=AUTH) as c,
    ):
        sid = c.post("/sessions", json={}).json()["session_id"]
        deep = b"[" * 10_000 + b"]" * 10_000
        r = c.post(
            f"/sessions/{sid}/tools/get_note",
            content=deep,
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 400
        assert r.json() == {"detail": "body is JSON nested deeper than 100 levels"}
        # the server is still fine
        ok = c.post(f"/sessions/{sid}/tools/get_note", json={"user_id": "u1"})
        assert ok.status_code == 200 and "Ann" in ok.json()["observation"]
