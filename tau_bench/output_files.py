"""Whether a path can take a command's output file, checked before the work (a judge's
calls are paid for, an eval runs for hours): one rule for every writer, the CLI's
`check_output` and `tau eval`'s report alike.

Why refuse more than what cannot be written: an existing path that is not a regular file
(`/dev/null`, a FIFO, a socket) would be *replaced* by the atomic rename every writer
uses, so `-o /dev/null` run as root replaced the system's device with a report.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import truncate

__all__ = ["output_problem", "same_file", "shown_path", "special_kind"]


def output_problem(path: Path, flag: str = "-o", *, folder: bool = False) -> str | None:
    """Why `path` cannot be an output file (or, with `folder`, an output folder), or None:
    a folder given for a file, a file given for a folder, something that is not a regular
    file, a path under a file, a folder that is not writable, a name the file system
    cannot take (too long)."""
    try:
        return _output_problem(path, flag, folder)
    except OSError as exc:  # `Path.is_dir` and `exists` raise for a name too long
        return f"{flag} {shown_path(path)}: {exc.strerror or exc}"


def shown_path(path: str | Path) -> str:
    """`path` as one line of an error: a newline, a tab or an escape sequence in a file
    name shown escaped, at most 200 characters."""
    return truncate(printable(str(path)).replace("\n", "\\n").replace("\t", "\\t"), 200)


def _output_problem(path: Path, flag: str, folder: bool) -> str | None:
    shown = shown_path(path)
    if folder:
        if path.exists() and not path.is_dir():
            return f"{flag} {shown} is a file, not a folder"
        start = path
    else:
        if path.is_dir():
            return f"{flag} {shown} is a folder; give a file name"
        kind = special_kind(path)
        if kind is not None:
            return f"{flag} {shown} is {kind}, not a regular file; give a file name"
        start = path.parent
    for ancestor in (start, *start.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                return f"{flag} {shown}: {shown_path(ancestor)} is not a folder"
            if not os.access(ancestor, os.W_OK | os.X_OK):
                return f"{flag} {shown}: {shown_path(ancestor)} is not writable"
            return None
    return None


def special_kind(path: Path) -> str | None:
    """What an existing non-regular file is (symlinks followed), or None."""
    try:
        mode = path.stat().st_mode
    except OSError:  # missing (or a dangling link): a new file is made
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: resolved (symlinks, `..`), or one inode (hard
    links, bind mounts)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False
