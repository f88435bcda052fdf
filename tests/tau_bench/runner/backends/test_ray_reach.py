"""Joining a cluster fails within seconds, naming where, when nothing listens at the
address (Ray's own wait is 20 attempts of ~40 s each), or something other than Ray does."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tau_bench.runner.backends.ray import reach
from tests.tau_bench.runner.backends.refusal import tau_run_refusal


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_closed_port_is_refused_naming_it() -> None:
    port = closed_port()
    with pytest.raises(
        ConnectionError, match=rf"nothing accepts connections at 127\.0\.0\.1:{port}"
    ):
        reach(f"ray://127.0.0.1:{port}", deadline=5.0)


def test_a_port_where_no_ray_client_server_answers_is_refused() -> None:
    # Ray's client would try for ~30 s, then say `ray client connection timeout`.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(
            ConnectionError,
            match=rf"127\.0\.0\.1:{port} accepts connections but does not answer as a Ray "
            r"Client server \((UNAVAILABLE|DEADLINE_EXCEEDED); waited at most 2 s\)",
        ):
            reach(f"ray://127.0.0.1:{port}", deadline=2.0)


def test_a_gcs_address_is_probed_where_ray_dials() -> None:
    # Ray dials a loopback GCS address at the node's IP; the probe follows it.
    port = closed_port()
    # When that is another address, the message says which one the user gave.
    named = rf"(127\.0\.0\.1:{port}|\S+:{port}, the address Ray dials for 127\.0\.0\.1:{port})"
    with pytest.raises(ConnectionError, match=rf"nothing accepts connections at {named} \("):
        reach(f"127.0.0.1:{port}", deadline=5.0)


def test_auto_follows_ray_address_as_ray_init_does(monkeypatch: pytest.MonkeyPatch) -> None:
    port = closed_port()
    monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{port}")
    with pytest.raises(ConnectionError, match=rf"at 127\.0\.0\.1:{port} "):
        reach("auto", deadline=5.0)


def test_auto_with_no_cluster_on_this_machine_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No cluster recorded (an empty temp dir) and none running (Ray's process scan
    # answers nothing, whatever else runs on the machine meanwhile).
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setattr("ray._private.services.find_gcs_addresses", lambda: [])
    with pytest.raises(ConnectionError) as caught:
        reach("auto", deadline=5.0)
    assert str(caught.value) == (
        "no Ray cluster runs on this machine (`ray start --head` starts one); give a "
        "cluster's address, or leave --ray-address out for a local Ray"
    )


def test_local_is_not_probed() -> None:
    reach("local", deadline=0.001)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("garbage", "error: ray_address: expected auto"),
        ("CLOSED", "nothing accepts connections at"),
    ],
)
def test_tau_run_refuses_in_one_line_and_writes_nothing(
    tmp_path: Path, address: str, message: str
) -> None:
    if address == "CLOSED":
        address = f"127.0.0.1:{closed_port()}"
    assert message in tau_run_refusal(tmp_path, "--ray-address", address)


def test_auto_checks_ray_address_as_the_flag_is_and_masks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "ray://ops:hunter2@head:10001?token=abc")
    with pytest.raises(ConnectionError, match=r"^RAY_ADDRESS: expected ") as raised:
        reach("auto", deadline=5.0)
    assert "hunter2" not in str(raised.value) and "abc" not in str(raised.value)
