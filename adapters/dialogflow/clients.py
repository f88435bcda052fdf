"""Make the asyncio gRPC clients: the real service (TLS + Google credentials) or an
emulator (plain-text channel, no credentials at all).

The client library has no emulator mode, so for an emulator we build the
`…GrpcAsyncIOTransport` around our own `grpc.aio.insecure_channel`; with a channel given,
the library ignores credentials and never looks for ADC. aio channels belong to the event
loop that is running when they are created, so call these from inside that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.dialogflow.config import DialogflowConfig
from tau_adapters.credentials_file import read_credentials_json
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import AdapterAuthError, AdapterConfigError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
SERVICES = ("sessions", "tools", "playbooks", "agents")
MAX_TOKENS = 256  # tokens kept for masking (one per refresh: about one an hour)


class SeenTokens:
    """Every bearer token the credentials sent (thread-safe: gRPC asks the credentials
    for metadata on its own threads), newest last, at most `MAX_TOKENS`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: list[str] = []

    def add(self, token: str) -> None:
        token = token.strip()
        if not token:
            return
        with self._lock:
            if token in self._tokens:
                return
            self._tokens.append(token)
            del self._tokens[:-MAX_TOKENS]

    def __iter__(self) -> Any:
        with self._lock:
            return iter(list(self._tokens))

    def __len__(self) -> int:
        with self._lock:
            return len(self._tokens)


def _channel_security() -> Any:
    """Transport security of the real service's channel (TLS with the system roots, or
    GRPC_DEFAULT_SSL_ROOTS_FILE_PATH's)."""
    import grpc

    return grpc.ssl_channel_credentials()


def _watching_plugin(inner: Any, seen: Callable[[str], None]) -> Any:
    """A gRPC auth-metadata plugin passing `inner`'s metadata on, noting the bearer token."""
    import grpc

    class Watching(grpc.AuthMetadataPlugin):  # type: ignore[misc]
        def __call__(self, context: Any, callback: Any) -> None:
            def watched(metadata: Any, error: Any) -> None:
                for key, value in metadata or ():
                    if str(key).lower() == "authorization":
                        scheme, _, token = str(value).partition(" ")
                        seen(token if token else scheme)
                callback(metadata, error)

            inner(context, watched)

    return Watching()


def _classes(service: str) -> tuple[Any, Any]:
    """(AsyncClient class, GrpcAsyncIOTransport class) of a v3beta1 service."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    if service == "sessions":
        from google.cloud.dialogflowcx_v3beta1.services.sessions.transports import (
            SessionsGrpcAsyncIOTransport,
        )

        return cx.SessionsAsyncClient, SessionsGrpcAsyncIOTransport
    if service == "tools":
        from google.cloud.dialogflowcx_v3beta1.services.tools.transports import (
            ToolsGrpcAsyncIOTransport,
        )

        return cx.ToolsAsyncClient, ToolsGrpcAsyncIOTransport
    if service == "playbooks":
        from google.cloud.dialogflowcx_v3beta1.services.playbooks.transports import (
            PlaybooksGrpcAsyncIOTransport,
        )

        return cx.PlaybooksAsyncClient, PlaybooksGrpcAsyncIOTransport
    if service == "agents":
        from google.cloud.dialogflowcx_v3beta1.services.agents.transports import (
            AgentsGrpcAsyncIOTransport,
        )

        return cx.AgentsAsyncClient, AgentsGrpcAsyncIOTransport
    raise ValueError(f"unknown service {service!r}")


CREDENTIAL_TYPES = (
    "service_account",
    "authorized_user",
    "external_account",
    "external_account_authorized_user",
    "impersonated_service_account",
)


def load_credentials(config: DialogflowConfig) -> Any:
    """Credentials from the configured file, or None (then ADC, which reads the same
    kinds of file from GOOGLE_APPLICATION_CREDENTIALS or gcloud's ADC path, or asks the
    metadata server). Every file type google.auth knows is accepted: a service-account
    key, ADC user credentials (`gcloud auth application-default login`), an external
    account (workload identity federation), impersonation. Loading makes no call."""
    if not config.credentials_file:
        return None
    import google.auth
    from google.auth import exceptions as auth_exceptions

    path = config.credentials_file
    info = read_credentials_json(path, "dialogflow")
    try:
        if info.get("type") == "external_account":
            credentials = _external_account(info)
            if config.quota_project_id:
                credentials = credentials.with_quota_project(config.quota_project_id)
        else:
            credentials, _ = google.auth.load_credentials_from_file(
                config.credentials_file,
                scopes=list(SCOPES),
                quota_project_id=config.quota_project_id,
            )
    except (
        auth_exceptions.GoogleAuthError,
        ValueError,
        KeyError,
        OSError,
        TypeError,
        AttributeError,
        RecursionError,
    ) as exc:
        # The library's messages name missing fields, never key material; still, keep
        # only the exception type so nothing from the file can leak into logs. A file
        # of the wrong shape (a list, a string where an object belongs) makes the
        # library fail with TypeError/AttributeError: the same one line.
        raise AdapterConfigError(
            f"dialogflow: {printable(path)} is not a usable Google credentials file "
            f"(expected one of: {', '.join(CREDENTIAL_TYPES)}; {type(exc).__name__})"
        ) from None
    return credentials


def _external_account(info: dict[str, Any]) -> Any:
    """Workload identity federation credentials, built without the project-id lookup
    google.auth's loader makes (a token exchange: a network call at load time)."""
    from google.auth import aws, identity_pool, pluggable

    source = info.get("credential_source") or {}
    if not isinstance(source, dict):
        raise TypeError("credential_source is not an object")
    if str(source.get("environment_id", "")).startswith("aws"):
        return aws.Credentials.from_info(info, scopes=list(SCOPES))
    if "executable" in source:
        return pluggable.Credentials.from_info(info, scopes=list(SCOPES))
    return identity_pool.Credentials.from_info(info, scopes=list(SCOPES))


