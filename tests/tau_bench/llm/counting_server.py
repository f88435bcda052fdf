"""A model service on 127.0.0.1 for tests that streams a long reply body, made as it is
sent, and counts the bytes it managed to send before the client hung up: a client that
reads a reply within a bound hangs up long before the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHUNK = 64 * 1024
STOP_DEADLINE = 10.0  # seconds to stop

_HEAD = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"'
_TAIL = b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'


def long_chat_body(content_bytes: int) -> Iterator[bytes]:
    """A chat completion whose content is `content_bytes` of "x", in `CHUNK`-byte pieces,
    made as they are sent (never held whole)."""
    yield _HEAD
    piece = b"x" * CHUNK
    for _ in range(content_bytes // CHUNK):
        yield piece
    yield b"x" * (content_bytes % CHUNK)
    yield _TAIL


def body_size(content_bytes: int) -> int:
    """The length of `long_chat_body(content_bytes)`."""
    return len(_HEAD) + content_bytes + len(_TAIL)


class CountingServer:
    """`with CountingServer(content_bytes, length=...) as server:` answers every POST at
    `server.base_url` with `long_chat_body(content_bytes)` (with a Content-Length, or
    ending with the connection); `server.sent` counts the body bytes sent, `server.done`
    is set when an answer ended (sent whole, or the client left)."""

    def __init__(self, content_bytes: int, *, length: bool = True) -> None:
        self.posts = 0
        self.sent = 0
        self.done = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                try:
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    owner.posts += 1
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if length:
                        self.send_header("Content-Length", str(body_size(content_bytes)))
                    else:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in long_chat_body(content_bytes):
                        self.wfile.write(chunk)
                        owner.sent += len(chunk)
                except OSError:  # the client left
                    self.close_connection = True
                finally:
                    owner.done.set()
                self.close_connection = self.close_connection or not length

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> CountingServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(STOP_DEADLINE)
