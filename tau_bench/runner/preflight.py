"""Pre-flight: prove, before the first episode, that everything every episode needs works.

Why: a bad key file or an unreachable model otherwise fails each episode on its own,
after its own retries (measured: ~30 s per Dialogflow episode one at a time, ~2 min per
episode for an unreachable user model), so a broken setup took an hour to report. Here
each need is checked once, all in parallel, under one deadline:

- the agent: its provider's optional `preflight()` (one cheap real call: Dialogflow
  ListTools, CES GetApp, the HTTP health request...);
- a built-in LLM agent, every user model, the τ³ judge: key present and one minimal call.

Failures are one line each, raised together as a `PreflightError` (a `RunConfigError`,
so the CLI prints it and exits before any file is written). `--skip-preflight` bypasses.

The checks share one event loop, so nothing slow may run on it synchronously while their
deadlines run: the model stack (litellm takes seconds to import, 13-21 s measured on a
2-core machine) is imported in a thread before any check starts (`import_model_stack`);
imported by the first model call instead, it stalled the loop and spent the other checks'
deadlines (an HTTP bot's 5 s connect deadline among them).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from tau_bench.config import RunConfig, RunConfigError
from tau_bench.runner.deadlines import bounded

PREFLIGHT_DEADLINE = 30.0
"""Seconds one check may take in all (its retries included)."""

CALL_TIMEOUT = 15.0
"""Seconds one model call of a check may take."""

_NO_MODEL_USERS = frozenset({"scripted", "human"})
PING_TEXT = "Reply with the word OK."
"""The pre-flight call's only message (test fakes answer it themselves)."""
_PING = [{"role": "user", "content": PING_TEXT}]


class PreflightError(RunConfigError):
    """One or more pre-flight checks failed; `failures` holds one line each."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        lines = "\n".join(f"  {line}" for line in failures)
        super().__init__(
            f"pre-flight failed, no episode was run (--skip-preflight to run anyway):\n{lines}"
        )


Check = tuple[str, Callable[[], Awaitable[None]]]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400] + ("…" if len(text) > 400 else "")


async def _ping(options: dict[str, Any], *, model_key: str, provider_key: str) -> None:
    """One minimal model call with the options an agent/user/judge would use."""
    from tau_bench.llm import LLMConfig, complete

    config = LLMConfig.from_options(options, model_key=model_key, provider_key=provider_key)
    timeout = min(config.timeout or CALL_TIMEOUT, CALL_TIMEOUT)
    config = dataclasses.replace(config, max_attempts=2, timeout=timeout, temperature=None)
    await complete(config, _PING, max_tokens=16)


def _model_check(options: dict[str, Any], *, provider_key: str) -> Callable[[], Awaitable[None]]:
    """A check that makes one model call (`_ping`), known as such (`_needs_model_stack`)."""
    return functools.partial(_ping, options, model_key="model", provider_key=provider_key)


def _needs_model_stack(checks: list[Check]) -> bool:
    """Whether any of `checks` calls a model (and so needs litellm imported)."""
    return any(isinstance(check, functools.partial) and check.func is _ping for _, check in checks)


def import_model_stack() -> None:
    """Import what a first model call imports: litellm (seconds) and the direct path's
    HTTP transport. Run in a thread before the checks (`preflight`), so that no check's
    deadline runs down while an import holds the event loop."""
    import tau_bench.llm  # noqa: F401  (what `_ping` imports)
    from tau_bench.llm.direct_clients import aiohttp_transport
    from tau_bench.llm.runtime import litellm

    litellm()
    aiohttp_transport()


def user_checks(config: RunConfig) -> list[Check]:
    """One check per distinct user model (none for scripted or human users)."""
    if config.user_strategy in _NO_MODEL_USERS:
        return []
    from tau_bench.llm.gemini import describe_route

    checks: list[Check] = []
    for model in dict.fromkeys(config.user_models or [config.user_model]):
        options = config.user_options(model)
        where = describe_route(options)
        checks.append(
            (f"user model {model} ({where})", _model_check(options, provider_key="provider"))
        )
    return checks


def agent_checks(config: RunConfig, provider: Any) -> list[Check]:
    """The provider's own `preflight()`, or a model call for a built-in LLM agent."""
    name = config.agent_strategy
    hook = getattr(provider, "preflight", None)
    if callable(hook):
        return [(f"agent {name}", hook)]
    if config.model and _builtin_llm_agent(name, provider):
        check = _model_check(config.adapter_options(), provider_key="model_provider")
        return [(f"agent {name} model {config.model}", check)]
    return []


