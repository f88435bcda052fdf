"""The forms `--ray-address` takes, checked where settings are read (no Ray import), so a
malformed address is one line before anything runs rather than Ray's traceback.

An address that is refused is echoed in the error, but only as `user_values.shown` makes it: a
mistyped address may carry a password or a token (`ray://user:PASS@head`,
`head:6379?token=...`), and a pasted one may be huge or hold control characters."""

from __future__ import annotations

import string

from tau_bench.user_values import shown

FORMS = (
    "auto (the cluster this machine belongs to), local (a new local Ray), "
    "HOST:PORT (the head's GCS, e.g. head:6379) or ray://HOST[:PORT] (Ray Client)"
)

RAY_CLIENT_PORT = 10001
"""Ray Client's port when a `ray://` address names none (Ray's own default)."""

MAX_ADDRESS_LENGTH = 512
"""Longer is no address (a host name is at most 253 characters): refused unread."""


def _refused(address: str, why: str = "") -> ValueError:
    return ValueError(f"expected {FORMS}, not {shown(address)}{why}")


def split_host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a `HOST:PORT` or `ray://HOST[:PORT]` address; None for `auto`
    and `local`; ValueError for anything else (its text safe to show: `shown`)."""
    if len(address) > MAX_ADDRESS_LENGTH:  # before anything reads it
        raise ValueError(
            f"expected {FORMS}, not a value of {len(address):,} characters "
            f"(an address has at most {MAX_ADDRESS_LENGTH:,})"
        )
    if any(c.isspace() or not c.isprintable() for c in address):
        raise _refused(address, ": an address has no spaces or control characters")
    if address in ("auto", "local"):
        return None
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://")
    host, sep, port_text = rest.rpartition(":")
    if client and (not sep or "]" in port_text):  # ray://head, ray://[::1]
        host, port_text = rest, str(RAY_CLIENT_PORT)
    port = int(port_text) if port_text.isascii() and port_text.isdigit() else 0
    if not _valid_host(host) or not 0 < port < 65536:
        raise _refused(address)
    return host.removeprefix("[").removesuffix("]"), port


def _valid_host(host: str) -> bool:
    """A name or IPv4 address, or an IPv6 address in brackets (`[::1]`)."""
    if host.startswith("[") and host.endswith("]"):
        inner = host[1:-1]
        return ":" in inner and all(c in string.hexdigits + ":." for c in inner)
    return bool(host) and not any(c in host for c in "[]:/@?# \t")


def check_ray_address(value: str | None) -> str | None:
    """`value` stripped if it has one of the `FORMS`; ValueError if not. An empty address
    is refused, not taken for none: `--ray-address "$HEAD"` with `HEAD` unset would
    otherwise run on this machine without a word."""
    if value is None:
        return None
    if not value.strip():
        raise ValueError(
            f"the address is empty (an unset variable?): give {FORMS}, or leave it out"
        )
    address = value.strip()
    split_host_port(address)
    return address
