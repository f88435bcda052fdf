"""One check of an output path for every command that writes one (`tau compare --json`,
`tau report -o/--png-dir`, `tau analyze`, `tau export`, `tau rescore -o`).

Why before the work: a judge's calls are paid for and a report takes time; a path that
cannot be written should cost nothing. What only the write can tell (a full disk, a file
size limit, a special file system) is caught when writing.
"""

from __future__ import annotations

import os
from pathlib import Path

from tau_bench.cli.errors import fail

__all__ = ["check_output"]


def check_output(path: Path, flag: str = "-o", *, folder: bool = False) -> None:
    """Refuse (one line, exit 2) a file name that is a folder, a folder that is a file, a
    path under a file, a folder that is not writable."""
    if folder:
        if path.exists() and not path.is_dir():
            fail(f"{flag} {path} is a file, not a folder")
        start = path
    else:
        if path.is_dir():
            fail(f"{flag} {path} is a folder; give a file name")
        start = path.parent
    for ancestor in (start, *start.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                fail(f"{flag} {path}: {ancestor} is not a folder")
            if not os.access(ancestor, os.W_OK | os.X_OK):
                fail(f"{flag} {path}: {ancestor} is not writable")
            return
