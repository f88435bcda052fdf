"""A Ray Client server that fails to start a driver's session: the driver asks again
(seen on a real head: about one start in five failed in a row of quick runs, the next
try succeeding), and says so in one line when it never starts."""

from __future__ import annotations

from typing import Any

import pytest

from tau_bench.runner.backends import ray as backend

SERVER_SAID = (
    "Initialization failure from server:\n"
    "Traceback (most recent call last):\n"
    '  File ".../ray/util/client/server/proxier.py", line 772, in Datapath\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Starting Ray client server failed. See ray_client_server_23008.err "
    "for detailed logs.\n"
)


class ClientRay:
    """`ray` as a driver meets it by Ray Client: `init` raises what Ray Client raises
    when the head's server fails to start the session, `failures` times."""

    def __init__(self, failures: int, said: str = SERVER_SAID) -> None:
        self.failures = failures
        self.said = said
        self.inits = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, address: str, **_: Any) -> None:
        self.inits += 1
        if self.inits <= self.failures:
            raise ConnectionAbortedError(self.said)


@pytest.fixture
def client_ray(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(ray: ClientRay) -> ClientRay:
        monkeypatch.setattr(backend, "ray_module", lambda: ray)
        monkeypatch.setattr(backend, "reach", lambda address: None)  # a real head answers
        return ray

    return install


def test_a_session_that_failed_to_start_is_asked_for_again(client_ray: Any) -> None:
    ray = client_ray(ClientRay(failures=backend.CLIENT_START_ATTEMPTS - 1))
    assert backend.start_ray("ray://head:10001", workers=2) is True
    assert ray.inits == backend.CLIENT_START_ATTEMPTS


def test_a_session_that_never_starts_is_one_line_naming_the_servers_log(
    client_ray: Any,
) -> None:
    ray = client_ray(ClientRay(failures=backend.CLIENT_START_ATTEMPTS))
    with pytest.raises(ConnectionError) as caught:
        backend.start_ray("ray://head:10001", workers=2)
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        "the Ray Client server at ray://head:10001 failed to start a session for this "
        f"driver {backend.CLIENT_START_ATTEMPTS} times; the last time: RuntimeError: "
        "Starting Ray client server failed. See ray_client_server_23008.err for detailed logs."
    )
    assert ray.inits == backend.CLIENT_START_ATTEMPTS


def test_other_refusals_are_not_asked_again(client_ray: Any) -> None:
    ray = client_ray(ClientRay(failures=1, said="Connection refused by the head"))
    with pytest.raises(ConnectionAbortedError):
        backend.start_ray("ray://head:10001", workers=2)
    assert ray.inits == 1
