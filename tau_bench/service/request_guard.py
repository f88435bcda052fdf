"""Who may call `tau serve`, checked before any route: the bearer token, JSON bodies, and
with `--no-auth` nothing a web page could send.

A pure ASGI middleware, so it answers before routing: a request without the token gets
its 401 whatever the path or method (never a 405 or a redirect that says which routes
exist), and a refused body is not read.

* **Token.** Every path but `/health` needs `Authorization: Bearer <token>` (compared in
  constant time); else `401` with `WWW-Authenticate: Bearer`.
* **JSON bodies.** A `POST` that carries a body (or names a content type) must say
  `Content-Type: application/json`; else `415`. A web page can send `text/plain`,
  form and multipart bodies to any address without asking (a "simple" request), but
  not JSON: that needs a CORS preflight, which this server never approves.
* **`--no-auth` (no token).** Then anything a browser on the same machine runs could
  call the API, so: the `Host` must be a loopback name (`localhost`, `127.0.0.1`,
  `[::1]`, any port), else `421` — a DNS-rebinding page reaches the server under its
  own host name and is refused; and a request a browser marks as coming from another
  site (`Sec-Fetch-Site: cross-site`/`same-site`, or an `Origin` that is not a
  loopback one) is `403` — a plain `<img src=".../scores?model=...">` or a form
  posted by another page must not start a run on the operator's keys.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PUBLIC_PATHS", "RequestGuard", "loopback_host"]

PUBLIC_PATHS = frozenset({"/health"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_JSON = "application/json"


def loopback_host(host: str) -> bool:
    """`host` (a Host header: name or address, optional `:port`) names this machine's
    loopback interface."""
    text = host.strip().lower()
    if text.startswith("["):  # [::1]:8000
        name, _, rest = text[1:].partition("]")
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return False
    else:
        name, sep, port = text.partition(":")
        if sep and not port.isdigit():
            return False
    return name.rstrip(".") in _LOOPBACK_NAMES


def _loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and loopback_host(parts.netloc)


def _error(
    status: int, detail: str, field: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"detail": f"{field}: {detail}", "field": field}, status, headers=headers)


class RequestGuard:
    """The checks above; `token=None` is `--no-auth`."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._expected = token.encode("ascii") if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self._refusal(scope)
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            name = key.decode("latin-1").lower()
            headers.setdefault(name, value.decode("latin-1"))
        public = scope.get("path") in PUBLIC_PATHS
        if self._expected is None:
            host = headers.get("host")
            if host is not None and not loopback_host(host):
                return _error(
                    421,
                    "this server has no authentication (--no-auth) and answers only requests "
                    "to localhost, 127.0.0.1 or [::1]",
                    "host",
                )
            if not public and self._cross_site(headers):
                return _error(
                    403,
                    "a request from another site (a web page) is refused: this server has "
                    "no authentication (--no-auth)",
                    "origin",
                )
        elif not public and not self._authorized(headers.get("authorization", "")):
            return JSONResponse(
                {"detail": "missing or invalid bearer token"},
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if scope.get("method") == "POST" and self._has_body(headers):
            media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if media != _JSON:
                return _error(
                    415, f"send the body as {_JSON} (Content-Type: {_JSON})", "content-type"
                )
        return None

    def _authorized(self, authorization: str) -> bool:
        scheme, _, value = authorization.partition(" ")
        given = value.strip().encode("latin-1")
        return scheme.lower() == "bearer" and secrets.compare_digest(given, self._expected or b"")

    @staticmethod
    def _cross_site(headers: dict[str, str]) -> bool:
        if headers.get("sec-fetch-site", "").strip().lower() in ("cross-site", "same-site"):
            return True
        origin = headers.get("origin")
        return origin is not None and not _loopback_origin(origin)

    @staticmethod
    def _has_body(headers: dict[str, str]) -> bool:
        length = headers.get("content-length", "").strip()
        return (
            "content-type" in headers
            or "transfer-encoding" in headers
            or (bool(length) and length != "0")
        )
