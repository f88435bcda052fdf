"""`parse_retry_after`: one reading of Retry-After for the HTTP and A2A adapters and the
LLM layer; what a server got wrong means "use your own backoff" (None), never a crash."""

from __future__ import annotations

import email.utils
import time

import pytest

from tau_adapters.retry_after import parse_retry_after


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        ("soon", None),
        ("garbage", None),
        ("Mon, 99 Foo 2015", None),
        ("Mon, 01 Jan 99999 00:00:00 GMT", None),
        ("nan", None),
        ("inf", None),
        ("1e999", None),
        ("7", 7.0),
        ("12", 12.0),
        (" 2.5 ", 2.5),
        ("-3", 0.0),
        ("1e3", None),  # float() reads these; a server that sends them is wrong
        ("5_0", None),
        ("\u0661\u0662", None),  # Arabic-Indic digits
        ("1" * 400, None),  # finite for no float
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past
        ("Wed, 21 Oct 2015 07:28:00", 0.0),  # no zone: GMT, not local time
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


@pytest.mark.parametrize("usegmt", [True, False])
def test_a_retry_after_date_in_the_future(usegmt: bool) -> None:
    later = email.utils.formatdate(time.time() + 120, usegmt=usegmt)
    assert 100 < (parse_retry_after(later) or 0) <= 120
