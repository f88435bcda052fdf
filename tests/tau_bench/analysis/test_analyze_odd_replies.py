"""`tau analyze` when one judge call goes wrong in a way the LLM layer does not type (a
reply of an odd shape, a call that never ends): that episode is unclassified with a
one-line reason, the others are kept and written - never a traceback, never a hang."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import tau_bench.analysis.analyze as analyze_mod
from tau_adapters.protocol import Usage
from tau_bench.analysis.analyze import analyze_runs
from tau_bench.analysis.loading import load_run
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tau_bench.llm import Completion, LLMConfig
from tests.tau_bench.analysis.conftest import Runs
from tests.tau_bench.analysis.test_analyze_cli_safety import GOOD, SECRET, judged, tau


def odd_for_task_2(request: ChatRequest) -> ChatReply:
    """A judge whose every answer about task 2 has NaN/Infinity token counts and no
    verdict; the other episodes get a good verdict."""
    if "omar_davis_3817" in json.dumps(request.messages):  # task 2's user
        return ChatReply(text="\x1b[2J no verdict", usage=(float("nan"), float("inf")))  # type: ignore[arg-type]
    return ChatReply(text=json.dumps(GOOD))


def test_an_odd_judge_reply_leaves_one_episode_unclassified_and_the_rest_written(
    runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "analysis.json"
    with OpenAIServer(odd_for_task_2) as server:
        proc: subprocess.CompletedProcess[str] = tau(
            "analyze", runs.sloppy, *judged(server, "-o", out)
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "\x1b" not in proc.stdout + proc.stderr
    results = json.loads(out.read_text())["results"]
    assert len(results) == 4
    statuses = [r["status"] for r in results]
    assert statuses.count("classified") == 3 and statuses.count("unclassified") == 1
    (odd,) = [r for r in results if r["status"] == "unclassified"]
    assert odd["task_id"] == 2
    assert odd["error"] and "\n" not in odd["error"] and "\x1b" not in odd["error"]


async def test_any_exception_of_a_judge_call_is_one_masked_escaped_line(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    calls = 0

    async def complete(config: Any, messages: Any, **_: Any) -> Completion:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise AttributeError(f"'str' object has no attribute 'get'\n\x1b[31m{SECRET}")
        return Completion(message={"role": "assistant", "content": json.dumps(GOOD)}, usage=Usage())

    monkeypatch.setattr(analyze_mod, "complete", complete)
    analysis = await analyze_runs([load_run(runs.sloppy)], LLMConfig(model="openai/judge"))
    first, *rest = analysis.results
    assert first.status == "unclassified" and [r.status for r in rest] == ["classified"] * 3
    assert first.error is not None and first.error.startswith("judge call failed: AttributeError")
    assert "\n" not in first.error and "\x1b" not in first.error and "\\x1b" in first.error
    assert SECRET not in first.error


async def test_a_judge_call_that_never_ends_is_given_up_at_its_deadline(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a server dripping its body one byte at a time past the LLM layer's timeout."""
    calls = 0

    async def complete(config: Any, messages: Any, **_: Any) -> Completion:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # never answers
        return Completion(message={"role": "assistant", "content": json.dumps(GOOD)}, usage=Usage())

    monkeypatch.setattr(analyze_mod, "complete", complete)
    monkeypatch.setattr(analyze_mod, "CALL_MARGIN", 0.0)
    config = LLMConfig(model="openai/judge", timeout=0.01)
    analysis = await analyze_runs([load_run(runs.sloppy)], config)
    first, *rest = analysis.results
    assert first.status == "unclassified" and [r.status for r in rest] == ["classified"] * 3
    assert first.error == "timeout: no answer within 0.01 s"
