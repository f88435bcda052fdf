"""Errors that several layers raise and the CLI shows as one line (no layer owns them)."""

from __future__ import annotations


class UnknownDomainError(ValueError):
    """No suite has a domain of that name."""


class UnknownSplitError(ValueError):
    """The domain has no task set or split of that name."""


class TaskFileError(ValueError):
    """A tasks file that cannot be read as a list of tasks."""
