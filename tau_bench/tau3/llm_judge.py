"""The NL_ASSERTION judge through litellm: the original's prompt, its verdict format.

The system prompt and the user-prompt template are the original's, extracted from its
source at `tau data pull` time (`prompts/nl_judge_system_prompt.txt`,
`prompts/nl_judge_user_prompt.txt`); the trajectory is rendered one `<role>: <content>`
line per message. A failed call, an empty answer, an unparseable verdict or one with no
results is a `JudgeError` (retryable: the episode is re-run on resume, never passed,
tau2-bench #554); an unparseable verdict is asked again up to `attempts` times first.
Token counts and cost of every judge call are returned with the checks, and carried by
the `JudgeError` (`usage`) when the judge fails: the error record still counts them. The
judge's API key comes from the environment (OPENAI_API_KEY...): a judge that repeats it
(or anything shaped like a key) has it masked in its checks and errors
(`redaction.redact_text`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from tau_adapters.protocol import Usage
from tau_adapters.redaction import environment_secrets, mask_encoded, redact_text
from tau_bench.tau3.data import prompt_text, resolve_tau3_data_dir
from tau_bench.tau3.judge import JudgeError, NLCheck, parse_verdict, render
from tau_bench.tau3.messages import Message
from tau_bench.tau3.tasks import Task

__all__ = ["LLMJudge", "check_prompts", "judge_messages", "needs_judge"]


class RetryableJudgeError(JudgeError):
    """A judge failure worth running the episode's scoring again for."""

    kind = "judge_error"
    retryable = True


PROMPTS = ("nl_judge_system_prompt", "nl_judge_user_prompt")


def check_prompts(root: Path) -> None:
    """Raise the one-line `DataDirError` of a data copy without the judge's prompts (the
    offline copy): said once before the work, not once per task that needs the judge."""
    for name in PROMPTS:
        prompt_text(root, name)


def needs_judge(task: Task) -> bool:
    """True if evaluating `task` calls the NL judge (NL_ASSERTION in its basis, and
    assertions to judge)."""
    crit = task.evaluation_criteria
    return crit is not None and "NL_ASSERTION" in crit.reward_basis and bool(crit.nl_assertions)


def judge_messages(root: Path, trajectory: list[Message], assertions: list[str]) -> list[dict]:
    """The two messages the original sends its judge."""
    system = prompt_text(root, "nl_judge_system_prompt")
    template = prompt_text(root, "nl_judge_user_prompt")
    user = template.replace("{trajectory_str}", render(trajectory)).replace(
        "{nl_assertions}", str(list(assertions))
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def masked(text: str) -> str:
    """`text` from (or about) the judge's answer with its API key masked, however spelled
    (JSON-escaped, URL-encoded: `mask_encoded`), and anything shaped like a key."""
    secrets = environment_secrets()
    return redact_text(mask_encoded(text, secrets), secrets)


def masked_checks(checks: list[NLCheck]) -> list[NLCheck]:
    """The checks with secrets the judge echoed masked: they are written to results."""
    return [
        replace(c, nl_assertion=masked(c.nl_assertion), justification=masked(c.justification))
        for c in checks
    ]


class LLMJudge:
    """Judges NL assertions with a model (default the original's, temperature 0)."""

    def __init__(
        self,
        model: str,
        *,
        root: Path | None = None,
        api_base: str | None = None,
        attempts: int = 3,
    ) -> None:
        self.model = model
        self.name = model
        self.root = root
        self.api_base = api_base
        self.attempts = max(1, attempts)

    def _config(self) -> Any:
        from tau_bench.llm import LLMConfig

        provider = self.model.split("/", 1)[0] if "/" in self.model else None
        return LLMConfig(
            model=self.model, provider=provider, api_base=self.api_base, temperature=0.0
        )

    async def ajudge(
        self, trajectory: list[Message], assertions: list[str]
    ) -> tuple[list[NLCheck], dict[str, Any]]:
        """The checks and the judge's usage (`model`, tokens, cost, calls)."""
        from tau_bench.llm import complete

        root = self.root or resolve_tau3_data_dir(None)
        messages = judge_messages(root, trajectory, assertions)
        usage = Usage()
        last = ""
        for _ in range(self.attempts):
            try:
                completion = await complete(self._config(), messages)
            except Exception as exc:  # LLMError, or a reply of a shape the LLM layer missed
                raise RetryableJudgeError(
                    masked(f"NL judge {self.model} failed: {exc}"), usage=self._spent(usage)
                ) from exc
            usage.add(completion.usage)
            try:
                checks = parse_verdict(completion.content)
            except JudgeError as exc:
                last = str(exc)
                continue
            if not checks:
                last = "the verdict has no results"
                continue
            return masked_checks(checks), self._spent(usage)
        raise RetryableJudgeError(
            masked(
                f"NL judge {self.model}: no usable verdict after {self.attempts} attempts ({last})"
            ),
            usage=self._spent(usage),
        )

    def _spent(self, usage: Usage) -> dict[str, Any]:
        """The judge usage as the record keeps it; on a failure too, as the calls that
        were answered were paid for."""
        return {"model": self.model, **usage.to_dict()}

    def judge(self, trajectory: list[Message], assertions: list[str]) -> list[NLCheck]:
        """Synchronous use (outside an event loop): the checks only."""
        return asyncio.run(self.ajudge(trajectory, assertions))[0]
