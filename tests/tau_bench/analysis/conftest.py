"""Real runs made once per session with the real runner: the oracle, a sloppy oracle
that forgets its last write on some episodes (failures with a DB diff, a cost), and the
oracle on fewer tasks. Offline: scripted user, no model calls."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tau_adapters.protocol import AgentTurn, SessionContext, Usage
from tau_adapters.registry import SimpleProvider
from tau_bench.agents.oracle import OracleAgent
from tau_bench.config import RunConfig
from tau_bench.runner import Runner, prepare_run
from tests.conftest import DATA_DIR

HISTORICAL = DATA_DIR / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = [0, 1, 2, 3, 13]
WRITES = {
    "book_reservation",
    "update_reservation_flights",
    "cancel_reservation",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
}


class SloppyOracle(OracleAgent):
    """The oracle, except that on even (task + trial) it skips its last write and says
    so with a `<script>` tag (the report must escape it); every turn costs $0.001."""

    async def start(self, session: SessionContext) -> None:
        await super().start(session)
        key = int(session.task_id or 0) + session.trial
        writes = [i for i, a in enumerate(self._actions) if a.name in WRITES]
        if key % 2 == 0 and writes:
            del self._actions[writes[-1]]

    async def send(self, turn: Any) -> AgentTurn:
        out = await super().send(turn)
        if out.messages and not out.tool_calls:
            out.messages = [m + " <script>alert(1)</script>" for m in out.messages]
        out.usage = Usage(prompt_tokens=10, completion_tokens=5, cost=0.001, calls=1)
        return out


@dataclass
class Runs:
    folder: Path
    oracle: Path
    sloppy: Path
    subset: Path


def _run(folder: Path, name: str, ids: list[int], trials: int, agent: Any = None) -> Path:
    config = RunConfig(
        env="airline",
        agent_strategy="oracle",
        model="oracle-model" if agent is None else "sloppy/model-v1",
        user_strategy="scripted",
        task_ids=ids,
        num_trials=trials,
        log_dir=str(folder),
        data_dir=str(DATA_DIR),
        run_name=name,
        quiet=True,
    )
    provider = SimpleProvider(agent) if agent is not None else None
    outcome = asyncio.run(Runner(prepare_run(config), provider=provider).run())
    return outcome.plan.log_path


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    folder = tmp_path_factory.mktemp("runs")
    return Runs(
        folder=folder,
        oracle=_run(folder, "oracle", TASKS, 2),
        sloppy=_run(folder, "sloppy", TASKS, 2, SloppyOracle),
        subset=_run(folder / "sub", "subset", TASKS[:2], 1),
    )


@dataclass
class MultiRuns:
    """Two-domain runs (retail and airline, tasks 0 and 1 of each, 2 trials)."""

    folder: Path
    oracle: Path  # log of the oracle with the scripted user, made by `runner.run`
    sloppy: Path  # log of the sloppy oracle (fails airline/0 trial 0, airline/1 trial 1)
    rotation: Path  # log of the oracle with three user models rotated over the samples

    @staticmethod
    def results(log: Path) -> Path:
        """The τ-bench `.json` the runner wrote next to `log`."""
        return log.with_suffix(".json")


ROTATION = ["model-a", "model-b", "model-c"]


def _multi_config(folder: Path, name: str, **kw: Any) -> RunConfig:
    base: dict[str, Any] = dict(
        env="retail,airline",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=[0, 1],
        num_trials=2,
        log_dir=str(folder),
        data_dir=str(DATA_DIR),
        run_name=name,
        quiet=True,
    )
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture(scope="session")
def multi(tmp_path_factory: pytest.TempPathFactory) -> MultiRuns:
    from tau_bench.runner import run
    from tau_bench.users.scripted import ScriptedUser

    folder = tmp_path_factory.mktemp("multi")
    oracle = asyncio.run(run(_multi_config(folder, "multi-oracle")))
    sloppy_plan = prepare_run(_multi_config(folder, "multi-sloppy", model="sloppy/model-v1"))
    sloppy = asyncio.run(Runner(sloppy_plan, provider=SimpleProvider(SloppyOracle)).run())
    # An LLM user strategy with a model rotation, played offline by the scripted user:
    # each record still says which user model the rotation gave it.
    rotation_plan = prepare_run(
        _multi_config(folder, "multi-rotation", user_strategy="llm", user_models=ROTATION)
    )
    rotation = asyncio.run(Runner(rotation_plan, user_factory=ScriptedUser).run())
    return MultiRuns(
        folder=folder,
        oracle=oracle.plan.log_path,
        sloppy=sloppy.plan.log_path,
        rotation=rotation.plan.log_path,
    )
