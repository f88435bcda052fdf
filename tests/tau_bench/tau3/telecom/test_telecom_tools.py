"""Tool texts and quirks of the telecom toolkits that the conformance vectors do not reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tau_bench.tau3.domain import LoadedDomain, load_domain
from tau_bench.tau3.domains.telecom.models import TelecomDB
from tau_bench.tau3.domains.telecom.user_models import PerformanceLevel, TelecomUserDB
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.tasks import load_splits, load_tasks


def _agent(env: Environment, name: str, **arguments: object) -> tuple[str, bool]:
    result = env.call(name, arguments)
    return result.content, result.error


def _user(env: Environment, name: str, **arguments: object) -> tuple[str, bool]:
    result = env.call(name, arguments, requestor="user")
    return result.content, result.error


def test_tool_order_is_the_served_schema_order(telecom: LoadedDomain) -> None:
    agent = [t["function"]["name"] for t in telecom.tool_schemas()]
    user_schemas = telecom.user_tool_schemas()
    assert user_schemas is not None
    assert telecom.spec.agent_toolkit.tool_names() == agent
    assert telecom.spec.user_toolkit is not None
    assert telecom.spec.user_toolkit.tool_names() == [t["function"]["name"] for t in user_schemas]
    kinds = {n: telecom.spec.agent_toolkit.tool_kind(n).value for n in agent}
    assert kinds["transfer_to_human_agents"] == "generic"
    assert not telecom.spec.agent_toolkit.mutates_state("transfer_to_human_agents")
    assert telecom.spec.user_toolkit.mutates_state("toggle_data")


def test_cross_side_calls_and_argument_errors(env: Environment) -> None:
    assert _user(env, "get_customer_by_id", customer_id="C1001") == (
        "Error: Tool 'get_customer_by_id' not found.",
        True,
    )
    assert _agent(env, "toggle_data") == ("Error: Tool 'toggle_data' not found.", True)
    assert _agent(env, "suspend_line", customer_id="C1001") == (
        "Error: TelecomTools.suspend_line() missing 2 required positional arguments: "
        "'line_id' and 'reason'",
        True,
    )
    assert _user(env, "toggle_data", x=1) == (
        "Error: TelecomUserTools.toggle_data() got an unexpected keyword argument 'x'",
        True,
    )
    assert _agent(env, "get_details_by_id", id=5) == (
        "Error: 'int' object has no attribute 'startswith'",
        True,
    )
    assert _agent(env, "get_details_by_id", id="X1") == (
        "Error: Unknown ID format or type: X1",
        True,
    )


def test_dict_results_stringify_numbers_and_models_keep_them(env: Environment) -> None:
    usage, _ = _agent(env, "get_data_usage", customer_id="C1001", line_id="L1002")
    assert usage == (
        '{"line_id": "L1002", "data_used_gb": "8.7", "data_limit_gb": "15.0", '
        '"data_refueling_gb": "0.0", "cycle_end_date": "2025-02-28"}'
    )
    suspended, _ = _agent(env, "suspend_line", customer_id="C1001", line_id="L1002", reason="x")
    line = json.loads(suspended)["line"]
    assert line["data_used_gb"] == 8.7 and line["suspension_start_date"] == "2025-02-25"
    customer, _ = _agent(env, "get_customer_by_id", customer_id="C1002")
    assert '"created_at": "2025-02-10 14:15:00"' in customer


def test_refuel_without_draft_bill_uses_the_id_hook(env: Environment) -> None:
    content, error = _agent(env, "refuel_data", customer_id="C1002", line_id="L1004", gb_amount=2)
    assert (content, error) == (
        '{"message": "Successfully added 2 GB of data for line L1004 for $0.20", '
        '"new_data_refueling_gb": "2.0", "charge": "0.2"}',
        False,
    )
    bill = json.loads(_agent(env, "get_details_by_id", id="B00000001")[0])
    assert bill["period_start"] == "2025-03-01" and bill["period_end"] == "2025-03-31"
    assert bill["due_date"] == "2025-03-15" and bill["status"] == "Draft"
    assert bill["line_items"][0]["description"] == "Data refueling: 2 GB at $0.1/GB"
    _agent(env, "refuel_data", customer_id="C1003", line_id="L1009", gb_amount=1)
    customer = json.loads(_agent(env, "get_customer_by_id", customer_id="C1003")[0])
    assert customer["bill_ids"][-1] == "B00000002"
    assert _agent(env, "refuel_data", customer_id="C1002", line_id="L1004", gb_amount=0) == (
        "Error: Refuel amount must be positive",
        True,
    )


def test_refuel_ids_are_random_outside_deterministic_mode(telecom: LoadedDomain) -> None:
    ids = set()
    for _ in range(3):
        env = Environment(telecom)
        _agent(env, "refuel_data", customer_id="C1002", line_id="L1004", gb_amount=2)
        bill_id = env.tools.db.bills[-1].bill_id
        assert len(bill_id) == 9 and bill_id.startswith("B")
        ids.add(bill_id)
    assert len(ids) == 3


def test_user_tool_quirks(env: Environment) -> None:
    assert _user(env, "set_apn_settings", apn_settings={"apn_name": "x"}) == (
        "Error: 1 validation error for APNSettings\napn_name\n  Input should be 'internet' "
        "or 'broken' [type=enum, input_value='x', input_type=str]\n    For further "
        "information visit https://errors.pydantic.dev/2.12/v/enum",
        True,
    )
    failed, error = _user(env, "set_network_mode_preference", mode="5g")
    assert not error and failed.startswith(
        "Failed to set network mode: '5g' is not a valid option. Please use one of: "
        "4g_5g_preferred, 4g_only, 3g_only, 2g_only\nStatus Bar: "
    )
    assert _user(env, "set_network_mode_preference", mode=123) == (
        "Error: 'int' object has no attribute 'value'",
        True,
    )
    assert _user(env, "check_network_mode_preference")[1]  # the bad value stays stored
    assert _user(env, "grant_app_permission", app_name="messaging", permission="camera")[0] == (
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: "
        "['sms', 'storage', 'phone', 'network']\nStatus Bar: 📶³ Good | 4G | "
        "📱 Data Enabled | 🔋 80%"
    )
    assert _user(env, "check_app_status", app_name="browser")[0] == (
        "Status for App: browser\n - Permissions Granted:\n   - storage\n   - network"
    )


def test_vpn_details_are_shared_within_an_environment_only(telecom: LoadedDomain) -> None:
    broken = Environment(telecom)
    broken.run_env_function_call({"env_type": "user", "func_name": "break_vpn", "arguments": {}})
    _user(broken, "disconnect_vpn")
    _user(broken, "connect_vpn")  # upstream: the same (now poor) default object
    assert "<PerformanceLevel.POOR: 'poor'>" in _user(broken, "check_vpn_status")[0]
    fresh = Environment(telecom)
    _user(fresh, "connect_vpn")
    assert _user(fresh, "check_vpn_status")[0] == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': "
        "'OpenVPN', 'server_performance': <PerformanceLevel.EXCELLENT: 'excellent'>}"
    )
    assert _user(fresh, "connect_vpn")[0] == "VPN already connected."
    assert fresh.user_tools is not None
    details = fresh.user_tools.db.device.vpn_details
    assert details is not None and details.server_performance == PerformanceLevel.EXCELLENT


def test_models_forbid_unknown_keys_everywhere(telecom: LoadedDomain) -> None:
    with pytest.raises(ValidationError, match="extra_forbidden"):
        TelecomUserDB.model_validate({"device": {"app_statuses": {"x": {"app_name": "x", "y": 1}}}})
    agent = telecom.agent_source.fresh().model_dump()
    agent["lines"][0]["colour"] = "red"
    with pytest.raises(ValidationError, match="extra_forbidden"):
        TelecomDB.model_validate(agent)


def test_policies(root: Path) -> None:
    manual = load_domain("telecom", root)
    workflow = load_domain("telecom-workflow", root)
    ddir = manual.domain_dir
    main = (ddir / "main_policy.md").read_text(encoding="utf-8")
    tech = (ddir / "tech_support_manual.md").read_text(encoding="utf-8")
    assert manual.policy() == (
        f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{tech}"
        "\n</tech_support_policy>"
    )
    assert (ddir / "tech_support_workflow.md").read_text(encoding="utf-8") in workflow.policy()
    assert (ddir / "main_policy_solo.md").read_text(encoding="utf-8") in manual.policy(solo=True)
    assert tech in manual.policy(solo=True)
    solo_workflow = (ddir / "tech_support_workflow_solo.md").read_text(encoding="utf-8")
    assert solo_workflow in workflow.policy(solo=True)
    assert workflow.tool_schemas() == manual.tool_schemas()


def test_splits(root: Path) -> None:
    sizes = {k: len(v) for k, v in load_splits(root, "telecom").items()}
    assert sizes == {"small": 20, "train": 74, "test": 40, "full": 2285, "base": 114}
    base = load_tasks(root, "telecom")
    assert len(base) == 114
    small = load_tasks(root, "telecom-workflow", split="small")
    assert [t.id for t in small] == load_splits(root, "telecom")["small"]
    with pytest.raises(ValueError, match="valid splits: small, train, test, full, base"):
        load_tasks(root, "telecom", split="nope")


def test_solo_mode_routes_user_tools_to_the_phone(telecom: LoadedDomain, root: Path) -> None:
    solo = Environment(telecom, solo_mode=True)
    content, error = _agent(solo, "toggle_data")
    assert not error and content.startswith("Mobile Data is now OFF.\nStatus Bar: ")
    assert _user(solo, "toggle_data") == (
        "Error: User tool calls are not allowed in solo mode",
        True,
    )
    assert Environment(load_domain("telecom-workflow", root)).name == "telecom-workflow"


def test_episodes_do_not_share_state(telecom: LoadedDomain) -> None:
    first, second = Environment(telecom), Environment(telecom)
    _agent(first, "refuel_data", customer_id="C1001", line_id="L1002", gb_amount=3)
    _user(first, "toggle_airplane_mode")
    assert first.hashes() != second.hashes()
    assert second.hashes() == Environment(telecom).hashes()


def test_sync_with_an_unknown_phone_number_fails_like_upstream(env: Environment) -> None:
    call = {
        "env_type": "user",
        "func_name": "set_user_info",
        "arguments": {"name": "X", "phone_number": "555-000-0000"},
    }
    with pytest.raises(ValueError, match=r"^Line with phone number 555-000-0000 not found$"):
        env.run_env_function_call(call)
    # Every later successful call now ends in the same sync error, as a tool message.
    assert _user(env, "check_status_bar") == (
        "Error: Line with phone number 555-000-0000 not found",
        True,
    )


def test_tasks_file_is_parsed_once_per_process(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_tasks(root, "telecom", split="small")  # parsed (or already cached) here
    parsed: list[int] = []
    real = json.loads

    def counting(text: str | bytes, *args: object, **kwargs: object) -> object:
        parsed.append(len(text))
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("tau_bench.data.files.json.loads", counting)  # what `_read` parses with
    assert len(load_tasks(root, "telecom")) == 114
    assert len(load_tasks(root, "telecom", split="full")) == 2285
    assert parsed == []


def test_helper_argument_errors_name_the_user_toolkit(env: Environment) -> None:
    call = {"env_type": "user", "func_name": "set_user_location", "arguments": {}}
    with pytest.raises(TypeError) as exc:
        env.run_env_function_call(call)
    assert str(exc.value) == (
        "TelecomUserTools.set_user_location() missing 1 required positional argument: 'abroad'"
    )
