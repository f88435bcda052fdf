"""Config files are read within bounds (`read_config_bytes`): only a regular file, at most
`MAX_CONFIG_SIZE` bytes, and at most that many read even when the file grows after its
size was checked. The commands that read them are tested through the installed `tau` in
tests/tau_bench/cli/test_config_file_bounds.py, and only there are a FIFO and `/dev/zero`:
a child process can be given a deadline and a memory cap, this one cannot."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tau_bench.config import RunConfigError
from tau_bench.config.layers import MAX_CONFIG_SIZE, read_config_bytes, read_yaml_mapping


def test_a_small_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("env: airline\n")
    assert read_yaml_mapping(path) == {"env": "airline"}


def test_a_file_of_exactly_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(b"#" * MAX_CONFIG_SIZE)
    assert len(read_config_bytes(path)) == MAX_CONFIG_SIZE


def test_a_directory_is_refused_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(RunConfigError, match="is not a regular file") as info:
        read_yaml_mapping(tmp_path)
    assert str(info.value) == (
        f"config file {tmp_path} is not a regular file (a config is a YAML file)"
    )


def test_a_file_larger_than_the_cap_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as fh:
        fh.truncate(64 * MAX_CONFIG_SIZE)  # sparse: refused by its size, never read
    with pytest.raises(RunConfigError, match=r"sparse\.yaml is larger than 1 MiB"):
        read_yaml_mapping(path)


def test_a_file_that_grows_after_its_size_was_checked_is_still_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fstat says the file is empty (it grew since, or the size is a lie as in /proc): the
    read stops at cap + 1 bytes and refuses it, rather than reading all there is."""
    path = tmp_path / "growing.yaml"
    path.write_bytes(b"#" * (8 * MAX_CONFIG_SIZE))
    real_fstat, real_fdopen = os.fstat, os.fdopen
    read: list[int] = []

    def empty_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 0, *info[7:10]))

    def counted_fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        fh = real_fdopen(fd, *args, **kwargs)
        real_read = fh.read

        def counted_read(size: int = -1) -> bytes:
            data = real_read(size)
            read.append(len(data))
            return data

        fh.read = counted_read
        return fh

    monkeypatch.setattr(os, "fstat", empty_fstat)
    monkeypatch.setattr(os, "fdopen", counted_fdopen)
    with pytest.raises(RunConfigError, match="is larger than 1 MiB"):
        read_config_bytes(path)
    monkeypatch.undo()
    assert read and sum(read) == MAX_CONFIG_SIZE + 1, read
