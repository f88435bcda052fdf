"""Tasks whose ground-truth replay fails in the ORIGINAL too, for `tau tasks verify`.

A view of the known-issue registry (`tau_bench.tau3.known_issues`): the entries of kind
`fails_in_original` (the two mock tasks of the conformance README). `tau tasks verify`
lists them as "fails in the original" instead of failing.
"""

from __future__ import annotations

from tau_bench.tau3.known_issues import known_failing_in_original

__all__ = ["known_failing"]


def known_failing(domain: str) -> dict[str, str]:
    """Task id -> why its replay scores 0.0 in the original, for τ³ domain `domain`."""
    return {task: entry.summary for task, entry in known_failing_in_original(domain).items()}
