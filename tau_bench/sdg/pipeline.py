"""The generation pipeline: sample a user, propose, validate (and repair), write the
instruction, format and self-check the task; many samples at once.

One sample is independent of the others: its user and focus come from
`Random(f"{seed}:{env}:{difficulty}:{index}")`, so a run is reproducible whatever the
concurrency (up to the model's own randomness). Every model answer is JSON checked by
pydantic (see `structured`); every failure becomes a rejection with a reason code from
`problems`, except an authentication failure, which stops the run: no sample can succeed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_adapters.protocol import Usage
from tau_bench.llm import LLMAuthError, LLMConfig, LLMError
from tau_bench.sdg.answers import ScenarioProposal
from tau_bench.sdg.context import UserContext, eligible_users, sample_context
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.instruction import final_outputs, instruction_check
from tau_bench.sdg.output import (
    JsonlWriter,
    next_sample_index,
    output_files_problem,
    run_secrets,
    runs_path,
)
from tau_bench.sdg.problems import BAD_INSTRUCTION, LLM_ERROR, MALFORMED, REPAIRABLE, UNVERIFIED
from tau_bench.sdg.prompts import instruction_messages, repair_message, scenario_messages
from tau_bench.sdg.sandbox import Sandbox, Validation
from tau_bench.sdg.structured import AnswerRejected, ask_json
from tau_bench.sdg.targets import (
    ANNOTATOR,
    GENERATOR,
    TaskParts,
    UnsupportedDomainError,
    as_target,
)
from tau_bench.suites import load_domain

__all__ = [
    "ANNOTATOR",
    "GENERATOR",
    "GenerateOptions",
    "GenerationReport",
    "Generator",
    "SampleOutcome",
    "generate",
]


@dataclass
class GenerateOptions:
    """What `tau sdg generate` was asked for."""

    env: str
    difficulty: Difficulty
    num_samples: int
    output_file: Path
    model: str
    max_concurrency: int = 4
    seed: int = 0
    api_base: str | None = None
    provider: str | None = None
    temperature: float | None = 0.8
    repair: bool = False
    data_dir: Path | None = None
    hint: str | None = None
    rejected_file: Path | None = None
    json_mode: bool = True
    start_index: int | None = None  # None: continue after the samples already in the files
    llm_extra: dict[str, Any] = field(default_factory=dict)

    def llm_config(self) -> LLMConfig:
        return LLMConfig(
            model=self.model,
            provider=self.provider,
            api_base=self.api_base,
            temperature=self.temperature,
            seed=self.seed,
            extra=dict(self.llm_extra),
        )


@dataclass
class SampleOutcome:
    """One sample's result: a task, or the reason it was rejected."""

    index: int
    user_id: str | None
    task: Any = None  # the suite's task (v1 `Task`, τ³ `Tau3Task`), None when rejected
    reason: str | None = None
    errors: list[str] = field(default_factory=list)
    validated: bool = False
    repaired: bool = False
    usage: Usage = field(default_factory=Usage)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.task is not None


@dataclass
class GenerationReport:
    """Counts of a run: what the final table and the runs sidecar show."""

    env: str
    difficulty: str
    model: str
    seed: int
    samples: int = 0
    validated: int = 0
    written: int = 0
    repaired: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    elapsed: float = 0.0

    def add(self, outcome: SampleOutcome) -> None:
        self.samples += 1
        self.validated += int(outcome.validated)
        self.written += int(outcome.ok)
        self.repaired += int(outcome.repaired and outcome.validated)
        if outcome.reason:
            self.rejected[outcome.reason] += 1
        self.usage.add(outcome.usage)

    @property
    def validation_rate(self) -> float:
        return self.validated / self.samples if self.samples else 0.0

    def per_minute(self, count: int) -> float:
        return count * 60.0 / self.elapsed if self.elapsed > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "generator": GENERATOR,
            "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "env": self.env,
            "difficulty": self.difficulty,
            "model": self.model,
            "seed": self.seed,
            "samples": self.samples,
            "validated": self.validated,
            "written": self.written,
            "repaired": self.repaired,
            "rejected": dict(self.rejected),
            "validation_rate": self.validation_rate,
            "usage": self.usage.to_dict(),
            "elapsed": self.elapsed,
            "scenarios_per_minute": self.per_minute(self.validated),
            "tasks_per_minute": self.per_minute(self.written),
        }


