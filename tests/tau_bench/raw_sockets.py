"""Raw client sockets against our servers (`tau serve`, the tool server): what a test of
their connection bounds reads and asks of a connection."""

from __future__ import annotations

import socket

SAFETY = 30.0  # seconds a socket read may block before the test gives up (never reached)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def is_open(sock: socket.socket) -> bool:
    """Whether the server still holds the connection (without waiting for it)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionError:
        return False
    finally:
        sock.setblocking(True)
        sock.settimeout(SAFETY)
