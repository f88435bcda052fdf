"""The SDK's conformance kit against the adapter talking to the reference agent."""

from __future__ import annotations

from tau_adapters.testing import assert_adapter_conforms
from tau_bench.domains import load_domain
from tau_bench.episode import session_for

from ...conftest import DATA_DIR
from .conftest import provider_for


def test_adapter_conforms(reference_url: str) -> None:
    domain = load_domain("retail", DATA_DIR)
    session = session_for(domain, domain.tasks("test")[5], 5, 0)
    providers = []

    def factory():  # type: ignore[no-untyped-def]
        provider = provider_for(reference_url)
        providers.append(provider)
        return provider.new_adapter()

    report = assert_adapter_conforms(
        factory,
        session=session,
        user_messages=["I want to exchange an item.", "Yes, please."],
        require_tool_call=True,
    )
    assert "tool results round trip" in report.passed
    assert not report.skipped
