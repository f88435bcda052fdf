"""Generation targets: one per suite (see `base`); `as_target` picks a domain's."""

from __future__ import annotations

from typing import Any

from tau_bench.sdg.targets.base import (
    ANNOTATOR,
    GENERATION_FAMILIES,
    GENERATOR,
    SandboxEnv,
    Target,
    TaskParts,
    UnsupportedDomainError,
)

__all__ = [
    "ANNOTATOR",
    "GENERATION_FAMILIES",
    "GENERATOR",
    "SandboxEnv",
    "Target",
    "TaskParts",
    "UnsupportedDomainError",
    "as_target",
]


def as_target(domain: Any) -> Target:
    """The target of a suite domain (`tau_bench.suites.load_domain`); a target as it is."""
    if hasattr(domain, "instruction_format"):
        return domain  # type: ignore[no-any-return]
    suite = getattr(domain, "suite", None)
    if suite == "tau3":
        from tau_bench.sdg.targets.tau3 import Tau3Target

        return Tau3Target(domain)
    if suite == "tau-bench":
        from tau_bench.sdg.targets.v1 import V1Target

        return V1Target(domain)
    raise UnsupportedDomainError(f"tau sdg does not know the suite of {domain!r}")
