"""The Dialogflow CX ("decibel") adapter: a hosted playbook agent as an `AgentAdapter`.

One episode is one Dialogflow session (`…/agents/A[/environments/E]/sessions/<episode id>`).
A user turn is a DetectIntent with text; the agent's function-tool calls come back as
`tool_call` response messages and are surfaced to the loop as `ToolCall`s, which runs them
on the local τ-bench DB; each observation goes back in its own DetectIntent
(`ToolCallResult`, echoing `tool` and `action`), because a request holds exactly one.
Whatever those requests answer (more text, more tool calls, nothing) is accumulated into
the one `AgentTurn` the loop gets back.

Observations map to one shape: `output_parameters = {"result": "<observation>"}`, and
observations the env marks as errors (`Error: …`, `Unknown action …`) become
`ToolCallResult.error.message = "<observation>"`.

This module is the provider (`build(options)`, entry points `dialogflow-cx` and `decibel`),
shared by a run's episodes: clients, the tool-name map from ListTools, and the rate
limiter. The per-episode adapter is in `episode`, the request shapes in `queries`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from adapters.dialogflow.clients import Clients, SeenTokens, make_clients
from adapters.dialogflow.config import DialogflowConfig, load_config
from adapters.dialogflow.episode import DialogflowAdapter
from adapters.dialogflow.options import DialogflowOptions
from adapters.dialogflow.provision import MAX_LIST_PAGES
from adapters.dialogflow.retry import RetryPolicy, Sleep, TokenBucket, call_with_retries
from tau_adapters.protocol import AdapterError, AdapterProtocolError, AdapterTimeoutError
from tau_adapters.redaction import mask_encoded, mask_values
from tau_adapters.registry import AgentProvider

PREFLIGHT_DEADLINE = 10.0  # seconds a pre-flight ListTools may take, retries included

LIST_PAGE_SIZE = 100


class DialogflowProvider:
    """Shared by all episodes of a run: clients, tool names, rate limit, retry policy."""

    def __init__(self, config: DialogflowConfig, *, sleep: Sleep = asyncio.sleep) -> None:
        self.config = config
        self.display_name = config.agent_id  # optional provider attribute: names the agent
        self.policy = RetryPolicy(
            max_attempts=config.max_attempts,
            initial=config.retry_initial,
            maximum=config.retry_max,
            ambiguous_retries=config.ambiguous_retries,
        )
        self.sleep = sleep
        self.warnings: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: Clients | None = None
        self._tool_names: dict[str, str] | None = None
        self._tool_names_error: AdapterError | None = None
        self._lock: asyncio.Lock | None = None
        self._bucket: TokenBucket | None = None
        # Values to mask wherever they reappear: every bearer token the channels sent
        # (tokens refresh: the runner reads `secrets` per record, so new ones count) and
        # the values of session parameters with secret-looking names.
        self.tokens = SeenTokens()
        self.param_secrets = SeenTokens()

    @property
    def secrets(self) -> list[str]:
        """What the runner masks in every record (and this adapter in what it returns)."""
        return [*self.tokens, *self.param_secrets]

    def mask(self, value: Any) -> Any:
        """A JSON-like value (or a string) with every secret masked."""
        return mask_values(value, self.secrets)

    def mask_error(self, exc: AdapterError) -> AdapterError:
        """`exc` with the secrets masked in its message (a server may echo a token)."""
        if exc.args:
            exc.args = (mask_encoded(str(exc.args[0]), self.secrets), *exc.args[1:])
        return exc

    def new_adapter(self) -> DialogflowAdapter:
        return DialogflowAdapter(self)

    def _bind_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._lock is None:
            # aio channels and locks belong to one loop; a new loop gets new ones.
            self._loop = loop
            self._clients = None
            self._lock = asyncio.Lock()
            self._bucket = (
                TokenBucket(self.config.rate_limit, sleep=self.sleep)
                if self.config.rate_limit
                else None
            )
        return self._lock

    async def clients(self) -> Clients:
        lock = self._bind_loop()
        async with lock:
            if self._clients is None:
                self._clients = await make_clients(self.config, self.tokens)
            return self._clients

    @property
    def full_trace(self) -> bool:
        return self.config.trace == "full"

    async def throttle(self) -> None:
        """Wait for the shared rate limit (if any) before one request."""
        self._bind_loop()
        if self._bucket is not None:
            await self._bucket.acquire()

    async def preflight(self) -> None:
        """Before the first episode: make the clients (credentials) and list the agent's
        tools once, bounded by `call_deadline`. The answer (or the failure) is kept and
        shared by every episode: a run whose credentials or endpoint are wrong fails in
        one call's time, not once per episode. A pre-flight waits at most
        `PREFLIGHT_DEADLINE` seconds (retries included): a closed port, no network or
        refused credentials are reported in seconds, before any episode runs."""
        await self.tool_names(deadline=min(self.config.call_deadline, PREFLIGHT_DEADLINE))

    async def tool_names(self, deadline: float | None = None) -> dict[str, str]:
        """Tool resource name -> function name (function tools, all pages), once per run;
        a failure is kept too, so later episodes fail at once with the same error."""
        if self._tool_names is not None:
            return self._tool_names
        if self._tool_names_error is not None:
            raise self._tool_names_error
        clients = await self.clients()
        lock = self._bind_loop()
        async with lock:
            if self._tool_names_error is not None:
                raise self._tool_names_error
            if self._tool_names is None:
                try:
                    limit = self.config.call_deadline if deadline is None else deadline
                    async with asyncio.timeout(limit):
                        self._tool_names = await self._list_tools(clients)
                except TimeoutError:
                    which = "call_deadline" if deadline is None else "pre-flight"
                    self._tool_names_error = AdapterTimeoutError(
                        f"dialogflow ListTools: no answer within {limit:g} s ({which}); "
                        "check the network, the endpoint and the credentials"
                    )
                    raise self._tool_names_error from None
                except AdapterError as exc:
                    self._tool_names_error = self.mask_error(exc)
                    raise
            return self._tool_names

    async def _list_tools(self, clients: Clients) -> dict[str, str]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        names: dict[str, str] = {}
        token = ""
        for _ in range(MAX_LIST_PAGES):
            request = cx.ListToolsRequest(
                parent=self.config.agent_name, page_size=LIST_PAGE_SIZE, page_token=token
            )

            async def page(request: Any = request) -> Any:
                return await clients.tools.list_tools(
                    request=request, retry=None, timeout=self.config.timeout
                )

            try:
                pager = await call_with_retries(
                    page,
                    self.policy,
                    what="ListTools",
                    sleep=self.sleep,
                    before_attempt=self.throttle,
                )
            except AdapterError as exc:
                if "PERMISSION_DENIED" in str(exc):
                    # DetectIntent-only credentials: fall back to the calls' `action`.
                    self.warnings.append(
                        f"{self.mask(str(exc))}; tool calls are named by their action"
                    )
                    return {}
                raise
            for tool in pager.tools:
                if type(tool).pb(tool).WhichOneof("specification") == "function_spec":
                    names[tool.name] = tool.display_name
            token = pager.next_page_token
            if not token:
                return names
        raise AdapterProtocolError(
            f"dialogflow ListTools: still a next page after {MAX_LIST_PAGES} pages; "
            "the service keeps paginating"
        )

    async def aclose(self) -> None:
        clients, self._clients = self._clients, None
        if clients is not None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is clients.loop:
                await clients.close()


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point (`dialogflow-cx`, `decibel`): validate options, make the provider."""
    return DialogflowProvider(load_config(options))


build.options_model = DialogflowOptions  # type: ignore[attr-defined]


__all__ = ["DialogflowAdapter", "DialogflowProvider", "build"]
