"""How one batch of session inputs reaches the agent: RunSession, or a BidiRunSession stream.

Both return the agent's outputs for the turn plus the raw request/response dicts kept in
the trajectory. A stream's turn is bounded: at most `max_turn_messages` server messages
and `max_turn_bytes` bytes are read before the turn completes, else
`AdapterProtocolError` (a server that streams outputs and never says `turn_completed`). Both run under `call_with_retries` (one deadline per call). The stream
is opened lazily and kept for the episode; any failure drops it, so a retry (or the
next turn) reconnects with the same session name, which resumes the server-side session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from adapters.ces.outputs import Parsed, absorb, absorb_server_message
from adapters.ces.retry import (
    RetryLog,
    RetryPolicy,
    Sleep,
    call_with_retries,
    undecodable,
    undecodable_error,
)
from adapters.ces.structs import message_dict
from tau_adapters.protocol import AdapterProtocolError


@dataclass
class Exchanged:
    parsed: Parsed
    request: Any
    response: Any
    log: RetryLog = field(default_factory=RetryLog)


class ClientSource(Protocol):
    policy: RetryPolicy
    sleep: Sleep

    async def clients(self) -> Any: ...


class UnaryTransport:
    """One RunSession per batch of inputs."""

    def __init__(self, source: ClientSource, config: Any) -> None:
        self.source = source
        self.config = config

    async def run(self, inputs: list[Any]) -> Exchanged:
        from google.cloud import ces_v1

        clients = await self.source.clients()
        request = ces_v1.RunSessionRequest(config=self.config, inputs=inputs)
        log = RetryLog()

        async def attempt(budget: float) -> Any:
            return await clients.sessions.run_session(request=request, retry=None, timeout=budget)

        response = await call_with_retries(
            attempt, self.source.policy, what="RunSession", log=log, sleep=self.source.sleep
        )
        parsed = Parsed()
        for output in response.outputs:
            absorb(parsed, output)
        return Exchanged(parsed, message_dict(request), message_dict(response), log)

    async def close(self) -> None:
        return None


async def _write(call: Any, message: Any) -> None:
    """Write one message; when the server already ended the stream, raise its status
    (grpc reports a write to a finished call as INTERNAL, which would hide it)."""
    try:
        await call.write(message)
    except Exception as write_error:
        try:
            await call.read()
        except Exception as status:
            raise status from None
        raise write_error


class BidiTransport:
    """One BidiRunSession stream per episode: config first, then inputs per turn."""

    def __init__(
        self,
        source: ClientSource,
        config: Any,
        *,
        max_messages: int = 10_000,
        max_bytes: int = 16 << 20,
    ) -> None:
        self.source = source
        self.config = config
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._call: Any = None
        self.opens = 0  # streams opened so far (1 + reconnects)

    async def _open(self) -> Any:
        from google.cloud import ces_v1

        clients = await self.source.clients()
        call = await clients.sessions.bidi_run_session(retry=None, timeout=None)
        self._call = call
        await _write(call, ces_v1.BidiSessionClientMessage(config=self.config))
        self.opens += 1
        return call

    def _drop(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    async def run(self, inputs: list[Any]) -> Exchanged:
        import grpc
        from google.cloud import ces_v1

        messages = []
        for index, item in enumerate(inputs):
            item = ces_v1.SessionInput(item)
            item.will_continue = index < len(inputs) - 1
            messages.append(ces_v1.BidiSessionClientMessage(realtime_input=item))
        log = RetryLog()
        received: list[Any] = []

        async def attempt(budget: float) -> Parsed:
            del budget  # bounded by call_with_retries' per-attempt timeout
            received.clear()
            try:
                call = self._call
                if call is None:
                    call = await self._open()
                for message in messages:
                    await _write(call, message)
                parsed = Parsed()
                size = 0
                while not (parsed.turn_completed or parsed.ended):
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        raise AdapterProtocolError(
                            "ces: the session stream closed before the turn completed"
                        )
                    if undecodable(message):
                        raise undecodable_error("BidiRunSession")
                    size += type(message).pb(message).ByteSize()
                    if len(received) >= self.max_messages or size > self.max_bytes:
                        raise AdapterProtocolError(
                            f"ces: the turn did not complete within {self.max_messages} "
                            f"messages / {self.max_bytes} bytes of the session stream "
                            "(max_turn_messages / max_turn_bytes)"
                        )
                    received.append(message)
                    absorb_server_message(parsed, message)
            except BaseException:
                self._drop()
                raise
            if parsed.go_away or parsed.ended:
                self._drop()  # reconnect (go_away) or nothing more to say (ended)
            return parsed

        parsed = await call_with_retries(
            attempt,
            self.source.policy,
            what="BidiRunSession",
            log=log,
            sleep=self.source.sleep,
        )
        return Exchanged(
            parsed,
            [message_dict(m) for m in messages],
            [message_dict(m) for m in received],
            log,
        )

    async def close(self) -> None:
        call, self._call = self._call, None
        if call is None:
            return
        try:
            await call.done_writing()
        except Exception:
            pass
        call.cancel()
