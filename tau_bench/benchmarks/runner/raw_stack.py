"""The "raw" stack: a minimal agent and user on bare asyncio connections to the fake
server, so that the runner, loop, env, scoring and logging are measured without a model
client's cost."""

from __future__ import annotations

import asyncio
import json
from typing import Any


class LeanConnection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: just enough client for
    the fake server (JSON POST, Content-Length responses)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        headers = await self.reader.readuntil(b"\r\n\r\n")
        status = int(headers.split(b" ", 2)[1])
        length = 0
        for line in headers.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        data = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"fake server answered {status}")
        return dict(json.loads(data))

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class RawStack:
    """A minimal agent and user on bare asyncio connections to the fake server: the
    runner, loop, env, scoring and logging without a model client's cost."""

    path = "/v1/chat/completions"

    def __init__(self, base: str) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)

    async def post(self, conn: LeanConnection, body: dict[str, Any]) -> dict[str, Any]:
        reply = await conn.post_json(self.path, body)
        return dict(reply["choices"][0]["message"])

    def connection(self) -> LeanConnection:
        return LeanConnection(self.host, self.port)

    def provider(self) -> Any:
        from tau_adapters.registry import SimpleProvider

        return SimpleProvider(lambda: RawAgent(self))

    def user(self) -> Any:
        return RawUser(self)


class RawAgent:
    def __init__(self, stack: RawStack) -> None:
        self.stack = stack
        self.conn = stack.connection()
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    async def start(self, session: Any) -> None:
        self.tools = session.tools
        self.messages = [{"role": "system", "content": session.policy}]

    async def send(self, turn: Any) -> Any:
        from tau_adapters.protocol import AgentTurn, ToolCall, UserTurn

        if isinstance(turn, UserTurn):
            self.messages.append({"role": "user", "content": turn.text})
        else:
            for r in turn.results:
                self.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "name": r.name,
                        "content": r.content,
                    }
                )
        body = {"model": "raw-agent", "messages": self.messages, "tools": self.tools}
        message = await self.stack.post(self.conn, body)
        self.messages.append(message)
        calls = [
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        text = message.get("content") or ""
        return AgentTurn(messages=[text] if text else [], tool_calls=calls)

    async def close(self) -> None:
        await self.conn.close()


class RawUser:
    def __init__(self, stack: RawStack) -> None:
        from tau_adapters.protocol import Usage

        self.stack = stack
        self.conn = stack.connection()
        self.messages: list[dict[str, Any]] = []
        self._usage = Usage()

    @property
    def usage(self) -> Any:
        return self._usage

    async def start(self, instruction: str) -> str:
        self.messages = [{"role": "system", "content": instruction}]
        return await self.reply("Hi! How can I help you today?")

    async def reply(self, agent_message: str) -> str:
        self.messages.append({"role": "user", "content": agent_message})
        body = {"model": "raw-user", "messages": self.messages}
        message = await self.stack.post(self.conn, body)
        text = str(message["content"])
        self.messages.append({"role": "assistant", "content": text})
        if "###STOP###" in text:  # the user's last turn: nothing else will be sent
            await self.conn.close()
        return text
