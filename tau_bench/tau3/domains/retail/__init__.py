"""The τ³ retail domain: products, users, orders (agent toolkit only)."""

from tau_bench.tau3.domain import DomainSpec, policy_file, register
from tau_bench.tau3.domains.retail.models import TABLES
from tau_bench.tau3.domains.retail.tools import RetailTools
from tau_bench.tau3.store import TableSource

SPEC = DomainSpec(
    name="retail",
    agent_toolkit=RetailTools,
    agent_db=lambda d: TableSource(d / "db.json", TABLES, "RetailDB"),
    policy=policy_file("policy.md"),
)
register(SPEC)

__all__ = ["SPEC", "RetailTools"]
