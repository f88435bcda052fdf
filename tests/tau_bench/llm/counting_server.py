"""A model service on 127.0.0.1 for tests that streams a long reply body, made as it is
sent, and counts the bytes it managed to send before the client hung up: a client that
reads a reply within a bound hangs up long before the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from tests.tau_bench.llm.local_http import LocalHTTPServer, QuietHandler

CHUNK = 64 * 1024

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


class CountingServer(LocalHTTPServer):
    """`with CountingServer(content_bytes, length=...) as server:` answers every POST at
    `server.base_url` with `long_chat_body(content_bytes)` (with a Content-Length, or
    ending with the connection); `server.sent` counts the body bytes sent, `server.done`
    is set when an answer ended (sent whole, or the client left)."""

    def __init__(self, content_bytes: int, *, length: bool = True) -> None:
        self.posts = 0
        self.sent = 0
        self.done = threading.Event()
        owner = self

        class Handler(QuietHandler):
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

        super().__init__(Handler)
