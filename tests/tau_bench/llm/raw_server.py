"""A hostile OpenAI-compatible server on 127.0.0.1 for tests: it answers chosen bytes
(gzip bombs, bodies that never end, replies of the wrong shape), which the well-behaved
fake (`tau_bench.fakes.openai_server`) cannot send."""

from __future__ import annotations

import functools
import json
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.tau_bench.llm.local_http import LocalHTTPServer, QuietHandler

DRIP_PAUSE = 0.05  # seconds between the bytes of a reply that never ends


@dataclass
class Raw:
    """One answer: status, headers and body; `drip` sends the headers, then one byte per
    `DRIP_PAUSE` until the client leaves or the server stops (no Content-Length)."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drip: bool = False
    length: bool = True  # send a Content-Length (else the body ends with the connection)


def chat(**message: Any) -> dict[str, Any]:
    """A well-formed chat completion whose message has `message`'s fields."""
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def as_json(data: Any) -> Raw:
    """`data` as a JSON answer (NaN and Infinity written as Python writes them)."""
    return Raw(json.dumps(data).encode(), headers={"Content-Type": "application/json"})


@functools.lru_cache(maxsize=4)
def gzip_bomb(decoded_mib: int) -> Raw:
    """A chat completion whose content is `decoded_mib` MiB of "A", gzip-compressed
    (about 1 KiB per MiB), made without ever holding the decoded body."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"choices":[{"index":0,"message":{"role":"assistant","content":"')]
    mebibyte = b"A" * (1 << 20)
    parts += [packer.compress(mebibyte) for _ in range(decoded_mib)]
    parts += [packer.compress(b'"}}]}'), packer.flush()]
    return Raw(
        b"".join(parts),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )


class RawServer(LocalHTTPServer):
    """`with RawServer(answer) as server:` serves `answer()` to every POST at
    `server.base_url` (over TLS with `tls`, a server context); `server.posts` counts the
    requests answered, `server.headers` holds each one's headers."""

    def __init__(self, answer: Callable[[], Raw], tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.posts = 0
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.posts += 1
                owner.headers.append(dict(self.headers.items()))
                raw = owner.answer()
                self.send_response(raw.status)
                for key, value in raw.headers.items():
                    self.send_header(key, value)
                if raw.length and not raw.drip:
                    self.send_header("Content-Length", str(len(raw.body)))
                else:
                    self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(raw.body)
                    while raw.drip and not owner.stopping.wait(DRIP_PAUSE):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:  # the client left
                    return
                self.close_connection = not raw.length

        super().__init__(Handler, tls)
