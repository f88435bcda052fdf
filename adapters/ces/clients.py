"""Make the asyncio CES clients: the real service (TLS + Google credentials) or an
emulator (plain-text channel, no credentials).

Credentials are google.auth's business: a file goes to `google.auth.load_credentials_from_file`
(service-account keys, authorized-user files, external-account / workload-identity
configs, impersonation), no file means Application Default Credentials. We never read
key material ourselves, and errors name only the file and the exception type.

aio channels belong to the event loop running when they are made: call `make_clients`
inside that loop.

Bounds: a credentials file larger than 1 MiB is refused unread (`tau_adapters.credentials_file`); every
channel accepts messages up to `max_response_bytes` (the client library's own channels
accept any size). The real-service channel is built here (TLS + google.auth's metadata
plugin, as the library does) so that the access tokens it sends are known: they are
recorded in a `TokenLog`, and the provider masks them wherever they reappear.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.ces.options import Options
from tau_adapters.credentials_file import read_credentials_json
from tau_adapters.protocol import AdapterAuthError, AdapterConfigError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
MAX_TOKENS = 64


class TokenLog:
    """The access tokens the channels sent (the most recent `MAX_TOKENS`): secrets to mask.
    Written from gRPC's metadata-plugin threads, read by the provider."""

    def __init__(self) -> None:
        self._tokens: list[str] = []
        self._lock = threading.Lock()

    def add(self, authorization: str) -> None:
        """Learn the token of an `authorization` header value (`Bearer <token>`)."""
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip() if token else scheme
        if not token:
            return
        with self._lock:
            if token in self._tokens:
                return
            self._tokens = [*self._tokens, token][-MAX_TOKENS:]

    @property
    def tokens(self) -> list[str]:
        with self._lock:
            return list(self._tokens)


def load_credentials(options: Options) -> Any:
    """Credentials from `credentials_file` (any type google.auth knows), else None.
    May use the network (external accounts): call it off the event loop."""
    if not options.credentials_file:
        return None
    import google.auth
    import google.auth.credentials
    from google.auth import exceptions as auth_exceptions

    info = read_credentials_json(options.credentials_file, "ces")
    try:
        # Scopes are added afterwards: with scopes, google.auth looks the project of an
        # external account up over the network while loading; without, it does not.
        credentials, _ = google.auth.load_credentials_from_dict(
            info, quota_project_id=options.quota_project_id
        )
        credentials = google.auth.credentials.with_scopes_if_required(credentials, list(SCOPES))
    except (auth_exceptions.TransportError, auth_exceptions.RefreshError) as exc:
        # External-account files are exchanged for a token while loading (STS).
        raise AdapterAuthError(
            f"ces: could not obtain a token with {options.credentials_file} ({type(exc).__name__})"
        ) from None
    except (
        auth_exceptions.GoogleAuthError,
        ValueError,
        KeyError,
        OSError,
        AttributeError,
        TypeError,
        RecursionError,
    ) as exc:
        # A file of the wrong shape (`credential_source` a string...) trips google.auth
        # on attribute or type errors.
        # google.auth's messages may quote the file; keep only the type.
        raise AdapterConfigError(
            f"ces: {options.credentials_file} is not a usable Google credentials file "
            f"({type(exc).__name__})"
        ) from None
    return credentials


def default_credentials(options: Options) -> Any:
    """Application Default Credentials (may consult the metadata server: run in a thread)."""
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        credentials, _ = google.auth.default(
            scopes=list(SCOPES), quota_project_id=options.quota_project_id
        )
    except auth_exceptions.DefaultCredentialsError:
        raise AdapterAuthError(
            "ces: no Google credentials found: run `gcloud auth application-default login`, "
            "set GOOGLE_APPLICATION_CREDENTIALS, or pass --gcp-sa-file "
            "(or --emulator for a local rehearsal)"
        ) from None
    return credentials


@dataclass
class Clients:
    """The session and agent (apps, agents, tools) clients, sharing one channel setup."""

    sessions: Any
    agents: Any
    loop: asyncio.AbstractEventLoop
    tokens: TokenLog = field(default_factory=TokenLog)

    async def close(self) -> None:
        for client in (self.sessions, self.agents):
            try:
                await client.transport.close()
            except Exception:
                pass


def channel_options(options: Options) -> list[tuple[str, int]]:
    return [("grpc.max_receive_message_length", options.max_response_bytes)]


def ssl_credentials() -> Any:
    """The TLS credentials of the real-service channel (the system's roots)."""
    import grpc

    return grpc.ssl_channel_credentials()


def _authorized_channel(
    options: Options, tokens: TokenLog, default_host: str
) -> Callable[..., Any]:
    """A channel factory for a GAPIC transport: TLS plus google.auth's metadata plugin
    (what the library builds), recording each token sent, with our message-size bound."""

    def make(host: str, *, credentials: Any, **_: Any) -> Any:
        import grpc
        from google.auth.transport import grpc as auth_grpc
        from google.auth.transport import requests as auth_requests

        class RecordingPlugin(auth_grpc.AuthMetadataPlugin):  # type: ignore[misc]
            def __call__(self, context: Any, callback: Any) -> None:
                def recorded(metadata: Any, error: Any) -> None:
                    for key, value in metadata or ():
                        if str(key).lower() == "authorization":
                            tokens.add(str(value))
                    callback(metadata, error)

                super().__call__(context, recorded)

        plugin = RecordingPlugin(credentials, auth_requests.Request(), default_host=default_host)
        channel_credentials = grpc.composite_channel_credentials(
            ssl_credentials(), grpc.metadata_call_credentials(plugin)
        )
        return grpc.aio.secure_channel(host, channel_credentials, options=channel_options(options))

    return make


def _client(kind: str, options: Options, credentials: Any, tokens: TokenLog) -> Any:
    from google.cloud import ces_v1

    if kind == "sessions":
        from google.cloud.ces_v1.services.session_service.transports import (
            SessionServiceGrpcAsyncIOTransport,
        )

        client_cls: Any = ces_v1.SessionServiceAsyncClient
        transport_cls: Any = SessionServiceGrpcAsyncIOTransport
    else:
        from google.cloud.ces_v1.services.agent_service.transports import (
            AgentServiceGrpcAsyncIOTransport,
        )

        client_cls = ces_v1.AgentServiceAsyncClient
        transport_cls = AgentServiceGrpcAsyncIOTransport
    if options.emulator:
        import grpc

        channel = grpc.aio.insecure_channel(options.emulator, options=channel_options(options))
        return client_cls(transport=transport_cls(channel=channel))
    # Credentials carry the quota project already (they were loaded with it). Service
    # accounts sign their own JWTs, as the client library has them do by default.
    transport = transport_cls(
        host=options.endpoint,
        credentials=credentials,
        channel=_authorized_channel(options, tokens, transport_cls.DEFAULT_HOST),
        always_use_jwt_access=True,
    )
    return client_cls(transport=transport)


async def make_clients(options: Options, tokens: TokenLog | None = None) -> Clients:
    """Both clients, in the running loop; credentials resolved once. The access tokens
    the channels send are recorded in `tokens`."""
    loop = asyncio.get_running_loop()
    credentials = None
    if not options.emulator:
        credentials = await asyncio.to_thread(load_credentials, options)
        if credentials is None:
            credentials = await asyncio.to_thread(default_credentials, options)
    tokens = tokens if tokens is not None else TokenLog()
    return Clients(
        sessions=_client("sessions", options, credentials, tokens),
        agents=_client("agents", options, credentials, tokens),
        loop=loop,
        tokens=tokens,
    )
