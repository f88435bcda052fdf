"""`TauBenchEnv`: one τ-bench task as a multi-turn gymnasium episode.

The policy being trained is the *agent*. `reset` picks a task, builds a fresh user
simulator for it (`tau_bench.users.build_user`, lazily, one per episode) and returns
the user's first message; `step(action)` takes one agent action - a message to the user
or one tool call - and returns what the agent sees next: the tool's result, or the
user's reply. The episode ends as a benchmark episode does (the user stops, a terminate
tool runs), with the benchmark's reward; it is truncated after `max_turns` agent
actions with reward 0, as `tau run` scores an episode cut off by `--max-steps`.

`max_turns` counts agent actions exactly as the episode loop counts steps: every tool
call and every message to the user is one. The reward is 0 on every step but the last.

The simulators and the domain tools are async-first; `reset`/`step` run them on a
private event loop, and `async_reset`/`async_step` run them on the caller's, for rollout
workers that drive many environments at once (one env per concurrent episode).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Awaitable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium
from gymnasium.error import ResetNeeded

from tau_adapters.conversation import DEFAULT_MAX_STEPS, ERROR, Conversation
from tau_adapters.protocol import ToolCall, UserOutput, UserReply, UserSimulator
from tau_bench.episode import bind_user, score_episode
from tau_bench.gym.actions import parse_action
from tau_bench.gym.checks import check_max_turns, check_options, model_list
from tau_bench.gym.pool import Ref, domain_list, label, parse_ref
from tau_bench.gym.spaces import MAX_TEXT_LENGTH, ConversationText
from tau_bench.llm import checked_llm_path, run_llm_path
from tau_bench.suites import Domain, EpisodeEnv, load_domain
from tau_bench.tasks import Task
from tau_bench.user_values import check_endpoint_url
from tau_bench.users import USER_STRATEGIES, UnknownUserStrategyError, build_user

RESET_OPTIONS = frozenset({"task_id", "split", "domain", "user_model"})
NO_MODEL_USERS = frozenset({"scripted", "human"})


@dataclass
class _Episode:
    domain: Domain
    split: str
    task_id: int
    task: Task
    env: EpisodeEnv
    user: UserSimulator
    user_model: str | None
    conversation: Conversation
    calls: int = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.conversation.messages

    @property
    def steps(self) -> int:
        return self.conversation.steps

    @property
    def done(self) -> bool:
        return self.conversation.done


class TauBenchEnv(gymnasium.Env[str, Any]):
    """See the module docstring; `docs/training.md` has a rollout loop.

    Arguments: `domain` (retail, airline, tau3/...; several as "a,b" or a list: resets
    draw from all, task ids are then "domain/N"), `split` (test; retail also train, dev),
    `user_strategy` (llm, react, verify, reflection, scripted...), `user_model` or a
    rotation `user_models=[...]` (reset number n uses `user_models[n % len]`),
    `user_provider`, `user_api_base`, `user_temperature`, `user_top_p`, `user_options`
    (more `build_user` options), `max_turns` (agent actions per episode), `task_ids`
    (the tasks a reset without `task_id` draws from, "domain/N" with several domains;
    default all of the split; an id of another domain or out of range is a ValueError),
    `data_dir` (default `$TAU_BENCH_DATA`), `render_mode` ("ansi" or None),
    `judge_model` (τ³ domains: the NL-assertion judge, `assume-met` offline),
    `llm_path` (auto, litellm, direct: the path of this env's model calls, as `tau run
    --llm-path`; default the process's, `tau_bench.llm.set_llm_path`).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        domain: str | list[str] = "retail",
        split: str = "test",
        user_strategy: str = "llm",
        user_model: str = "gpt-4o",
        user_models: list[str] | None = None,
        user_provider: str | None = None,
        user_api_base: str | None = None,
        user_temperature: float | None = None,
        user_top_p: float | None = None,
        user_options: dict[str, Any] | None = None,
        max_turns: int = DEFAULT_MAX_STEPS,
        task_ids: list[int | str] | None = None,
        data_dir: str | None = None,
        render_mode: str | None = None,
        judge_model: str | None = None,
        llm_path: str | None = None,
    ) -> None:
        if user_strategy not in USER_STRATEGIES:
            raise UnknownUserStrategyError(
                f"unknown user strategy {user_strategy!r} (available: {', '.join(USER_STRATEGIES)})"
            )
        check_max_turns(max_turns)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render mode {render_mode!r} (available: ansi)")
        self.llm_path = None if llm_path is None else checked_llm_path(llm_path)
        check_endpoint_url(user_api_base)  # ValueError naming the form: one line, not retries
        self.data_dir = data_dir
        self.judge_model = judge_model
        self.domain_names = domain_list(domain)
        self.domain_name = self.domain_names[0]
        self.mixed = len(self.domain_names) > 1
        self.split = split
        sizes = {  # fail fast on a bad domain or split
            name: len(load_domain(name, data_dir).tasks(split)) for name in self.domain_names
        }
        only = None if self.mixed else self.domain_name
        self.task_ids: list[Ref] | None = None
        if task_ids:
            refs = [parse_ref(t, self.domain_names, only) for t in task_ids]
            for ref, given in zip(refs, task_ids, strict=True):
                if not 0 <= ref[1] < sizes[ref[0]]:
                    raise ValueError(
                        f"task id {given!r} out of range for {ref[0]} {split} "
                        f"(valid: 0-{sizes[ref[0]] - 1})"
                    )
            self.task_ids = refs
        self.user_strategy = user_strategy
        self.user_models = model_list(user_models) or [user_model]
        self.user_provider = user_provider
        self.user_api_base = user_api_base
        self.user_temperature = user_temperature
        self.user_top_p = user_top_p
        self.user_options = dict(user_options or {})
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.observation_space = ConversationText()
        self.action_space = ConversationText()
        self.resets = 0
        self._episode: _Episode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._worker_loop: asyncio.AbstractEventLoop | None = None
        self._busy: tuple[str, asyncio.Task[Any] | None] | None = None  # the call in flight

    # -- the gymnasium API -----------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode. `options`: task_id (an index into the split, or
        "domain/N" of one of the env's domains, or of the `domain` option), split, domain
        (another domain for this episode), user_model (overrides the rotation)."""
        return self._run(self.async_reset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """One agent action: a message (str) or one tool call (object or JSON text)."""
        return self._run(self.async_step(action))

    def render(self) -> str | None:  # type: ignore[override]
        """The conversation so far as text ("ansi"), the policy left out."""
        if self.render_mode != "ansi":
            return None
        if self._episode is None:
            return ""
        lines = []
        for message in self._episode.messages:
            role = message["role"]
            if role == "system":
                continue
            if message.get("tool_calls"):
                for call in message["tool_calls"]:
                    fn = call["function"]
                    lines.append(f"assistant -> {fn['name']}({fn['arguments']})")
            elif role == "tool":
                lines.append(f"tool {message['name']}: {message['content']}")
            else:
                lines.append(f"{role}: {message['content']}")
        return "\n".join(lines) + ("\n" if lines else "")

    def close(self) -> None:
        """Release the private event loops (idempotent), cancelling a call left running."""
        self._episode = None
        if self._worker is not None:
            if self._worker_loop is not None:
                self._worker.submit(_close_loop, self._worker_loop).result()
            self._worker.shutdown(wait=True)
            self._worker = None
            self._worker_loop = None
        if self._loop is not None:
            _close_loop(self._loop)
        self._loop = None
        self._busy = None

    # -- the asyncio API ---------------------------------------------------------------

    async def async_reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """`reset` on the caller's event loop."""
        with self._path(), self._one_at_a_time("async_reset"):
            return await self._reset(seed, options)

    async def async_step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """`step` on the caller's event loop."""
        with self._path(), self._one_at_a_time("async_step"):
            return await self._step(action)

    @contextlib.contextmanager
    def _one_at_a_time(self, name: str) -> Iterator[None]:
        """One env is one conversation: a second reset/step while one is awaiting the user
        would interleave two turns in one transcript, so it is refused."""
        if self._busy is not None:
            running, task = self._busy
            if task is None or not task.done():
                raise RuntimeError(
                    f"{name} called while {running} is still running on this env (one env "
                    "per concurrent episode: await each call before the next; close() "
                    "cancels an interrupted one)"
                )
        busy = (name, asyncio.current_task())
        self._busy = busy
        try:
            yield
        finally:
            if self._busy is busy:
                self._busy = None

    def _path(self) -> contextlib.AbstractContextManager[None]:
        """This env's `llm_path` for the model calls made inside (the user's, the
        judge's), leaving other code on the caller's loop on its own."""
        return contextlib.nullcontext() if self.llm_path is None else run_llm_path(self.llm_path)

    async def _reset(
        self, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[str, dict[str, Any]]:
        self._episode = None  # a reset that fails leaves no episode to step
        super().reset(seed=seed)
        opts = check_options(options)
        unknown = sorted(set(opts) - RESET_OPTIONS)
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {', '.join(unknown)} "
                f"(available: {', '.join(sorted(RESET_OPTIONS))})"
            )
        split = str(opts.get("split") or self.split)
        domain_name, task_id = self._pick(opts, split)
        domain = load_domain(domain_name, self.data_dir)
        if self.judge_model is not None and hasattr(domain, "for_run"):
            domain = domain.for_run(self)  # τ³: the NL judge of this gym
        tasks = domain.tasks(split)
        if not 0 <= task_id < len(tasks):
            raise ValueError(
                f"task id {task_id} out of range for {domain_name} {split} (valid: 0-{len(tasks) - 1})"
            )
        rotation = self.user_models[self.resets % len(self.user_models)]
        self.resets += 1
        user_model = str(opts.get("user_model") or rotation)
        user_seed = int(self.np_random.integers(2**31))
        user = self._build_user(user_model, user_seed)
        task = tasks[task_id]
        env = domain.new_env(task)
        user_executor = bind_user(user, domain, task, env)  # the user's tools: its side only
        episode = _Episode(
            domain=domain,
            split=split,
            task_id=task_id,
            task=task,
            env=env,
            user=user,
            user_model=None if self.user_strategy in NO_MODEL_USERS else user_model,
            conversation=Conversation(env, max_steps=self.max_turns, user_executor=user_executor),
        )
        self._episode = episode
        episode.conversation.system(domain.policy)
        first = await _guarded(episode, _user_words(episode, user.start(task.instruction)))
        episode.conversation.user_said(first)
        info = {
            "task_id": label((domain_name, task_id), self.mixed),
            "domain": domain.name,
            "split": split,
            "tools": copy.deepcopy(domain.tool_schemas),
            "policy": domain.policy,
            "user_model": episode.user_model,
            "user_strategy": self.user_strategy,
            "max_turns": self.max_turns,
            **self._observation_info("user"),
        }
        return self._observation(first, info), info

    async def _step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is None or episode.done:
            ended = (
                " with an error" if episode and episode.conversation.stop_reason == ERROR else ""
            )
            raise ResetNeeded(f"call reset() before step() (the episode is over{ended})")
        parsed = parse_action(action, f"call_{episode.calls + 1}")
        if isinstance(parsed, ToolCall):
            return self._tool_step(episode, parsed)
        return await self._message_step(episode, parsed)

    def _pick(self, opts: dict[str, Any], split: str) -> Ref:
        """The (domain, index) a reset plays: the `task_id` option, else a draw from
        `task_ids` (same split) or from every task of the wanted domain(s)."""
        wanted = [str(opts["domain"]).strip()] if opts.get("domain") else self.domain_names
        default = wanted[0] if len(wanted) == 1 else None
        if opts.get("task_id") is not None:
            hint = "" if opts.get("domain") else "; to switch domain, pass the 'domain' option too"
            return parse_ref(opts["task_id"], wanted, default, hint=hint)
        pool = [r for r in self.task_ids or [] if r[0] in wanted] if split == self.split else []
        if not pool:
            pool = [
                (name, i)
                for name in wanted
                for i in range(len(load_domain(name, self.data_dir).tasks(split)))
            ]
        return pool[int(self.np_random.integers(len(pool)))]

    # -- steps ----------------------------------------------------------------------------

    def _tool_step(
        self, episode: _Episode, call: ToolCall
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        episode.calls += 1
        (result,) = episode.conversation.agent_tool_calls([call])
        info = self._observation_info("tool", tool_call_id=call.id, tool_name=call.name)
        if episode.done:
            return self._end(episode, result.content, info)
        return self._observation(result.content, info), 0.0, False, False, info

    async def _message_step(
        self, episode: _Episode, text: str
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if episode.conversation.agent_message(text):
            return self._end(episode, "", self._observation_info("none"))
        reply = await _guarded(episode, _user_words(episode, episode.user.reply(text)))
        stopped = episode.conversation.user_said(reply)
        info = self._observation_info("user")
        if stopped:
            return self._end(episode, reply, info)
        return self._observation(reply, info), 0.0, False, False, info

    def _end(
        self, episode: _Episode, observation: str, info: dict[str, Any]
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Score the episode as `tau run` does (cut off by max turns: reward 0)."""
        conversation = episode.conversation
        reward = score_episode(episode.env, conversation.stop_reason, conversation.messages)
        truncated = conversation.cut_off
        info["stop_reason"] = conversation.stop_reason
        info["reward_info"] = reward.to_dict()
        info["user_usage"] = episode.user.usage.to_dict()
        return (
            self._observation(observation, info),
            float(reward.reward),
            not truncated,
            truncated,
            info,
        )

    def _observation_info(self, role: str, **extra: Any) -> dict[str, Any]:
        episode = self._episode
        return {"observation_role": role, "turn": episode.steps if episode else 0, **extra}

    @staticmethod
    def _observation(text: str, info: dict[str, Any]) -> str:
        if len(text) <= MAX_TEXT_LENGTH:
            return text
        info["observation_cut"] = len(text)
        return text[:MAX_TEXT_LENGTH]

    # -- helpers --------------------------------------------------------------------------

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The episode's conversation in OpenAI format (policy as the system message)."""
        return copy.deepcopy(self._episode.messages) if self._episode else []

    @property
    def task(self) -> Task | None:
        """The current task (the user's hidden instruction and the ground truth)."""
        return self._episode.task if self._episode else None

    def _build_user(self, model: str, seed: int) -> UserSimulator:
        provider = model.split("/", 1)[0] if "/" in model else self.user_provider
        options: dict[str, Any] = {
            "model": model,
            "provider": provider,
            "api_base": self.user_api_base,
            "temperature": self.user_temperature,
            "top_p": self.user_top_p,
            "seed": seed,
        }
        options = {k: v for k, v in options.items() if v is not None}
        options.update(self.user_options)
        return build_user(self.user_strategy, **options)

    def _run(self, coro: Any) -> Any:
        """Run `coro` to completion from synchronous code.

        On a thread without a running loop it runs on this env's private loop; inside a
        running loop (a notebook) it runs on a private loop in a worker thread. Either
        loop persists across calls, so a user's HTTP clients stay on one loop.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(coro)
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tau-gym")
            self._worker_loop = self._worker.submit(asyncio.new_event_loop).result()
        loop = self._worker_loop
        assert loop is not None
        return self._worker.submit(loop.run_until_complete, coro).result()


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a private loop as `asyncio.run` would: cancel what still runs on it (the
    HTTP library's background workers), finish async generators, then close."""
    if loop.is_closed():
        return
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


async def _guarded(episode: _Episode, call: Awaitable[str]) -> str:
    """The user's words; when the user fails (its model down after retries, a cancelled
    step) the episode ends with an error, so a later `step` raises `ResetNeeded` instead
    of going on with a transcript that lacks the user's turn."""
    try:
        return await call
    except BaseException:
        episode.conversation.end(ERROR)
        raise


async def _user_words(episode: _Episode, call: Awaitable[UserOutput]) -> str:
    """The user's words for the policy, after any tool calls of its own (τ³ telecom): those
    run on the user's side and only the user sees their results, never the policy."""
    out = await call
    made = 0
    conversation = episode.conversation
    while isinstance(out, UserReply) and out.tool_calls and made < conversation.max_steps:
        results = conversation.user_tool_calls(list(out.tool_calls), out.text)
        made += len(results)
        out = await episode.user.tool_results(results)  # type: ignore[attr-defined]
    return out.text if isinstance(out, UserReply) else str(out)
