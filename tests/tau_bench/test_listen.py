"""The gRPC emulators' listen address: a bad --host is one line of ours, not grpc's log
line and then an error pointing at GRPC_VERBOSITY."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.listen import grpc_listen_address

from ..conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"


def test_a_resolvable_host_is_given_as_grpc_takes_it() -> None:
    assert grpc_listen_address("127.0.0.1", 0) == "127.0.0.1:0"
    assert grpc_listen_address("localhost", 8787) == "localhost:8787"
    assert grpc_listen_address("::1", 5) == "[::1]:5"
    assert grpc_listen_address("[::1]", 5) == "[::1]:5"


@pytest.mark.parametrize("host", ["", "[]", "no-such-host.invalid", "a,b,", "x" * 300])
def test_a_host_the_system_cannot_resolve_is_an_oserror(host: str) -> None:
    with pytest.raises(OSError):
        grpc_listen_address(host, 0)


@pytest.mark.parametrize("emulator", ["ces", "dialogflow"])
def test_the_installed_emulators_say_it_in_one_line(emulator: str) -> None:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [str(TAU), emulator, "emulate", "--host", "no-such-host.invalid", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: cannot listen on no-such-host.invalid:0: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # no line of grpc's own
