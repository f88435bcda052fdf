"""The τ³ airline domain: flights, users, reservations (agent toolkit only)."""

from tau_bench.tau3.domain import DomainSpec, policy_file, register
from tau_bench.tau3.domains.airline.models import TABLES
from tau_bench.tau3.domains.airline.tools import AirlineTools
from tau_bench.tau3.store import TableSource

SPEC = DomainSpec(
    name="airline",
    agent_toolkit=AirlineTools,
    agent_db=lambda d: TableSource(d / "db.json", TABLES, "FlightDB"),
    policy=policy_file("policy.md"),
)
register(SPEC)

__all__ = ["SPEC", "AirlineTools"]
