"""The one opener of files a user names (`tau_bench.bounded_files`): a FIFO is refused, not
waited on; a device is refused, not read without end; a file over the cap is refused by
its size, unread; and no refusal leaves its descriptor open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tau_bench.bounded_files import (
    FileTooLarge,
    NotRegularFile,
    open_regular,
    read_capped,
    read_regular,
)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_regular_file_under_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular(path, 10) == b"x" * 10
    assert read_capped(path, 10) == b"x" * 10
    with open_regular(path, 10) as fh:
        assert fh.read() == b"x" * 10


def test_what_is_no_regular_file_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would wait for ever
    before = open_descriptors()
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(NotRegularFile):
            read_regular(path, 100)
        with pytest.raises(NotRegularFile):
            open_regular(path, 100)
    assert open_descriptors() == before


def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as fh:
        fh.truncate(1 << 40)  # 1 TiB that reading would try to hold
    before = open_descriptors()
    for read in (read_regular, read_capped, open_regular):
        with pytest.raises(FileTooLarge):
            read(sparse, 1 << 20)
    assert open_descriptors() == before


def test_a_device_is_read_only_up_to_the_cap_where_pipes_are_allowed() -> None:
    with pytest.raises(FileTooLarge):
        read_capped("/dev/zero", 1 << 20)


def test_a_missing_file_is_the_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        read_regular("/nonexistent/file", 10)
