"""`tau sdg generate` stopped mid-run (SIGTERM, Ctrl-C): one line saying what was written
and how to go on, the runs line written, every file line whole. SIGTERM used to kill the
process outright (no runs line) and Ctrl-C said nothing.

Through the installed `tau`, against a real OpenAI-compatible server on 127.0.0.1 that
answers the first sample and holds the second one's first request until the stop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tau_bench.fakes import OpenAIServer
from tau_bench.fakes.openai_server import ChatReply, ChatRequest
from tau_bench.sdg.fake import FakeModel
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
WAIT = 120.0  # seconds a step of the test may take before it fails


class HoldsTheSecondSample:
    """Answers as the fake SDG model, except the second sample's scenario request: that
    one is held (never answered before the process is stopped), and `held` says so."""

    def __init__(self, domain: Any) -> None:
        self.scenarios = 0
        self.held = threading.Event()
        self.model = FakeModel(domain, self._count)

    def _count(self, stage: str, view: dict[str, Any]) -> None:
        self.scenarios += stage == "scenario"

    async def __call__(self, request: ChatRequest) -> ChatReply:
        before = self.scenarios
        reply = self.model.respond(request)
        if before == 1 and self.scenarios == 2:
            self.held.set()
            await asyncio.Event().wait()  # until the server's own reply deadline
        return reply


@pytest.mark.parametrize(
    ("how", "sent", "code"),
    [("terminated (SIGTERM)", signal.SIGTERM, 143), ("interrupted", signal.SIGINT, 130)],
)
def test_a_stopped_generation_says_what_it_wrote(
    airline: Any, tmp_path: Path, how: str, sent: signal.Signals, code: int
) -> None:
    out = tmp_path / "tasks.jsonl"
    model = HoldsTheSecondSample(airline)
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-local-fake-0000",
    }
    with OpenAIServer(model) as server:
        proc = subprocess.Popen(
            [
                str(TAU), "sdg", "generate", "--env", "airline", "--difficulty", "easy",
                "--num-samples", "3", "--max-concurrency", "1", "--output-file", str(out),
                "--model", "openai/fake-sdg", "--api-base", server.base_url, "--quiet",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert model.held.wait(WAIT), "the second sample never reached the model"
            proc.send_signal(sent)
            _, stderr = proc.communicate(timeout=WAIT)
        finally:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    tasks = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert stderr.strip().splitlines()[-1] == (
        f"{how}: {len(tasks)} task(s) written to {out}, {1 - len(tasks)} sample(s) rejected; "
        "the same command again adds new samples after them (those in flight when it "
        "stopped are not retried)"
    ), stderr
    runs = [json.loads(line) for line in out.with_suffix(".runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["samples"] == 1
