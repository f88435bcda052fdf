"""One check of an output path for every command that writes one (`tau compare --json`,
`tau report -o/--png-dir`, `tau analyze`, `tau export`, `tau rescore -o`).

Why before the work: a judge's calls are paid for and a report takes time; a path that
cannot be written should cost nothing. What only the write can tell (a full disk, a file
size limit, a special file system) is caught when writing.
"""

from __future__ import annotations

from pathlib import Path

from tau_bench.cli.errors import fail
from tau_bench.output_files import output_problem

__all__ = ["check_output"]


def check_output(path: Path, flag: str = "-o", *, folder: bool = False) -> None:
    """Refuse (one line, exit 2) what `tau_bench.output_files.output_problem` refuses."""
    problem = output_problem(path, flag, folder=folder)
    if problem is not None:
        fail(problem)
