"""The τ³ mock domain: tasks and users (agent), a notification inbox (user)."""

from tau_bench.tau3.domain import DomainSpec, policy_file, register
from tau_bench.tau3.domains.mock.models import MockDB, MockUserDB
from tau_bench.tau3.domains.mock.tools import MockTools, MockUserTools
from tau_bench.tau3.store import PydanticSource

SPEC = DomainSpec(
    name="mock",
    agent_toolkit=MockTools,
    agent_db=lambda d: PydanticSource(MockDB, d / "db.json"),
    user_toolkit=MockUserTools,
    user_db=lambda d: PydanticSource(MockUserDB, d / "user_db.json"),
    policy=policy_file("policy.md", "policy_solo.md"),
    default_split=None,
    user_tools_json="mock/user_tools.json",
    supports_solo=True,
)
register(SPEC)

__all__ = ["SPEC", "MockDB", "MockTools", "MockUserDB", "MockUserTools"]