def _builtin_llm_agent(name: str, provider: Any) -> bool:
    """Whether strategy `name` is one of this package's LLM agents (tool-calling, act,
    react, few-shot, tau3-llm): told by its builder's module, since most of them hand the
    runner a plain `SimpleProvider`; the oracle calls no model (`calls_model = False`)."""
    from tau_adapters.registry import load_builder

    if type(provider).__module__.startswith("tau_bench.agents."):
        return True
    try:
        builder = load_builder(name)
    except Exception:  # building it already succeeded, so this does not happen
        return False
    module = getattr(builder, "__module__", "") or ""
    return module.startswith("tau_bench.agents.") and getattr(builder, "calls_model", True)


def judge_checks(config: RunConfig, tasks: Iterable[Any] | None = None) -> list[Check]:
    """The τ³ NL judge's model, when a τ³ domain is run with an LLM judge and one of the
    run's `tasks` (all, when not given) is scored with NL assertions (τ³ telecom: none)."""
    if not any("/" in env for env in config.envs):
        return []
    if tasks is not None and not any(getattr(t, "needs_judge", True) for t in tasks):
        return []
    from tau_bench.suites.tau3 import ASSUME_MET, DEFAULT_JUDGE_MODEL

    model = config.judge_model or DEFAULT_JUDGE_MODEL
    if model == ASSUME_MET:
        return []
    return [
        (f"judge model {model}", _judge_prompts_check(config)),
        (f"judge model {model}", _model_check({"model": model}, provider_key="provider")),
    ]


def _judge_prompts_check(config: RunConfig) -> Callable[[], Awaitable[None]]:
    """A check that the judge's prompts are in the τ³ data (the offline copy has none):
    without it every episode ran, its agent paid for, and then failed to be scored."""

    async def check() -> None:
        from tau_bench.tau3.data import prompt_text, resolve_tau3_data_dir

        root = resolve_tau3_data_dir(config.data_dir)
        for name in ("nl_judge_system_prompt", "nl_judge_user_prompt"):
            prompt_text(root, name)

    return check


async def run_checks(checks: list[Check], deadline: float = PREFLIGHT_DEADLINE) -> list[str]:
    """Run `checks` in parallel, each under `deadline` seconds; the failures, one line each.

    `bounded`, not `wait_for`: a check that swallows its cancellation must not hold the run."""

    async def one(label: str, check: Callable[[], Awaitable[None]]) -> str | None:
        try:
            await bounded(check(), deadline, TimeoutError(f"no answer within {deadline:g} s"))
        except TimeoutError:
            return f"{label}: no answer within {deadline:g} s"
        except Exception as exc:
            return f"{label}: {_one_line(exc)}"
        return None

    found = await asyncio.gather(*(one(label, check) for label, check in checks))
    return [line for line in found if line]


def run_models(
    config: RunConfig, provider: Any, tasks: Iterable[Any] | None = None
) -> dict[str, Any]:
    """Each model the run calls (agent, users, judge) as an `LLMConfig`, by its check's
    label (`agent tool-calling model openai/gpt-4o-mini`)."""
    from tau_bench.llm import LLMConfig

    models: dict[str, Any] = {}
    checks = agent_checks(config, provider) + user_checks(config) + judge_checks(config, tasks)
    for label, check in checks:
        if isinstance(check, functools.partial) and check.func is _ping:
            models[label] = LLMConfig.from_options(check.args[0], **check.keywords)
    return models


def missing_keys(config: RunConfig, provider: Any, tasks: Iterable[Any] | None = None) -> list[str]:
    """One line per model of the run (agent, users, judge) whose API key this process's
    environment lacks, with no call made. A Ray worker asks it at setup: the driver's
    pre-flight passed in the driver's environment, and on a cluster the workers have
    their node's instead (a key exported in the driver's shell does not reach them)."""
    from tau_bench.llm.classify import missing_key, provider_of

    lines = []
    for label, model in run_models(config, provider, tasks).items():
        missing = missing_key(model, provider_of(model))
        if missing:
            lines.append(f"{label}: no API key: set {' or '.join(missing)}")
    return lines


async def preflight(
    config: RunConfig,
    provider: Any,
    *,
    deadline: float = PREFLIGHT_DEADLINE,
    secrets: list[str] | None = None,
    tasks: Iterable[Any] | None = None,
) -> None:
    """Check the agent, users and judge of `config`; raise `PreflightError` on failure.

    `secrets` (the provider's declared secret values) are masked in the messages."""
    from tau_adapters.redaction import redact_text

    checks = agent_checks(config, provider) + user_checks(config) + judge_checks(config, tasks)
    if _needs_model_stack(checks):
        try:
            await asyncio.to_thread(import_model_stack)  # before any check's deadline starts
        except ImportError:
            pass  # each model check reports it, one line each
    failures = await run_checks(checks, deadline)
    if failures:
        raise PreflightError([redact_text(line, list(secrets or [])) for line in failures])
