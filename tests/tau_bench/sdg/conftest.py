"""SDG test helpers: the fake model behind respx (real litellm calls), and a generator."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tau_bench.domains import Domain
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.fake import FakeModel
from tau_bench.sdg.fake.model import FaultPicker
from tau_bench.sdg.pipeline import GenerateOptions, GenerationReport, SampleOutcome, generate
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request, fake_llm, llm_env

__all__ = ["fake_llm", "llm_env"]

MODEL = "openai/gpt-4o-mini"

Generate = Callable[..., Awaitable[tuple[GenerationReport, list[SampleOutcome], Path]]]


def use_fake_model(
    fake_llm: FakeLLM, domain: Domain, faults: FaultPicker | None = None
) -> FakeModel:
    """Answer every model request with a FakeModel reading the request's prompt."""
    model = FakeModel(domain, faults)

    def brain(request: Request) -> Reply:
        return Reply(text=model.reply(request.body["messages"]))

    fake_llm.brain = brain
    return model


@pytest.fixture
def run_generation(tmp_path: Path, data_dir: Path) -> Generate:
    """`await run_generation(env, difficulty, n, **options)` -> (report, outcomes, tasks file)."""

    async def run(
        env: str, difficulty: str, n: int, **kw: Any
    ) -> tuple[GenerationReport, list[SampleOutcome], Path]:
        output = kw.pop("output_file", tmp_path / f"{env}-{difficulty}.jsonl")
        options = GenerateOptions(
            env=env,
            difficulty=Difficulty(difficulty),
            num_samples=n,
            output_file=output,
            model=MODEL,
            data_dir=data_dir,
            **kw,
        )
        outcomes: list[SampleOutcome] = []
        report = await generate(options, on_outcome=outcomes.append)
        return report, sorted(outcomes, key=lambda o: o.index), output

    return run


@pytest.fixture(scope="session")
def tau3_airline() -> Any:
    from tau_bench.suites import load_domain
    from tests.conftest import TAU3_DATA_DIR

    return load_domain("tau3/airline", TAU3_DATA_DIR)


@pytest.fixture(scope="session")
def tau3_retail() -> Any:
    from tau_bench.suites import load_domain
    from tests.conftest import TAU3_DATA_DIR

    return load_domain("tau3/retail", TAU3_DATA_DIR)


@pytest.fixture
def run_tau3_generation(tmp_path: Path, tau3_airline: Any, tau3_retail: Any) -> Generate:
    """`run_generation` for `tau3/airline` and `tau3/retail` (the τ³ data directory)."""

    async def run(
        env: str, difficulty: str, n: int, **kw: Any
    ) -> tuple[GenerationReport, list[SampleOutcome], Path]:
        domain = tau3_airline if env == "tau3/airline" else tau3_retail
        output = kw.pop("output_file", tmp_path / f"{env.replace('/', '-')}-{difficulty}.jsonl")
        options = GenerateOptions(
            env=env,
            difficulty=Difficulty(difficulty),
            num_samples=n,
            output_file=output,
            model=MODEL,
            **kw,
        )
        outcomes: list[SampleOutcome] = []
        report = await generate(options, on_outcome=outcomes.append, domain=domain)
        return report, sorted(outcomes, key=lambda o: o.index), output

    return run
