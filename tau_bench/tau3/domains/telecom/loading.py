"""Telecom data files: the two TOML databases and the policy texts.

TOML: upstream reads `db.toml`/`user_db.toml` with the `toml` package (0.10.2). On these
two files the standard library's `tomllib` gives identical results (same values, types and
key order; every date is a quoted string, so neither parser makes date objects) — checked
against toml 0.10.2 — so no extra dependency is needed.

A source parses and validates its file once per process; every new episode gets its own
model by re-validating (~60 µs for the agent DB): about 8x faster than deep-copying a
validated model, and no state is shared between episodes.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from tau_bench.data.files import read_text, read_toml
from tau_bench.tau3.data import PULL_HINT
from tau_bench.tau3.domains.telecom.models import TelecomDB
from tau_bench.tau3.domains.telecom.user_models import TelecomUserDB
from tau_bench.tau3.store import invalid_db, seed_hash_keys

M = TypeVar("M", bound=BaseModel)

# Tech-support part of the policy per (variant, solo); main policy per solo.
_TECH_SUPPORT = {
    ("manual", False): "tech_support_manual.md",
    ("manual", True): "tech_support_manual.md",  # upstream uses the same file in solo mode
    ("workflow", False): "tech_support_workflow.md",
    ("workflow", True): "tech_support_workflow_solo.md",
}
_MAIN = {False: "main_policy.md", True: "main_policy_solo.md"}


class ModelSource(Generic[M]):
    """A TOML DB parsed once; `fresh()` validates it into a new private model.

    The file is validated once as upstream does (lax mode: date strings, enum strings);
    episodes then re-validate that model's python dump in strict mode, which is faster and
    gives the same values — checked here once, else episodes use the lax path.
    """

    def __init__(self, model: type[M], path: Path) -> None:
        self.model = model
        self.raw: dict[str, Any] = read_toml(path, PULL_HINT)
        try:
            dump = model.model_validate(self.raw).model_dump()
        except ValidationError as exc:
            raise invalid_db(path, exc) from None
        self._dump: dict[str, Any] | None = dump
        try:
            again = model.model_validate(dump, strict=True).model_dump()
            same = pickle.dumps(again) == pickle.dumps(dump)
        except ValueError:  # pydantic's ValidationError
            same = False
        if not same:
            self._dump = None
        else:  # episodes share the dump's dates and enums: pre-memoise them for hash keys
            seed_hash_keys(dump)

    def fresh(self) -> M:
        if self._dump is not None:
            return self.model.model_validate(self._dump, strict=True)
        return self.model.model_validate(self.raw)


def agent_db_source(domain_dir: Path) -> ModelSource[TelecomDB]:
    return ModelSource(TelecomDB, domain_dir / "db.toml")


def user_db_source(domain_dir: Path) -> ModelSource[TelecomUserDB]:
    return ModelSource(TelecomUserDB, domain_dir / "user_db.toml")


def policy_text(domain_dir: Path, variant: str, solo: bool) -> str:
    """`<main_policy>…</main_policy>\\n<tech_support_policy>…</tech_support_policy>`."""
    if (variant, solo) not in _TECH_SUPPORT:
        raise ValueError(f"Invalid policy type: {variant}")
    main = read_text(domain_dir / _MAIN[solo], PULL_HINT)
    tech = read_text(domain_dir / _TECH_SUPPORT[(variant, solo)], PULL_HINT)
    return (
        "<main_policy>\n"
        + main
        + "\n</main_policy>\n<tech_support_policy>\n"
        + tech
        + "\n</tech_support_policy>"
    )


def manual_policy(domain_dir: Path, solo: bool) -> str:
    """Policy of domain `telecom` (tech-support manual)."""
    return policy_text(domain_dir, "manual", solo)


def workflow_policy(domain_dir: Path, solo: bool) -> str:
    """Policy of domain `telecom-workflow` (tech-support workflow)."""
    return policy_text(domain_dir, "workflow", solo)
