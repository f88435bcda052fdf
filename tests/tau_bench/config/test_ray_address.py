"""`--ray-address` is checked when settings are read: the forms Ray takes pass, anything
else is a one-line error before a run starts (Ray itself raised a traceback)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tau_bench.config import RunConfig
from tau_bench.config.ray_address import check_ray_address, split_host_port


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


def test_empty_means_none() -> None:
    assert check_ray_address("  ") is None
    assert check_ray_address(None) is None


def test_run_config_refuses_a_malformed_address() -> None:
    with pytest.raises(ValidationError, match="ray_address"):
        RunConfig(ray_address="garbage")
    assert RunConfig(ray_address=" ray://head:10001 ").ray_address == "ray://head:10001"