def _default_credentials(config: DialogflowConfig) -> Any:
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        credentials, _ = google.auth.default(
            scopes=list(SCOPES), quota_project_id=config.quota_project_id
        )
    except auth_exceptions.DefaultCredentialsError:
        raise AdapterAuthError(
            "dialogflow: no Google credentials found: run `gcloud auth application-default "
            "login`, set GOOGLE_APPLICATION_CREDENTIALS, or pass --gcp-sa-file "
            "(or use --emulator for a local rehearsal)"
        ) from None
    return credentials


@dataclass
class Clients:
    """One asyncio client per service, sharing credentials; `close` releases channels."""

    sessions: Any
    tools: Any
    playbooks: Any
    agents: Any
    loop: asyncio.AbstractEventLoop
    tokens: SeenTokens = field(default_factory=SeenTokens)

    async def close(self) -> None:
        for client in (self.sessions, self.tools, self.playbooks, self.agents):
            try:
                await client.transport.close()
            except Exception:
                pass


def channel_options(config: DialogflowConfig) -> list[tuple[str, int]]:
    """gRPC channel options: an answer over `max_response_mb` is refused by the client
    (RESOURCE_EXHAUSTED "Received message larger than max", a protocol error)."""
    return [
        ("grpc.max_send_message_length", -1),
        ("grpc.max_receive_message_length", config.max_response_bytes),
    ]


def make_client(
    service: str,
    config: DialogflowConfig,
    credentials: Any = None,
    tokens: SeenTokens | None = None,
) -> Any:
    """One async client of `service` for `config` (must run inside the event loop);
    the bearer tokens its requests carry are added to `tokens`."""
    client_cls, transport_cls = _classes(service)
    if config.emulator:
        import grpc

        plain = grpc.aio.insecure_channel(config.emulator, options=channel_options(config))
        return client_cls(transport=transport_cls(channel=plain))
    from google.api_core.client_options import ClientOptions

    seen = tokens if tokens is not None else SeenTokens()

    def channel(host: str, *, credentials: Any = None, **kwargs: Any) -> Any:
        """The transport's channel (what `create_channel` makes), bounded and watched."""
        import google.auth.credentials
        import google.auth.transport.grpc
        import google.auth.transport.requests
        import grpc

        creds = google.auth.credentials.with_scopes_if_required(
            credentials, scopes=kwargs.get("scopes"), default_scopes=list(SCOPES)
        )
        quota_project = kwargs.get("quota_project_id")
        if quota_project and isinstance(creds, google.auth.credentials.CredentialsWithQuotaProject):
            creds = creds.with_quota_project(quota_project)
        plugin = google.auth.transport.grpc.AuthMetadataPlugin(
            creds,
            google.auth.transport.requests.Request(),
            default_host=transport_cls.DEFAULT_HOST,
            suppress_metrics_header=True,
        )
        security = kwargs.get("ssl_credentials") or _channel_security()
        composite = grpc.composite_channel_credentials(
            security, grpc.metadata_call_credentials(_watching_plugin(plugin, seen.add))
        )
        return grpc.aio.secure_channel(host, composite, options=channel_options(config))

    def transport(**kwargs: Any) -> Any:
        return transport_cls(channel=channel, **kwargs)

    options = ClientOptions(api_endpoint=config.api_endpoint)
    if config.quota_project_id:
        options.quota_project_id = config.quota_project_id
    return client_cls(credentials=credentials, client_options=options, transport=transport)


async def make_clients(config: DialogflowConfig, tokens: SeenTokens | None = None) -> Clients:
    """All four clients, created in the running loop. Credentials are resolved once;
    every bearer token sent is added to `tokens` (to be masked)."""
    loop = asyncio.get_running_loop()
    credentials = None
    if not config.emulator:
        credentials = load_credentials(config)
        if credentials is None:
            # ADC may consult the metadata server: keep the loop free meanwhile.
            credentials = await asyncio.to_thread(_default_credentials, config)
    seen = tokens if tokens is not None else SeenTokens()
    made = {s: make_client(s, config, credentials, seen) for s in SERVICES}
    return Clients(loop=loop, tokens=seen, **made)
