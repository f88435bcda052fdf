"""gRPC status plumbing of the Dialogflow emulator: the failure a handler raises, the
aborts that carry Google's rich error details, and session-name parsing.

Shared by the services (which abort calls) and the session logic (which raises).
"""

from __future__ import annotations

import grpc

PACKAGE = "google.cloud.dialogflow.cx.v3beta1"
_SESSION_PARTS = 8  # projects/P/locations/L/agents/A/sessions/S


class RpcFailure(Exception):
    """End the current call with `code` (a grpc.StatusCode name) and `message`."""

    def __init__(self, code: str, message: str, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_delay = retry_delay


def status_details(code: grpc.StatusCode, message: str, retry_delay: float | None) -> bytes:
    """A serialized google.rpc.Status carrying a RetryInfo (the `-bin` trailer)."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status(code=code.value[0], message=message)
    if retry_delay is not None:
        seconds = int(retry_delay)
        info = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(
                seconds=seconds, nanos=round((retry_delay - seconds) * 1e9)
            )
        )
        detail = any_pb2.Any()
        detail.Pack(info)
        status.details.append(detail)
    return bytes(status.SerializeToString())


async def abort(
    context: grpc.aio.ServicerContext,
    code_name: str,
    message: str,
    retry_delay: float | None = None,
) -> None:
    """End the call with status `code_name`, a RetryInfo in the details when given."""
    code = grpc.StatusCode[code_name]
    trailer = (("grpc-status-details-bin", status_details(code, message, retry_delay)),)
    await context.abort(code, message, trailing_metadata=trailer)


def parse_session_path(path: str) -> tuple[str, str]:
    """(agent name, session id) of `…/agents/A[/environments/E]/sessions/S`."""
    parts = (path or "").split("/")
    if len(parts) == _SESSION_PARTS + 2 and parts[6] == "environments":
        parts = parts[:6] + parts[8:]
    if (
        len(parts) != _SESSION_PARTS
        or parts[0] != "projects"
        or parts[2] != "locations"
        or parts[4] != "agents"
        or parts[6] != "sessions"
        or not all(parts)
    ):
        raise RpcFailure("INVALID_ARGUMENT", f"malformed session name {path!r}")
    if len(parts[7]) > 36:
        raise RpcFailure("INVALID_ARGUMENT", "session id must be at most 36 characters")
    return "/".join(parts[:6]), parts[7]
