"""τ-bench v1 (sierra-research/tau-bench) as a suite: domains `airline` and `retail`.

Its implementation is the rest of `tau_bench` below this seam (`domains/`, `env.py`,
`scoring.py`, `tasks.py`, `db.py`, `hashing.py`); this module only presents it.
"""

from __future__ import annotations

from pathlib import Path

from tau_bench import domains


class TauBenchV1:
    """The first suite; its domains keep their bare names (`--env airline`)."""

    name = "tau-bench"
    prefix = ""

    def domain_names(self) -> tuple[str, ...]:
        return domains.DOMAIN_NAMES

    def load_domain(self, name: str, data_dir: str | Path | None = None) -> domains.Domain:
        return domains.load_domain(name, data_dir)


SUITE = TauBenchV1()
