"""A local Dialogflow CX (v3beta1) gRPC server with a local agent as its brain.

Serves Sessions (DetectIntent, ServerStreamingDetectIntent, StreamingDetectIntent),
Tools (List/Get/Create/Update/Delete), Playbooks (List/Get/Create/Update/Delete) and
Agents (Get/Update: the start playbook) over plain-text gRPC. This module is the session
side (DetectIntent against the brain); the method tables are in `services`, the status
plumbing in `rpc`. Sessions are keyed by their full path and expire when idle (30 minutes,
or the request's `session_ttl`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from adapters.dialogflow.harness.emulator.faults import FaultPlan
from adapters.dialogflow.harness.emulator.rpc import RpcFailure, parse_session_path
from adapters.dialogflow.harness.emulator.services import Services
from adapters.dialogflow.harness.emulator.sessions import (
    EmulatedSession,
    SessionError,
    answer_text,
    answer_tool_result,
    context_for,
    turn_messages,
)
from adapters.dialogflow.harness.emulator.store import Store
from adapters.dialogflow.structs import struct_to_python
from tau_adapters.protocol import AdapterConfigError, AgentTurn
from tau_adapters.registry import AgentProvider, build_provider
from tau_bench.listen import grpc_listen_address

FAULTS_ENV = "TAU_DF_EMULATOR_FAULTS"
DEFAULT_IDLE = 1800.0
MAX_TTL = 86400.0


class Emulator:
    """The emulated service. `await start()`, point clients at `address`, `await stop()`.

    `brain`/`brain_options`: the agent strategy answering (built with `build_provider`), or
    pass a ready `provider`. `env`: the default domain (a session may pick another with the
    `env` parameter). `preload_tools`: new agents start with the domain's function tools.
    `max_page_size` caps List pages (to exercise paging). `idle_ttl`/`clock`: session
    expiry. `per_result`: hand each tool result to the brain as it arrives instead of all
    of a turn's results at once. `faults`: the injection queue (see `faults.py`).
    """

    def __init__(
        self,
        *,
        brain: str = "oracle",
        brain_options: Mapping[str, Any] | None = None,
        env: str = "airline",
        data_dir: str | Path | None = None,
        preload_tools: bool = True,
        max_page_size: int = 1000,
        idle_ttl: float = DEFAULT_IDLE,
        clock: Callable[[], float] = time.monotonic,
        provider: AgentProvider | None = None,
        per_result: bool = False,
    ) -> None:
        from tau_bench.suites import load_domain

        self.env = env
        self.data_dir = data_dir
        domain = load_domain(env, data_dir)
        self.brain_name = brain
        self.provider = provider or build_provider(brain, dict(brain_options or {}))
        self.store = Store(domain.tool_schemas if preload_tools else ())
        self.max_page_size = max(1, max_page_size)
        self.idle_ttl = idle_ttl
        self.clock = clock
        self.sessions: dict[str, EmulatedSession] = {}
        self.faults = FaultPlan()
        self.calls: Counter[str] = Counter()
        self.per_result = per_result
        self.address = ""
        self._server: grpc.aio.Server | None = None
        if os.environ.get(FAULTS_ENV):
            self.faults.load(os.environ[FAULTS_ENV])

    # Lifecycle -------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        target = grpc_listen_address(host, port)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(Services(self).handlers())
        bound = server.add_insecure_port(target)
        if not bound:
            raise OSError(f"cannot listen on {target}")
        await server.start()
        self._server = server
        self.address = f"{target.rsplit(':', 1)[0]}:{bound}"
        return self.address

    async def stop(self, grace: float | None = None) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        for session in list(self.sessions.values()):
            await self._close(session)
        self.sessions.clear()
        await self.provider.aclose()

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    # Sessions --------------------------------------------------------------------------
    async def _close(self, session: EmulatedSession) -> None:
        session.ended = True
        if session.brain is not None:
            try:
                await session.brain.close()
            except Exception:
                pass
            session.brain = None

    async def expire_idle(self) -> int:
        """Drop sessions idle longer than their TTL; returns how many were dropped."""
        now = self.clock()
        stale = [s for s in self.sessions.values() if now - s.last_used > s.ttl]
        for session in stale:
            self.sessions.pop(session.path, None)
            await self._close(session)
        return len(stale)

    def _session(self, path: str) -> EmulatedSession:
        agent_name, _ = parse_session_path(path)
        session = self.sessions.get(path)
        if session is None:
            session = EmulatedSession(
                path=path,
                agent=self.store.agent(agent_name),
                ttl=self.idle_ttl,
                per_result=self.per_result,
            )
            self.sessions[path] = session
        return session

    async def detect_intent(self, request: Any) -> Any:
        """The DetectIntent logic, shared by the unary and streaming methods."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        query = request.query_input
        if not query.language_code:
            raise RpcFailure("INVALID_ARGUMENT", "query_input.language_code is required")
        await self.expire_idle()
        session = self._session(request.session)
        async with session.lock:
            params_pb = type(request.query_params).pb(request.query_params)
            if params_pb.HasField("parameters"):
                for key, value in struct_to_python(params_pb.parameters).items():
                    if value is None:
                        session.params.pop(key, None)
                    else:
                        session.params[key] = value
            if params_pb.HasField("session_ttl"):
                ttl = params_pb.session_ttl.seconds + params_pb.session_ttl.nanos / 1e9
                if not 0 < ttl <= MAX_TTL:
                    raise RpcFailure("INVALID_ARGUMENT", "session_ttl must be in (0, 1 day]")
                session.ttl = ttl
            session.last_used = self.clock()
            if session.brain is None:
                await self._start_brain(session)
            kind = type(query).pb(query).WhichOneof("input")
            result = cx.QueryResult(language_code=query.language_code)
            trace: list[Any] = []
            try:
                if kind == "text":
                    result.text = query.text.text
                    trace.append(cx.Action(user_utterance=cx.UserUtterance(text=query.text.text)))
                    turn = await answer_text(session, query.text.text)
                elif kind == "tool_call_result":
                    tcr = query.tool_call_result
                    trace.append(cx.Action(tool_use=cx.ToolUse(tool=tcr.tool, action=tcr.action)))
                    turn = await answer_tool_result(session, tcr)
                else:
                    raise RpcFailure(
                        "INVALID_ARGUMENT",
                        f"the emulator accepts text and tool_call_result inputs, not {kind}",
                    )
            except SessionError as exc:
                raise RpcFailure(exc.code, str(exc)) from None
            except RpcFailure:
                raise
            except Exception as exc:
                raise RpcFailure("INTERNAL", f"brain {self.brain_name} failed: {exc}") from None
            messages = turn_messages(session, turn) if turn is not None else []
            result.response_messages = messages
            result.parameters = session.params
            result.match = cx.Match(match_type=cx.Match.MatchType.PLAYBOOK)
            trace.extend(_trace_of(turn))
            result.generative_info = cx.GenerativeInfo(
                current_playbooks=session.agent.active_playbooks(),
                action_tracing_info=cx.Example(actions=trace),
            )
            if turn is not None and (turn.end_conversation or turn.handoff):
                self.sessions.pop(session.path, None)
                await self._close(session)
            return cx.DetectIntentResponse(response_id=str(uuid.uuid4()), query_result=result)

    async def _start_brain(self, session: EmulatedSession) -> None:
        _, session_id = parse_session_path(session.path)
        try:
            context = context_for(session.params, session_id, self.env, self.data_dir)
        except SessionError as exc:
            raise RpcFailure(exc.code, str(exc)) from None
        brain = self.provider.new_adapter()
        try:
            await brain.start(context)
        except AdapterConfigError as exc:
            hint = ""
            if context.task is None:
                hint = " (send session parameters task_id, task_split and env)"
            raise RpcFailure(
                "FAILED_PRECONDITION", f"brain {self.brain_name}: {exc}{hint}"
            ) from None
        except Exception as exc:
            raise RpcFailure(
                "INTERNAL", f"brain {self.brain_name} failed to start: {exc}"
            ) from None
        session.brain = brain


def _trace_of(turn: AgentTurn | None) -> list[Any]:
    """The playbook trace of a brain turn (agent utterances and tool uses)."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    if turn is None:
        return []
    actions = [cx.Action(agent_utterance=cx.AgentUtterance(text=t)) for t in turn.messages]
    for call in turn.tool_calls:
        actions.append(cx.Action(tool_use=cx.ToolUse(action=call.name, display_name=call.name)))
    return actions
