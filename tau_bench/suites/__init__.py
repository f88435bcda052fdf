"""The benchmark-suite seam: suites are found by entry point, domains by their `--env` name.

`load_domain("airline")` is τ-bench v1's airline, `load_domain("tau3/airline")` τ³'s: the
part before the last `/` picks the suite by its prefix, bare names belong to the suite
whose prefix is empty. Suites register under the `tau_bench.suites` entry-point group, so
a third party ships one the way adapters ship (docs/suites.md).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tau_adapters.registry import group_entry_points, one_line
from tau_bench.suites.base import (
    Domain,
    EpisodeEnv,
    Reward,
    Suite,
    Task,
    UnknownDomainError,
    UnknownSplitError,
)

GROUP = "tau_bench.suites"

__all__ = [
    "GROUP",
    "Domain",
    "EpisodeEnv",
    "Reward",
    "Suite",
    "Task",
    "UnknownDomainError",
    "UnknownSplitError",
    "all_domain_names",
    "default_split_for",
    "load_domain",
    "split_env",
    "suites",
]

_suites: dict[str, Suite] | None = None
_lock = threading.Lock()


def suites() -> dict[str, Suite]:
    """Every installed suite by name (loaded once per process)."""
    global _suites
    with _lock:
        if _suites is None:
            found: dict[str, Suite] = {}
            for ep in group_entry_points(GROUP):  # a broken distribution skipped
                try:
                    suite = ep.load()
                    problem = _not_a_suite(suite)
                except ImportError:
                    continue  # a suite whose optional dependencies are missing
                except Exception as exc:  # third-party code: it costs only itself
                    problem = f"failed to load ({type(exc).__name__}: {exc})"
                if problem:
                    _skipped(f"suite plug-in {ep.name} ({ep.value}) {problem}; skipped")
                else:
                    found[ep.name] = suite
            _suites = found
        return dict(_suites)


def _not_a_suite(suite: object) -> str | None:
    """What keeps a loaded plug-in from serving as a `Suite` (asked once, at discovery, so
    that a broken one fails here and not in every command that lists domains)."""
    names = getattr(suite, "domain_names", None)
    if not isinstance(getattr(suite, "prefix", None), str) or not callable(names):
        return "is not a suite (it needs a `prefix` and `domain_names()`)"
    listed = names()
    if not isinstance(listed, (tuple, list)) or not all(isinstance(n, str) for n in listed):
        return "is not a suite (`domain_names()` must give a tuple of names)"
    if not callable(getattr(suite, "load_domain", None)):
        return "is not a suite (it needs `load_domain()`)"
    return None


def _skipped(message: str) -> None:
    """One warning line on stderr for a suite plug-in left out (third-party text made
    safe to print)."""
    print(f"warning: {one_line(message)}", file=sys.stderr, flush=True)


def all_domain_names() -> list[str]:
    """Every selectable `--env` name, suite by suite."""
    return [s.prefix + d for s in suites().values() for d in s.domain_names()]


def split_env(env: str) -> tuple[Suite, str]:
    """The suite an `--env` name belongs to and the domain's name inside it."""
    prefix, _, name = env.strip().rpartition("/")
    prefix = prefix + "/" if prefix else ""
    for suite in suites().values():
        if suite.prefix == prefix and name in suite.domain_names():
            return suite, name
    raise UnknownDomainError(
        f"unknown env {env!r} (available: {', '.join(all_domain_names()) or 'none'})"
    )


def default_split_for(envs: list[str]) -> str | None:
    """The split a run of `envs` uses when none is given, if their suites name one
    (τ³: `base`); None keeps the run default (`test`, τ-bench v1's)."""
    found = set()
    for env in envs:
        try:
            suite, _ = split_env(env)
        except UnknownDomainError:
            return None
        found.add(getattr(suite, "default_split", None))
    return found.pop() if len(found) == 1 else None


def load_domain(env: str, data_dir: str | Path | None = None) -> Domain:
    """The domain selected by `env` (loaded once per process and data directory)."""
    suite, name = split_env(env)
    return suite.load_domain(name, data_dir)
