"""A real OpenAI-compatible HTTP server on 127.0.0.1 (ephemeral port) backed by FakeLLM.

For end-to-end runs through the CLI: no respx, litellm talks HTTP to a socket, as it
would to vLLM started with `--api-base`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

import httpx

from tests.tau_bench.agents.fake_llm import FakeLLM


@contextmanager
def openai_compatible_server(fake: FakeLLM) -> Iterator[str]:
    """Serve `fake` at `http://127.0.0.1:<port>/v1`; yields that base URL."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            address = cast(tuple[str, int], self.server.server_address)
            url = f"http://127.0.0.1:{address[1]}{self.path}"
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            request = httpx.Request("POST", url, headers=dict(self.headers), content=body)
            with lock:  # the brain and the request log are not thread-safe
                response = fake.handle_openai(request)
            payload = response.content
            self.send_response(response.status_code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
