"""Files a user names, read with a bound: the one place that opens them.

Why: a path may name a device (`/dev/zero`, read without end), a FIFO (an open that waits
for a writer that never comes), a sparse or huge file (memory), or a file growing while
it is read. Each reader (config files, results logs, data and task files) states its cap
and words its own message; what they share is here.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tau_adapters.redaction import truncate


class FileTooLarge(ValueError):
    """A file past its reader's cap; each reader words its own message."""


class NotRegularFile(ValueError):
    """A path a reader wants a regular file at names a device, a FIFO or a folder."""


def looked_at(check: Callable[[], bool], path: Path, error: Callable[[str], Exception]) -> bool:
    """`check()` (`path.is_dir`, `exists`...), where a path the system refuses to look at
    (a name longer than the file system takes, a folder that may not be searched) raises
    `error(said)`, `said` naming the path and the reason in one line: pathlib raises
    OSError for those, where a plain missing path is False."""
    try:
        return check()
    except OSError as exc:
        raise error(f"{truncate(str(path), 200)}: {exc.strerror or exc}") from None


def open_regular(path: str | Path, cap: int) -> BinaryIO:
    """`path` opened for reading, when it is a regular file of at most `cap` bytes
    (`NotRegularFile`, `FileTooLarge`; other `OSError`s as raised). Opened without
    blocking, so a FIFO is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(str(path))
        if info.st_size > cap:
            raise FileTooLarge(str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, cap: int) -> bytes:
    """The bytes of the regular file `path` (`open_regular`), at most `cap` of them even
    when it grows while it is read."""
    with open_regular(path, cap) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise FileTooLarge(str(path))
    return data


def read_capped(path: str | Path, cap: int) -> bytes:
    """The bytes of `path`, at most `cap`: a regular file larger is refused by its size
    before it is read (a sparse file never fills memory); a device or a pipe (process
    substitution: `<(...)`) is read until that much has arrived. `FileTooLarge` then,
    and for a file under the cap that this process cannot hold (`MemoryError`); other
    `OSError`s as raised."""
    try:
        with Path(path).open("rb") as fh:
            info = os.fstat(fh.fileno())
            if info.st_size > cap:
                raise FileTooLarge(str(path))
            data = fh.read() if stat.S_ISREG(info.st_mode) else fh.read(cap + 1)
    except MemoryError:
        raise FileTooLarge(str(path)) from None
    if len(data) > cap:
        raise FileTooLarge(str(path))
    return data
