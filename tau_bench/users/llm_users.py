"""LLM-simulated customers: llm, react, verify and reflection (and the human, by name).

Each is a `UserSimulator`: `start(instruction)` returns the customer's first message,
the answer to the agent's fixed greeting; `reply(agent_message)` the next one. From the
model's point of view the roles are swapped: the agent's messages are `user` messages
and the customer's are `assistant` messages. Usage is summed over every model call a
strategy makes (upstream overwrote it with the last call's cost); retries are kept in
`retries` for the record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tau_adapters.options import MAX_ATTEMPTS
from tau_adapters.protocol import STOP_TOKEN, Usage, UserSimulator
from tau_bench.llm import Completion, LLMConfig, complete
from tau_bench.llm.config import whole_option
from tau_bench.users import prompts

DEFAULT_USER_MODEL = "gpt-4o"
DEFAULT_MAX_VERIFY_ATTEMPTS = 3
LLM_STRATEGIES = ("llm", "react", "verify", "reflection")


class LLMUser:
    """The plain simulated customer: one model call per turn."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.messages: list[dict[str, Any]] = []
        self.history: list[tuple[str, str]] = []
        self.retries: list[dict[str, Any]] = []
        self.instruction = ""
        self._usage = Usage()

    @property
    def usage(self) -> Usage:
        return self._usage

    def system_prompt(self, instruction: str) -> str:
        return prompts.user_system_prompt(instruction)

    async def start(self, instruction: str) -> str:
        self.instruction = instruction
        self.messages = [{"role": "system", "content": self.system_prompt(instruction)}]
        self.history = []
        return await self.reply(prompts.GREETING)

    async def reply(self, agent_message: str) -> str:
        self.messages.append({"role": "user", "content": agent_message})
        self.history.append(("agent", agent_message))
        raw, text = await self.next_message()
        self.messages.append({"role": "assistant", "content": raw})
        self.history.append(("customer", text))
        return text

    async def next_message(self) -> tuple[str, str]:
        """The model's full reply (kept in the history) and the text the agent sees."""
        completion = await self.call(self.messages)
        return completion.content, completion.content.strip()

    async def call(self, messages: list[dict[str, Any]]) -> Completion:
        completion = await complete(self.config, messages)
        self._usage.add(completion.usage)
        self.retries.extend(r.to_dict() for r in completion.retries)
        return completion


_RESPONSE_MARK = re.compile(r"User Response\s*:", re.IGNORECASE)
_THOUGHT_MARK = re.compile(r"^\s*Thought\s*:", re.IGNORECASE)


def parse_react(text: str) -> str:
    """The part of a react reply the agent sees: after the last "User Response:".

    Without the marker, a reply that starts with "Thought:" has no message in it, so
    the whole text is sent rather than nothing (the agent sees the slip); any other
    reply is sent as is.
    """
    parts = _RESPONSE_MARK.split(text)
    if len(parts) > 1:
        return parts[-1].strip()
    return _THOUGHT_MARK.sub("", text, count=1).strip()


class ReactUser(LLMUser):
    """Thinks first ("Thought:"), then answers ("User Response:"); only the answer is sent."""

    def system_prompt(self, instruction: str) -> str:
        return prompts.react_system_prompt(instruction)

    async def next_message(self) -> tuple[str, str]:
        completion = await self.call(self.messages)
        return completion.content, parse_react(completion.content)


_CLASSIFICATION = re.compile(r"Classification\s*:\s*\**\s*(true|false)", re.IGNORECASE)


def parse_verdict(text: str) -> bool:
    """The reviewer's verdict; an answer without a verdict counts as consistent."""
    found = _CLASSIFICATION.findall(text)
    return not found or found[-1].lower() == "true"


class VerifyUser(LLMUser):
    """Checks each candidate message with a second call and regenerates it if rejected."""

    def __init__(self, config: LLMConfig, max_attempts: int = DEFAULT_MAX_VERIFY_ATTEMPTS) -> None:
        super().__init__(config)
        self.max_attempts = max(1, max_attempts)
        self.rejected: list[str] = []

    async def verify(self, candidate: str) -> bool:
        request = prompts.VERIFY_REQUEST.format(
            instruction=self.instruction,
            transcript=prompts.transcript(self.history),
            candidate=candidate,
            stop=STOP_TOKEN,
        )
        completion = await self.call(
            [
                {"role": "system", "content": prompts.VERIFY_SYSTEM},
                {"role": "user", "content": request},
            ]
        )
        return parse_verdict(completion.content)

    async def improve(self, candidate: str) -> str:
        """A new candidate after a rejected one: here, simply ask again."""
        completion = await self.call(self.messages)
        return completion.content.strip()

    async def next_message(self) -> tuple[str, str]:
        candidate = (await self.call(self.messages)).content.strip()
        for attempt in range(1, self.max_attempts + 1):
            if await self.verify(candidate):
                break
            self.rejected.append(candidate)
            if attempt == self.max_attempts:
                break  # out of attempts: keep the last candidate
            candidate = await self.improve(candidate)
        return candidate, candidate


_REFLECTION_RESPONSE = re.compile(r"^\s*Response\s*:", re.IGNORECASE | re.MULTILINE)


def parse_reflection(text: str) -> str:
    """The corrected message: after the last "Response:" line (else the whole reply)."""
    parts = _REFLECTION_RESPONSE.split(text)
    return parts[-1].strip() if len(parts) > 1 else text.strip()


class ReflectionUser(VerifyUser):
    """Like verify, but a rejected message is reflected on and rewritten, not resampled."""

    async def improve(self, candidate: str) -> str:
        request = prompts.REFLECT_REQUEST.format(candidate=candidate)
        completion = await self.call([*self.messages, {"role": "user", "content": request}])
        return parse_reflection(completion.content)


def _config(options: Mapping[str, Any]) -> LLMConfig:
    opts = dict(options)
    if opts.get("temperature") is None:
        opts["temperature"] = 0.0
    return LLMConfig.from_options(opts, default_model=DEFAULT_USER_MODEL)


def build_llm_user(strategy: str, **options: Any) -> UserSimulator:
    """A fresh simulated customer for one episode.

    Options: model (default gpt-4o), provider (litellm `custom_llm_provider`, None when
    the model has a prefix), api_base, temperature (default 0.0), seed, timeout,
    max_attempts (model-call retries), max_verify_attempts (verify / reflection, 1 to
    100, default 3), llm_extra (passed to litellm); for `human`: console, input_fn. Unknown keys are
    ignored.
    """
    if strategy == "human":
        from tau_bench.users.human import HumanUser

        return HumanUser(console=options.get("console"), input_fn=options.get("input_fn"))
    if strategy not in LLM_STRATEGIES:
        raise ValueError(
            f"unknown LLM user strategy {strategy!r} (available: {', '.join(LLM_STRATEGIES)})"
        )
    config = _config(options)
    if strategy == "llm":
        return LLMUser(config)
    if strategy == "react":
        return ReactUser(config)
    attempts = whole_option(
        options, "max_verify_attempts", DEFAULT_MAX_VERIFY_ATTEMPTS, low=1, high=MAX_ATTEMPTS
    )
    assert attempts is not None  # the default is a number
    if strategy == "verify":
        return VerifyUser(config, max_attempts=attempts)
    return ReflectionUser(config, max_attempts=attempts)
