"""The base of this folder's test servers: a threaded HTTP server on 127.0.0.1 (over TLS
when given a server context), serving for the length of a `with` block."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

STOP_DEADLINE = 10.0  # seconds to stop


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 (keep-alive) and no access log on stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return None


class LocalHTTPServer:
    """Serves `handler` on a free port of 127.0.0.1 from `__enter__` to `__exit__`;
    `stopping` is set first when it stops (handlers that stream wait on it)."""

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
    ) -> None:
        self.tls = tls
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL an OpenAI client is given (`/v1`)."""
        return f"{self.url}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(STOP_DEADLINE)
