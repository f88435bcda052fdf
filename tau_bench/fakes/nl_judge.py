"""A fake NL-assertion judge: answers every τ³ judge request with "all expectations met".

Why: checking our τ² exports with the original tool chain (`tau2 evaluate-trajs`) re-runs
its LLM judge on every task with NL assertions. Served by the fake OpenAI server
(`python -m tau_bench.fakes --responder tau_bench.fakes.nl_judge:all_met`), this
makes that check offline and deterministic, like `--judge-model assume-met` on our side.

The judge's user prompt ends with `expectedOutcomes:` followed by the assertions as a
Python list literal (the original formats them with `str(list)`); the answer repeats each
one in the original's verdict shape.
"""

from __future__ import annotations

import ast
import json

from tau_bench.fakes.openai_server import ChatReply, ChatRequest

MARKER = "expectedOutcomes:"


def expected_outcomes(request: ChatRequest) -> list[str]:
    """The assertions a judge request asks about (empty when it is not a judge request)."""
    for message in reversed(request.messages):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and MARKER in content:
            literal = content.rsplit(MARKER, 1)[1].strip()
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                return []
            return [str(v) for v in value] if isinstance(value, list) else []
    return []


def all_met(request: ChatRequest) -> ChatReply:
    """Every expected outcome met; a non-judge request gets a 400 (it should not come here)."""
    outcomes = expected_outcomes(request)
    if not outcomes:
        return ChatReply(status=400, error="not an NL-assertion judge request")
    results = [
        {"expectedOutcome": o, "reasoning": "fake judge: assumed met", "metExpectation": True}
        for o in outcomes
    ]
    return ChatReply(text=json.dumps({"results": results}))
