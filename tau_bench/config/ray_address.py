"""The forms `--ray-address` takes, checked where settings are read (no Ray import), so a
malformed address is one line before anything runs rather than Ray's traceback."""

from __future__ import annotations

import string

FORMS = (
    "auto (the cluster this machine belongs to), local (a new local Ray), "
    "HOST:PORT (the head's GCS, e.g. head:6379) or ray://HOST[:PORT] (Ray Client)"
)

RAY_CLIENT_PORT = 10001
"""Ray Client's port when a `ray://` address names none (Ray's own default)."""


def split_host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a `HOST:PORT` or `ray://HOST[:PORT]` address; None for `auto`
    and `local`; ValueError for anything else."""
    if address in ("auto", "local"):
        return None
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://")
    host, sep, port_text = rest.rpartition(":")
    if client and (not sep or "]" in port_text):  # ray://head, ray://[::1]
        host, port_text = rest, str(RAY_CLIENT_PORT)
    port = int(port_text) if port_text.isdigit() else 0
    if not _valid_host(host) or not 0 < port < 65536:
        raise ValueError(f"expected {FORMS}, not {address!r}")
    return host.removeprefix("[").removesuffix("]"), port


def _valid_host(host: str) -> bool:
    """A name or IPv4 address, or an IPv6 address in brackets (`[::1]`)."""
    if host.startswith("[") and host.endswith("]"):
        inner = host[1:-1]
        return ":" in inner and all(c in string.hexdigits + ":." for c in inner)
    return bool(host) and not any(c in host for c in "[]:/@ \t")


def check_ray_address(value: str | None) -> str | None:
    """`value` stripped (None when empty) if it has one of the `FORMS`; ValueError if not."""
    if value is None or not value.strip():
        return None
    address = value.strip()
    split_host_port(address)
    return address
