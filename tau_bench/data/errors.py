"""The data layer's error types, on their own so that path resolution, downloading and
assembling can all raise them without importing each other."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tau_bench.bounded_files import looked_at


class DataDirError(RuntimeError):
    """The data directory is missing or incomplete; the message says what to do."""


class PullError(DataDirError):
    """Filling the data directory failed; nothing was written to the destination."""


class ChecksumError(PullError):
    """A downloaded or derived file does not have its pinned sha256."""

    def __init__(self, name: str, expected: str, actual: str) -> None:
        super().__init__(
            f"checksum mismatch for {name}: expected sha256 {expected}, got {actual}; "
            "nothing was written to the data directory"
        )
        self.name = name
        self.expected = expected
        self.actual = actual


class TooLargeError(ChecksumError):
    """A download that went past the file's pinned size (or the cap for a file without
    one): it was stopped there, so it cannot have the pinned sha256 and has none of its
    own (`actual` is empty). Not retried: the file of a pinned commit never changes."""

    def __init__(self, name: str, message: str, expected: str = "") -> None:
        PullError.__init__(self, message)
        self.name = name
        self.expected = expected
        self.actual = ""


def probed(check: Callable[[], bool], path: Path, source: str) -> bool:
    """`check()` (`path.is_dir`, `is_file`...), where a path the system refuses to look at
    is a one-line `DataDirError` naming `source` (`bounded_files.looked_at`)."""
    return looked_at(check, path, lambda said: DataDirError(f"{source} points at {said}"))
