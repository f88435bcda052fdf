"""One model call on each path (litellm; direct on aiohttp and on httpx) against a test
server, for the tests that hold every path to the same behaviour."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tau_bench.llm import Completion, LLMConfig, LLMError, aclose_clients, complete, set_llm_path
from tau_bench.llm.direct_clients import TRANSPORT_ENV
from tau_bench.llm.retry import RetryPolicy
from tau_bench.llm.runtime import litellm

PATHS = ("litellm", "direct-aiohttp", "direct-httpx")
MESSAGES = [{"role": "user", "content": "hi"}]
CALL_DEADLINE = 60.0  # seconds a call may take before the test fails instead of hanging


async def _no_sleep(seconds: float) -> None:
    return None


def no_wait_policy(attempts: int) -> RetryPolicy:
    """`attempts` attempts in all, with no wait between them."""
    return RetryPolicy(max_attempts=attempts, initial_wait=0.0, jitter=0.0, sleep=_no_sleep)


def choose_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `name` (one of `PATHS`) this process's path; `set_llm_path("auto")` after."""
    monkeypatch.setenv(TRANSPORT_ENV, "httpx" if name == "direct-httpx" else "aiohttp")
    litellm()  # imported before any memory is measured
    set_llm_path(name.split("-")[0])


async def call_once(
    api_base: str, retry: RetryPolicy, model: str = "openai/gpt-4o-mini", **config: Any
) -> Completion | LLMError:
    """One `complete` of `model` at `api_base`: the completion, or the `LLMError` it
    raised; the loop's clients closed after."""
    settings = LLMConfig(model, api_base=api_base, retry=retry, **config)
    try:
        return await asyncio.wait_for(complete(settings, MESSAGES), CALL_DEADLINE)
    except LLMError as exc:
        return exc
    finally:
        await aclose_clients()
