"""A real local stand-in for raw.githubusercontent.com, for `tau data pull` in a subprocess.

`LocalUpstream` listens on 127.0.0.1. A client that talks to it as an HTTPS proxy
(`HTTPS_PROXY`, which httpx honours) gets its CONNECT to raw.githubusercontent.com:443
answered here, over TLS with a certificate of a test CA (`SSL_CERT_FILE`); a plain HTTP
request (`http://127.0.0.1:<port>/<path>`) is answered the same way. Nothing leaves the
machine. `env()` is the environment for the subprocess.

What each request gets is up to `answer(server, path, conn)`, called with the path after
`/<owner>/<repo>/<commit>/` (or the whole path of a plain request) and the connection.
"""

from __future__ import annotations

import datetime
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "raw.githubusercontent.com"

Answer = Callable[["LocalUpstream", str, socket.socket], None]


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) files for `HOST`."""
    now = datetime.datetime.now(datetime.UTC)
    validity = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tau test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def _read_head(conn: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("closed before the request ended")
        head += chunk
    return head


class LocalUpstream:
    """The server; `requests` lists the paths asked for, `connected` is set at the first
    request (a CONNECT counts: the client is then inside its download)."""

    def __init__(self, directory: Path, answer: Answer) -> None:
        self.ca, cert, key = _certificates(directory)
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(cert, key)
        self._answer = answer
        self.requests: list[str] = []
        self.connected = threading.Event()
        self.stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment of a subprocess that downloads through this server only."""
        env = {k: v for k, v in os.environ.items() if k.lower() not in {"no_proxy", "all_proxy"}}
        env.update(
            HTTPS_PROXY=self.base,
            HTTP_PROXY=self.base,
            SSL_CERT_FILE=str(self.ca),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        env.pop("SSL_CERT_DIR", None)
        return env

    def serve(self) -> None:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        """Stop: wake every thread (a blocked accept or send included) and wait for it."""
        self.stop.set()
        for sock in (self._sock, *self._conns):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected (any more)
            sock.close()
        for thread in self._threads:
            thread.join(timeout=60)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _handle(self, conn: socket.socket) -> None:
        try:
            head = _read_head(conn)
            method, target = head.split(b" ", 2)[:2]
            if method == b"CONNECT":
                self.connected.set()
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                conn = self._tls.wrap_socket(conn, server_side=True)
                self._conns.append(conn)
                head = _read_head(conn)
                target = head.split(b" ", 2)[1]
            path = target.decode("ascii").lstrip("/")
            parts = path.split("/", 3)
            if len(parts) == 4 and len(parts[2]) == 40:  # /<owner>/<repo>/<commit>/<path>
                path = parts[3]
            self.requests.append(path)
            self.connected.set()
            self._answer(self, path, conn)
        except (OSError, ValueError, ssl.SSLError):
            pass  # the client went away: what these tests provoke
        finally:
            conn.close()


def send_file(conn: socket.socket, body: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


def send_not_found(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


def send_unbounded(conn: socket.socket, total: int, stop: threading.Event) -> None:
    """A 200 with no length: `total` bytes, then the connection closes (a server that
    sends more than the file, as long as the client keeps reading)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
    chunk = b"x" * 65536
    sent = 0
    while sent < total and not stop.is_set():
        conn.sendall(chunk)
        sent += len(chunk)


@contextmanager
def local_upstream(directory: Path, answer: Answer) -> Iterator[LocalUpstream]:
    server = LocalUpstream(directory, answer)
    server.serve()
    try:
        yield server
    finally:
        server.close()
