"""A Google service-account key made in the test, and a loopback OAuth token endpoint.

google.auth signs a real JWT with the generated key and posts it to the key file's
`token_uri`; the endpoint here checks the signature and answers a token (or refuses).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ACCESS_TOKEN = "ya29.fake-access-token"


class TokenServer:
    """OAuth token endpoint on 127.0.0.1; `refuse=True` answers invalid_grant."""

    def __init__(self, public_pem: bytes = b"", refuse: bool = False) -> None:
        self.public_pem = public_pem
        self.refuse = refuse
        self.claims: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                status, body = owner.answer(form)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        from google.auth import jwt

        assertion = form.get("assertion", [""])[0]
        claims = jwt.decode(assertion, certs=[self.public_pem.decode()], verify=True)
        self.claims.append(claims)
        if self.refuse:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        return 200, {"access_token": ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"}

    def __enter__(self) -> TokenServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def make_key_file(directory: Path, token_uri: str, project: str = "proj") -> tuple[Path, bytes]:
    """A service-account key file for `project` whose tokens come from `token_uri`;
    returns (path, the public key in PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    info = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "test-key-1",
        "private_key": private_pem,
        "client_email": f"tester@{project}.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    path = directory / "sa.json"
    path.write_text(json.dumps(info))
    return path, public_pem
