"""The data layer's error type, on its own so that path resolution and pulling can both
raise it without importing each other."""

from __future__ import annotations


class DataDirError(RuntimeError):
    """The data directory is missing or incomplete; the message says what to do."""
