"""The narrow contract between the episode loop and any agent.

An agent - a local LLM strategy, a hosted Dialogflow CX agent, an HTTP chatbot - is an
`AgentAdapter`: `start` a conversation, `send` it what the user said or what its tools
returned, get back an `AgentTurn` (text for the user and/or tool calls, plus flags),
`close` it. The loop (`tau_adapters.loop`) owns the conversation; adapters own only the
wire protocol. Nothing here knows about τ-bench domains: tools are JSON schemas and
observations are strings.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from tau_adapters.jsonsafe import printable


@dataclass
class Usage:
    """Tokens and cost of the model calls behind one turn (cost in USD, litellm's prices)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0

    def add(self, other: Usage | None) -> None:
        if other is None:
            return
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost += other.cost
        self.calls += other.calls

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "calls": self.calls,
        }


@dataclass
class ToolCall:
    """A tool the agent wants run: `arguments` is the decoded JSON object it sent."""

    id: str
    name: str
    arguments: Any
    raw: Any = None


@dataclass(frozen=True)
class ToolOutput:
    """What running one tool returned: the observation text and whether it is an error.

    Executors decide `is_error` where they know it (an exception, an unknown tool), so
    nobody downstream guesses it from the text.
    """

    content: str
    is_error: bool = False


@dataclass
class ToolResult:
    """What running a tool returned, for the call with id `call_id`."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass
class UserTurn:
    """What the (simulated) user said."""

    text: str


@dataclass
class UserReply:
    """One turn of a user with tools of its own (τ³ telecom: the customer's phone).

    `tool_calls` run on the user's side of the environment first; their observations go
    back to this user only (`ToolUsingUser.tool_results`), never to the agent, and the
    user answers again. Only a reply without tool calls reaches the agent, as its `text`.
    A plain `str` from `start`/`reply` is the same as `UserReply(text)`.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


UserOutput = str | UserReply


@dataclass
class ToolResults:
    """Observations for tool calls of the agent's last turn, in call order.

    With the loop's `max_tool_calls_per_turn` set, it may cover only a prefix of the
    calls; an adapter must then act as if the remaining calls were never made.
    """

    results: list[ToolResult]


AgentInput = UserTurn | ToolResults


@dataclass
class AgentTurn:
    """The agent's answer to one `send`: messages for the user and/or tool calls."""

    messages: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    end_conversation: bool = False
    handoff: bool = False
    raw: list[Any] = field(default_factory=list)
    usage: Usage | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(m for m in self.messages if m)


@dataclass(frozen=True)
class ToolEndpoint:
    """Where an agent that calls tools itself (server-side tools) reaches this episode's
    tools: the tool server's base URL, its OpenAPI document, its MCP endpoint, the
    episode's session id and the bearer token that guards it. The harness starts the
    server when a provider asks for it (`AgentProvider.wants_tool_server`)."""

    base_url: str
    session_id: str
    token: str

    @property
    def session_url(self) -> str:
        return f"{self.base_url}/sessions/{self.session_id}"

    @property
    def openapi_url(self) -> str:
        return f"{self.base_url}/openapi.json"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp?session={self.session_id}"


@dataclass(frozen=True)
class ToolServerRequest:
    """A provider whose agent calls tools itself sets `tool_server` to one of these: the
    harness then serves the episode's tools (HTTP/OpenAPI and MCP) on `host:port` for
    the run, and gives each session its `ToolEndpoint`. `public_url` is the base URL the
    agent must use when it differs from the bound address (a tunnel, a proxy)."""

    host: str = "127.0.0.1"
    port: int = 0
    public_url: str | None = None
    ttl: float = 3600.0


@dataclass
class SessionContext:
    """Everything an adapter may use to open a conversation.

    `tools` are OpenAI function schemas, `policy` is the domain policy (the system
    prompt of local agents; hosted agents usually carry their own). `task` is the
    benchmark task object: only the oracle baseline looks at it. `tool_endpoint` is set
    when the provider asked for server-side tools.
    """

    session_id: str
    domain: str
    tools: list[dict[str, Any]]
    policy: str = ""
    task_id: str | int | None = None
    user_id: str | None = None
    trial: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    task: Any = None
    tool_endpoint: ToolEndpoint | None = None


@runtime_checkable
class AgentAdapter(Protocol):
    """An agent the loop can talk to. One instance serves one conversation at a time."""

    async def start(self, session: SessionContext) -> None: ...

    async def send(self, turn: AgentInput) -> AgentTurn: ...

    async def close(self) -> None: ...


@runtime_checkable
class UserSimulator(Protocol):
    """The customer side of the conversation. `###STOP###` in a reply ends it.

    Replies are text; a user with tools may also answer with a `UserReply` carrying tool
    calls (then it must implement `ToolUsingUser.tool_results`)."""

    async def start(self, instruction: str) -> UserOutput: ...

    async def reply(self, agent_message: str) -> UserOutput: ...

    @property
    def usage(self) -> Usage: ...


@runtime_checkable
class ToolUsingUser(UserSimulator, Protocol):
    """A user that calls tools of its own: it is handed back their observations, in call
    order, and answers with more calls or with words for the agent."""

    async def tool_results(self, results: list[ToolResult]) -> UserOutput: ...


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs tools on the local DB. `execute` never raises: errors are typed outputs."""

    def execute(self, name: str, kwargs: Any) -> ToolOutput: ...

    def is_terminate(self, name: str) -> bool: ...

    def respond(self, content: str) -> None: ...


STOP_TOKEN = "###STOP###"


class AdapterError(Exception):
    """An adapter failed in a way the episode cannot recover from (typed in records)."""

    kind = "adapter_error"

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class AdapterConfigError(AdapterError):
    """Bad adapter configuration: fail fast, do not retry."""

    kind = "config_error"


class AdapterAuthError(AdapterError):
    """The remote agent refused our credentials (401/403, UNAUTHENTICATED...)."""

    kind = "auth_error"


class AdapterProtocolError(AdapterError):
    """The remote agent answered something we cannot interpret."""

    kind = "protocol_error"


class AdapterTimeoutError(AdapterError):
    """The remote agent did not finish answering within a call's total deadline (a bot
    that drips bytes or streams keep-alives forever): recorded as an agent timeout."""

    kind = "agent_timeout"

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message, retryable=retryable)


class AdapterUnavailableError(AdapterError):
    """The remote agent lost the conversation (its session expired or was reset) or
    cannot serve it: the episode cannot be finished as it started."""

    kind = "agent_unavailable"

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message, retryable=retryable)


class AdapterLimitError(AdapterError):
    """The agent platform cannot take this input (a text longer than its limit): a
    property of the platform, recorded per episode, not a bug of the agent."""

    kind = "agent_platform_limit"


class AgentTurnError(AdapterProtocolError):
    """An adapter's `send` returned something that is not a well-formed `AgentTurn` (a bug
    in the adapter, not an answer of its agent): the episode ends with this protocol error."""


USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cost", "calls")


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    """The type name of `value` as it may be shown (a class name is the adapter's text)."""
    name = printable(type(value).__name__)
    return name if len(name) <= 60 else name[:57] + "..."


def _usable_number(value: Any) -> bool:
    """A finite number >= 0 (not a bool): what every reader of a results file accepts."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an integer beyond any float
        return False


def clean_usage(usage: Usage) -> tuple[Usage, list[str]]:
    """`usage` with every field that is not a finite number >= 0 (a NaN or infinite cost, a
    negative token count, a string) set to 0, the "unknown" of `Usage`, and those fields
    as `name=value`. Why: one such value makes the run's totals NaN and its results file
    unreadable to `--resume`, `tau view` and `tau compare`; an adapter's bad bookkeeping
    must not cost the episode."""
    bad = {name: getattr(usage, name) for name in USAGE_FIELDS}
    bad = {name: value for name, value in bad.items() if not _usable_number(value)}
    if not bad:
        return usage, []
    return replace(usage, **dict.fromkeys(bad, 0)), [f"{n}={_shown(v)}" for n, v in bad.items()]


def _call_problems(index: int, call: Any) -> list[str]:
    where = f"AgentTurn.tool_calls[{index}]"
    if not isinstance(call, ToolCall):
        return [f"{where} is {_kind(call)}, expected ToolCall"]
    problems = [
        f"{where}.{name} is {_kind(value)}, expected str"
        for name, value in (("id", call.id), ("name", call.name))
        if not isinstance(value, str)
    ]
    try:
        json.dumps(call.arguments)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else _shown(str(exc), 80)
        problems.append(f"{where}.arguments cannot be encoded as JSON ({reason})")
    return problems


def turn_problems(turn: Any) -> list[str]:
    """What is wrong with the shape of what an adapter's `send` returned (empty: nothing).

    The episode loop ends the episode with an `AgentTurnError` naming the first problem,
    and the conformance kit (`tau_adapters.testing`) reports them all: one function, so
    the kit and the runner judge an adapter alike. Only types are checked; what the agent
    said (any text, any tool name, the arguments a model made up) is scored, not refused."""
    if not isinstance(turn, AgentTurn):
        return [f"send returned {_kind(turn)}, expected AgentTurn"]
    problems: list[str] = []
    if not isinstance(turn.messages, list):
        problems.append(f"AgentTurn.messages must be a list of str, got {_kind(turn.messages)}")
    else:
        odd = [m for m in turn.messages if not isinstance(m, str)]
        if odd:
            problems.append(f"AgentTurn.messages must be a list of str, one is {_kind(odd[0])}")
    if not isinstance(turn.tool_calls, list):
        problems.append(
            f"AgentTurn.tool_calls is {_kind(turn.tool_calls)}, expected a list of ToolCall"
        )
    else:
        for i, call in enumerate(turn.tool_calls):
            found = _call_problems(i, call)
            if found:  # the first bad call is enough: a turn may hold thousands
                problems.extend(found)
                break
    for name, value, kind, expected in (
        ("usage", turn.usage, Usage | None, "Usage or None"),
        ("raw", turn.raw, list, "a list"),
        ("extra", turn.extra, dict, "a dict"),
    ):
        if not isinstance(value, kind):
            problems.append(f"AgentTurn.{name} is {_kind(value)}, expected {expected}")
    return problems
