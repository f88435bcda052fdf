"""A forward HTTP proxy on 127.0.0.1 for tests: it answers requests in absolute form
(`POST http://host:port/path`) and opens tunnels (`CONNECT host:port`, for HTTPS),
forwarding them to the address its `routes` give the host (so a test can name a host
only the proxy knows), and records what it saw."""

from __future__ import annotations

import http.client
import select
import socket
import urllib.parse

from tests.tau_bench.llm.local_http import LocalHTTPServer, QuietHandler

FORWARD_DEADLINE = 30.0  # seconds a forwarded exchange, or a tunnel's silence, may take


class ForwardProxy(LocalHTTPServer):
    """`with ForwardProxy({"model.invalid": ("127.0.0.1", port)}) as proxy:` forwards to
    `port` what is asked of `model.invalid`; `proxy.seen` holds each request line and its
    `Proxy-Authorization` header (or None)."""

    def __init__(self, routes: dict[str, tuple[str, int]]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str | None]] = []
        owner = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                owner.seen.append((self.requestline, self.headers.get("Proxy-Authorization")))
                target = urllib.parse.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                route = owner.routes.get(target.hostname or "")
                if route is None:
                    self.send_error(502, "no route")
                    return
                upstream = http.client.HTTPConnection(*route, timeout=FORWARD_DEADLINE)
                try:
                    headers = {
                        k: v for k, v in self.headers.items() if k.lower() != "proxy-authorization"
                    }
                    path = target.path + (f"?{target.query}" if target.query else "")
                    upstream.request("POST", path, body=body, headers=headers)
                    reply = upstream.getresponse()
                    data = reply.read()
                finally:
                    upstream.close()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_CONNECT(self) -> None:
                owner.seen.append((self.requestline, self.headers.get("Proxy-Authorization")))
                host, _, port = self.path.rpartition(":")
                route = owner.routes.get(host)
                if route is None or not port.isdigit():
                    self.send_error(502, "no route")
                    return
                upstream = socket.create_connection(route, timeout=FORWARD_DEADLINE)
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                _tunnel(self.connection, upstream)
                self.close_connection = True

        super().__init__(Handler)


def _tunnel(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes or both are silent too long."""
    with upstream:
        sockets = [client, upstream]
        while True:
            ready, _, _ = select.select(sockets, [], [], FORWARD_DEADLINE)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