class Generator:
    """Runs the pipeline for single samples of one env and difficulty."""

    def __init__(self, options: GenerateOptions, domain: Any) -> None:
        self.options = options
        self.domain = domain
        self.target = as_target(domain)
        unsupported = self.target.supports_generation()
        if unsupported:
            raise UnsupportedDomainError(unsupported)
        self.config = options.llm_config()
        self.sandbox = Sandbox(self.target)
        self.candidates = eligible_users(self.target)
        if not self.candidates:
            raise ValueError(f"no {self.target.env} user has anything to ask about")

    def context(self, index: int) -> tuple[random.Random, UserContext]:
        """Sample `index`'s random generator and user: a function of seed and index only."""
        o = self.options
        rng = random.Random(f"{o.seed}:{o.env}:{o.difficulty.value}:{index}")
        return rng, sample_context(self.target, rng, o.difficulty, self.candidates)

    async def sample(self, index: int) -> SampleOutcome:
        rng, context = self.context(index)
        outcome = SampleOutcome(index=index, user_id=context.user_id)
        try:
            await self._run(context, rng, outcome)
        except LLMAuthError:
            raise
        except LLMError as exc:
            outcome.reason, outcome.errors = LLM_ERROR, [str(exc)]
        outcome.record = self._record(outcome, context)
        return outcome

    async def _propose(
        self, messages: list[dict[str, Any]], outcome: SampleOutcome
    ) -> tuple[ScenarioProposal, list[dict[str, Any]], int] | None:
        try:
            answer = await ask_json(
                self.config, messages, ScenarioProposal, json_mode=self.options.json_mode
            )
        except AnswerRejected as exc:
            outcome.usage.add(exc.usage)
            outcome.reason, outcome.errors = MALFORMED, exc.errors
            return None
        outcome.usage.add(answer.usage)
        return answer.value, answer.messages, answer.attempts

    async def _run(self, context: UserContext, rng: random.Random, outcome: SampleOutcome) -> None:
        o = self.options
        trail: list[dict[str, Any]] = []
        outcome.record["attempts"] = trail
        proposed = await self._propose(
            scenario_messages(self.target, context, o.difficulty, o.hint), outcome
        )
        if proposed is None:
            return
        scenario, conversation, calls = proposed
        validation = self.sandbox.validate(context.user_id, scenario.actions, o.difficulty)
        trail.append({"summary": scenario.summary, "llm_calls": calls, **validation.to_dict()})
        if not validation.ok and o.repair and validation.reason in REPAIRABLE:
            outcome.repaired = True
            proposed = await self._propose(
                [*conversation, repair_message(validation, o.difficulty)], outcome
            )
            if proposed is None:
                return
            scenario, conversation, calls = proposed
            validation = self.sandbox.validate(context.user_id, scenario.actions, o.difficulty)
            trail.append({"summary": scenario.summary, "llm_calls": calls, **validation.to_dict()})
        if not validation.ok:
            outcome.reason = validation.reason
            outcome.errors = [p.describe() for p in validation.problems]
            return
        outcome.validated = True
        await self._finish(context, scenario, validation, rng, outcome)

    async def _finish(
        self,
        context: UserContext,
        scenario: ScenarioProposal,
        validation: Validation,
        rng: random.Random,
        outcome: SampleOutcome,
    ) -> None:
        messages = instruction_messages(self.target, context, scenario.summary, validation, rng)
        try:
            answer = await ask_json(
                self.config,
                messages,
                self.target.draft_model,
                check=instruction_check(context, validation),
                check_reason=BAD_INSTRUCTION,
                json_mode=self.options.json_mode,
            )
        except AnswerRejected as exc:
            outcome.usage.add(exc.usage)
            outcome.reason, outcome.errors = exc.reason, exc.errors
            return
        outcome.usage.add(answer.usage)
        draft: Any = answer.value  # the target's draft model
        o = self.options
        provenance = {
            "generator": GENERATOR,
            "env": o.env,
            "model": o.model,
            "seed": o.seed,
            "sample_index": outcome.index,
            "difficulty": o.difficulty.value,
            "scenario": scenario.summary,
            "focus": context.focus,
            "hint": o.hint,
            "repaired": outcome.repaired,
            "instruction_llm_calls": answer.attempts,
            "validation": outcome.record["attempts"][-1],
            "rejected_attempts": outcome.record["attempts"][:-1],
            "usage": outcome.usage.to_dict(),
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        parts = TaskParts(
            index=outcome.index,
            user_id=context.user_id,
            summary=scenario.summary,
            draft=draft,
            actions=scenario.actions,
            outputs=final_outputs(draft),
            provenance=provenance,
        )
        task = self.target.build_task(parts)
        problems = self.target.replay_problems(task, outcome.index)
        if problems:
            outcome.reason = UNVERIFIED
            outcome.errors = problems
            return
        outcome.task = task

    def _record(self, outcome: SampleOutcome, context: UserContext) -> dict[str, Any]:
        """What the rejected-samples file gets for a rejected sample."""
        o = self.options
        return {
            "user_id": context.user_id,
            "reason": outcome.reason,
            "errors": outcome.errors,
            "provenance": {
                "generator": GENERATOR,
                "env": o.env,
                "model": o.model,
                "seed": o.seed,
                "sample_index": outcome.index,
                "difficulty": o.difficulty.value,
                "focus": context.focus,
                "repaired": outcome.repaired,
                "attempts": outcome.record.get("attempts", []),
                "usage": outcome.usage.to_dict(),
            },
        }


async def generate(
    options: GenerateOptions,
    *,
    on_outcome: Callable[[SampleOutcome], None] | None = None,
    domain: Any = None,
) -> GenerationReport:
    """Generate `options.num_samples` samples with `max_concurrency` workers; valid tasks
    are appended to the output file as they finish, a summary line to the runs sidecar;
    secrets (`output.run_secrets`) are masked in every line written.
    `domain`: the suite domain of `options.env` (`tau_bench.suites.load_domain`), or a
    `Target`; loaded when not given. ValueError, before any model call, when the files
    cannot take the run (`output.output_files_problem`)."""
    problem = output_files_problem(options.output_file, options.rejected_file)
    if problem:
        raise ValueError(problem)
    domain = domain or load_domain(options.env, options.data_dir)
    generator = Generator(options, domain)
    start = options.start_index
    if start is None:
        start = next_sample_index(
            [options.output_file, options.rejected_file],
            options.env,
            options.difficulty.value,
            options.seed,
        )
    indices = iter(range(start, start + options.num_samples))
    report = GenerationReport(options.env, options.difficulty.value, options.model, options.seed)
    began = time.perf_counter()
    secrets = run_secrets(options.llm_extra)
    with (
        JsonlWriter(options.output_file, secrets) as tasks,
        JsonlWriter(options.rejected_file, secrets) as rejects,
    ):

        async def worker() -> None:
            for index in indices:
                outcome = await generator.sample(index)
                report.add(outcome)
                if outcome.task is not None:
                    tasks.write(outcome.task.model_dump(mode="json"))
                else:
                    rejects.write(outcome.record)
                if on_outcome is not None:
                    on_outcome(outcome)

        workers = max(1, min(options.max_concurrency, options.num_samples))
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker())
        except BaseExceptionGroup as eg:
            raise eg.exceptions[0] from None
        finally:
            report.elapsed = time.perf_counter() - began
            if report.samples:
                with JsonlWriter(runs_path(options.output_file), secrets) as runs:
                    runs.write(report.to_dict())
    return report
