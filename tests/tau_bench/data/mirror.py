"""A damaged copy of a (read-only, large) data directory, made cheaply for a test."""

from __future__ import annotations

from pathlib import Path


def mirror_except(src: Path, dst: Path, rel: str) -> Path:
    """`dst` mirrors `src` with symlinks, except along `rel`: its folders are real and its
    file is left out, for the caller to write (or not). Returns `dst / rel`."""
    parts = Path(rel).parts
    here_src, here_dst = src, dst
    dst.mkdir(parents=True)
    for depth, part in enumerate(parts):
        for entry in here_src.iterdir():
            if entry.name != part:
                (here_dst / entry.name).symlink_to(entry)
        if depth < len(parts) - 1:
            here_src, here_dst = here_src / part, here_dst / part
            here_dst.mkdir()
    return dst / rel
