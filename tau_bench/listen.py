"""Where a local server of ours (the gRPC emulators) listens, checked before it binds.

Why: grpc's C core, given a host it cannot resolve or an empty one, first logs a line of
its own on stderr (`E1129 ... add_port.cc:83] Failed to add port ...`) and then fails
with a message pointing at GRPC_VERBOSITY. Resolved here first, a bad `--host` is one
line naming it."""

from __future__ import annotations

import socket


def grpc_listen_address(host: str, port: int) -> str:
    """`host:port` as grpc's `add_insecure_port` takes it (an IPv6 address bracketed),
    once the system has resolved `host`; an OSError saying why not otherwise."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not name:
        raise OSError("no host given (--host 0.0.0.0 for every interface)")
    try:
        socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else "not a host name"
        raise OSError(f"{reason or exc}: {name!r}") from None
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host:port` and listening, for a uvicorn server to serve on:
    bound before anything is announced, so a port in use or a host that does not resolve
    is an OSError naming why (one line for the CLI), and port 0's real port is known."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto
    # says TCP; without it every response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except UnicodeError:  # a host name past DNS's label length
        sock.close()
        raise OSError(f"not a host name: {host[:100]!r}") from None
    except BaseException:
        sock.close()
        raise
    return sock


def http_url(host: str, sock: socket.socket) -> str:
    """The URL a server on `sock` answers at (an IPv6 host bracketed)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}"
