"""The service on τ³ environments: a run submitted with `env: tau3/...` is scored as
`tau run` scores it (the oracle with the scripted user, NL assertions assumed met)."""

from __future__ import annotations

import httpx

from tests.tau_bench.service.conftest import ORACLE, finished


async def test_a_tau3_run_through_the_api(client: httpx.AsyncClient) -> None:
    body = {
        **ORACLE,
        "env": "tau3/telecom",
        "task_split": "base",
        "task_ids": [0, 1, 2],
        "judge_model": "assume-met",
    }
    response = await client.post("/runs", json=body)
    assert response.status_code == 202, response.text
    view = await finished(client, response.json()["run_id"])
    assert view["status"] == "completed", view
    assert view["summary"]["avg_reward"] == 1.0
    assert view["progress"]["passed"] == 3


async def test_an_unknown_tau3_domain_is_422_naming_env(client: httpx.AsyncClient) -> None:
    response = await client.post("/runs", json={**ORACLE, "env": "tau3/hotel"})
    assert response.status_code == 422
    assert response.json()["field"] == "env"
