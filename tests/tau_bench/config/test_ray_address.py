"""`--ray-address` is checked when settings are read: the forms Ray takes pass, anything
else is a one-line error before a run starts (Ray itself raised a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tau_bench.config import RunConfig
from tau_bench.config.ray_address import check_ray_address, split_host_port

from ...conftest import DATA_DIR


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("auto", None),
        ("local", None),
        ("head:6379", ("head", 6379)),
        ("10.0.0.7:6379", ("10.0.0.7", 6379)),
        ("[::1]:6379", ("::1", 6379)),
        ("ray://head:10001", ("head", 10001)),
        ("ray://head", ("head", 10001)),
        ("ray://[::1]", ("::1", 10001)),
    ],
)
def test_the_forms_ray_takes_pass(address: str, target: tuple[str, int] | None) -> None:
    assert split_host_port(address) == target
    assert check_ray_address(f" {address} ") == address


@pytest.mark.parametrize(
    "address",
    [
        "garbage",
        "head:abc",
        "head:0",
        "head:65536",
        ":6379",
        "ray://",
        "http://head:1",
        "ray://h:1/x",
        "ray://[::1",
        "ray://::1",
        "::1:6379",
        "[head]:6379",
        "user@head:6379",
        "he ad:6379",
    ],
)
def test_anything_else_is_refused_naming_the_forms(address: str) -> None:
    with pytest.raises(ValueError, match=r"expected auto .* not '"):
        check_ray_address(address)


def test_an_empty_address_is_refused_and_none_is_none() -> None:
    # `--ray-address "$HEAD"` with HEAD unset ran on this machine without a word
    for empty in ("", "  "):
        with pytest.raises(ValueError, match=r"^the address is empty \(an unset variable\?\)"):
            check_ray_address(empty)
    assert check_ray_address(None) is None


def test_run_config_refuses_a_malformed_address() -> None:
    with pytest.raises(ValidationError, match="ray_address"):
        RunConfig(ray_address="garbage")
    assert RunConfig(ray_address=" ray://head:10001 ").ray_address == "ray://head:10001"


# A refused address is echoed, but never its secrets, never at any length, never raw
# control characters: the error line goes to terminals, logs and API answers.

SECRET_ADDRESSES = [
    "ray://u:SECRETPW@127.0.0.1:10001",
    "u:SECRETPW@head:6379",
    "ray://u:pass/SECRETPW@head",
    "ray://SECRETPW@head:10001",
    "ray://head:10001?token=SECRETPW",
    "head:6379?SECRETPW",
    "ray://head:10001#SECRETPW",
    "ray://head/x?u=http://a:SECRETPW@c",
]


@pytest.mark.parametrize("address", SECRET_ADDRESSES)
def test_a_refused_address_is_echoed_without_its_secret(address: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_ray_address(address)
    message = str(caught.value)
    assert "SECRETPW" not in message
    assert "***" in message and message.startswith("expected auto")


def test_the_echo_keeps_what_locates_the_mistake() -> None:
    with pytest.raises(ValueError, match=r"not 'ray://u:\*\*\*@127\.0\.0\.1:10001'"):
        check_ray_address("ray://u:SECRETPW@127.0.0.1:10001")
    with pytest.raises(ValueError, match=r"not 'head:6379\?\*\*\*'"):
        check_ray_address("head:6379?token=SECRETPW")


def test_a_long_address_is_echoed_cut_short() -> None:
    address = "h" * 400 + ":6379x"  # under the limit, still refused
    with pytest.raises(ValueError) as caught:
        check_ray_address(address)
    message = str(caught.value)
    assert len(message) < 500 and "more chars]" in message


def test_an_absurd_length_is_refused_without_echo() -> None:
    with pytest.raises(ValueError, match=r"not a value of 100,000 characters") as caught:
        check_ray_address("ray://" + "h" * 99_994)
    assert len(str(caught.value)) < 400 and "hhhh" not in str(caught.value)


@pytest.mark.parametrize(
    "address", ["host\n:6379", "host:6379\nx", "ho\tst:6379", "ho st:6379", "h\x1b[2J:6379"]
)
def test_whitespace_and_control_characters_are_refused_on_one_line(address: str) -> None:
    with pytest.raises(ValueError, match="no spaces or control characters") as caught:
        check_ray_address(address)
    message = str(caught.value)
    assert message.isprintable(), message  # no raw newline, tab or ESC


@pytest.mark.parametrize("port", ["\u00b2", "\uff16\uff13\uff17\uff19"])  # ², fullwidth 6379
def test_a_port_of_other_digits_is_refused_naming_the_forms(port: str) -> None:
    """`isdigit` holds for these; `int` fails on one, reads the other as a port Ray does
    not understand."""
    with pytest.raises(ValueError, match=rf"expected auto .* not 'head:{port}'"):
        check_ray_address(f"head:{port}")


TAU = Path(sys.executable).parent / "tau"
RUN = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]


@pytest.mark.parametrize(
    "address",
    [*SECRET_ADDRESSES, "host\n:6379?SECRETPW", "ray://u:SECRETPW@" + "h" * 99_000],
    ids=lambda a: a[:40],
)
def test_tau_run_never_shows_the_secret_of_a_refused_address(address: str, tmp_path: Path) -> None:
    """Through the installed `tau`: one `error:` line naming the setting, exit 2, the
    secret nowhere, nothing written."""
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = ["--task-ids", "13", "--quiet", "--log-dir", str(tmp_path / "out")]
    done = subprocess.run(
        [str(TAU), *RUN, *args, "--ray-address", address],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "SECRETPW" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ray_address: expected"), lines
    assert len(lines[0]) < 600
    assert not (tmp_path / "out").exists()
