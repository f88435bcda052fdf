"""The default retry policy survives a bot that answers 503 to 30 % of requests, with 20
episodes at a time, without losing one; the old default (5 attempts) lost episodes.

Faults are deterministic: the bot fails attempt k of turn t of session s when a hash of
(s, t, k) falls in the lowest 30 %, so the outcome does not depend on interleaving. Only
the backoff delays are shrunk (the attempt count is what decides survival).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from adapters.http.adapter import HttpProvider
from adapters.http.config import RetryConfig
from adapters.http.config_load import load_config
from tau_bench.episode import run_task, session_for
from tau_bench.users.scripted import ScriptedUser

from .conftest import TOY_TASK, make_toy_domain

FAULT_RATE = 0.3
EPISODES = 40
CONCURRENCY = 20


def faulty_bot(salt: str) -> FastAPI:
    app = FastAPI()
    attempts: Counter[tuple[str, int]] = Counter()

    @app.post("/chat")
    async def chat(request: Request) -> Any:
        body = await request.json()
        key = (str(body["sid"]), int(body["turn"]))
        attempts[key] += 1
        digest = hashlib.sha256(f"{salt}:{key}:{attempts[key]}".encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 < FAULT_RATE:
            return JSONResponse({"error": "busy"}, status_code=503)
        return {"reply": "Done. Anything else?"}

    return app


async def _lost_episodes(url: str, max_attempts: int) -> int:
    cfg = {
        "base_url": url,
        "session": {"mode": "stateless"},
        "message": {"path": "/chat", "body": {"sid": "{{ session_id }}", "turn": "{{ turn }}"}},
        "response": {"messages": "reply"},
        "retry": {"max_attempts": max_attempts, "backoff_initial": 0.001, "backoff_max": 0.002},
    }
    provider = HttpProvider(load_config(cfg, environ={}))
    domain = make_toy_domain()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> bool:
        async with gate:
            session = session_for(domain, TOY_TASK, 0, 0, session_id=f"{max_attempts}-{i}")
            scored = await run_task(
                domain, TOY_TASK, 0, provider.new_adapter(), ScriptedUser(), session=session
            )
            return scored.result.error is not None

    lost = sum(await asyncio.gather(*(one(i) for i in range(EPISODES))))
    await provider.aclose()
    return lost


@pytest.mark.parametrize(
    ("max_attempts", "survives"), [(RetryConfig().max_attempts, True), (5, False)]
)
async def test_default_retries_survive_30_percent_faults_at_concurrency_20(
    serve: Callable[[Any], str], max_attempts: int, survives: bool
) -> None:
    url = serve(faulty_bot(salt="tau"))
    lost = await _lost_episodes(url, max_attempts)
    assert (lost == 0) is survives, lost
