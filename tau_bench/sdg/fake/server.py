"""An OpenAI-compatible chat completions endpoint on 127.0.0.1 serving a fake model.

For the throughput benchmark and end-to-end tests: a real HTTP server (uvicorn, in a
thread) that answers `POST /v1/chat/completions` after a fixed latency, as a hosted model
would. The listening socket is bound before the thread starts, so the server is reachable
as soon as the constructor returns (connections wait in the backlog).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

Responder = Callable[[Sequence[dict[str, Any]]], str]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def build_app(respond: Responder, latency: float) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    ids = itertools.count(1)

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        if latency > 0:
            await asyncio.sleep(latency)  # the simulated model's thinking time
        text = respond(body.get("messages", []))
        prompt = _tokens(json.dumps(body))
        completion = _tokens(text)
        return JSONResponse(
            {
                "id": f"chatcmpl-fake-{next(ids)}",
                "object": "chat.completion",
                "created": 1700000000,
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


class FakeModelServer:
    """`with FakeModelServer(model.reply, latency=0.5) as server: server.base_url`."""

    def __init__(self, respond: Responder, *, latency: float = 0.0) -> None:
        import uvicorn

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(256)
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            build_app(respond, latency), log_level="warning", access_log=False, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
