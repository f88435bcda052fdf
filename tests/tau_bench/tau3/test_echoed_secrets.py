"""API keys a τ³ run's other models echo never reach its files: the LLM user simulator
and the NL judge get their keys from the environment (OPENAI_API_KEY), and a model that
repeats its request's Authorization header into a user turn or a judge's reasoning must
find it masked in the run log, the results file, the summary, the τ² export and the
file `tau rescore` writes, as the agent's secrets are.

The installed `tau`, against the fake OpenAI server answering as both the user (it
states its token) and the judge (its reasoning quotes the token and a terminal escape).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau_bench.fakes.nl_judge import expected_outcomes
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.suite.conftest import FIXTURE_PROMPTS

TAU = Path(sys.executable).parent / "tau"
SECRET = "sk-echoed-secret-0123456789"
NL_TASKS = "2,3"
"""Retail tasks scored with NL assertions: the judge is called for each."""


def echo(request: ChatRequest) -> ChatReply:
    """The judge (a request with expected outcomes) quotes its Authorization header in
    each reasoning; anyone else (the user simulator) states it and stops."""
    auth = request.headers.get("authorization") or request.headers.get("Authorization", "")
    outcomes = expected_outcomes(request)
    if not outcomes:
        return ChatReply(text=f"my token is {auth} ###STOP###")
    results = [
        {"expectedOutcome": o, "reasoning": f"I used {auth} \x1b]0;PWN\x07", "metExpectation": True}
        for o in outcomes
    ]
    return ChatReply(text=json.dumps({"results": results}))


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(echo) as running:
        yield running


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared τ³ data plus (fixture) prompts: what a judge and a τ³ user need."""
    root = tmp_path_factory.mktemp("tau3data")
    for child in require_data().iterdir():
        (root / child.name).symlink_to(child)
    (root / "prompts").mkdir()
    for name, text in FIXTURE_PROMPTS.items():
        (root / "prompts" / f"{name}.txt").write_text(text, encoding="utf-8")
    return root


def tau(server: OpenAIServer, data_root: Path, *args: str | Path) -> str:
    """Run the console script; its stdout and stderr together (checked for the secret)."""
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(data_root),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": SECRET,
        "OPENAI_BASE_URL": server.base_url,  # the judge's endpoint
        "OPENAI_API_BASE": server.base_url,
    }
    proc = subprocess.run(
        [str(TAU), *map(str, args)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def run(server: OpenAIServer, data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a retail run with the echoing user and judge (oracle agent)."""
    folder = tmp_path_factory.mktemp("runs")
    printed = tau(
        server, data_root, "run", "--env", "tau3/retail", "--agent-strategy", "oracle",
        "--user-strategy", "tau3", "--user-model", "openai/fake",
        "--user-api-base", server.base_url, "--judge-model", "openai/gpt-4.1",
        "--task-ids", NL_TASKS, "--log-dir", folder,
    )  # fmt: skip
    assert SECRET not in printed
    return folder


def leaks(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() and SECRET in p.read_text()]


def test_the_users_and_judges_echoed_key_is_masked_in_every_file_of_the_run(run: Path) -> None:
    assert len(list(run.iterdir())) == 3  # log, results, summary
    assert leaks(run) == []
    (log,) = run.glob("*.jsonl")
    episodes = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert len(episodes) == 2 and all(e["error"] is None for e in episodes)
    said = [m["content"] for e in episodes for m in e["messages"] if m["role"] == "user"]
    assert "my token is Bearer *** ###STOP###" in said  # the user's turn, masked
    checks = [c for e in episodes for c in e["reward_info"]["reward_info"]["nl_assertions"]]
    assert checks and all("***" in c["justification"] for c in checks)


def test_rescore_masks_the_key_its_judge_echoes(
    run: Path, server: OpenAIServer, data_root: Path, tmp_path: Path
) -> None:
    (log,) = run.glob("*.jsonl")
    tau(server, data_root, "export", log, "--format", "tau2", "-o", tmp_path / "t2")
    (exported,) = (tmp_path / "t2").glob("*.retail.json")
    out = tmp_path / "rescored.json"
    printed = tau(
        server, data_root, "rescore", exported, "--env", "tau3/retail",
        "--judge-model", "openai/gpt-4.1", "-o", out,
    )  # fmt: skip
    assert "2 simulation(s) rescored" in printed and SECRET not in printed
    assert leaks(tmp_path) == []
    sims = json.loads(out.read_text())["simulations"]
    checks = [c for s in sims for c in s["reward_info"]["nl_assertions"]]
    assert checks and all(c["justification"].startswith("I used Bearer ***") for c in checks)
