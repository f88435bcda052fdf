"""The phone simulation rules (spec §5.4) and the sync step (§5.6), one rule per test."""

from __future__ import annotations

from tau_bench.tau3.domains.telecom import device as sim
from tau_bench.tau3.domains.telecom.user_models import (
    NetworkModePreference,
    NetworkStatus,
    NetworkTechnology,
    SignalStrength,
    TelecomUserDB,
)
from tau_bench.tau3.environment import Environment


def _user(env: Environment, name: str, **arguments: object) -> str:
    result = env.call(name, arguments, requestor="user")
    assert not result.error, result.content
    return result.content


def _db(env: Environment) -> TelecomUserDB:
    assert env.user_tools is not None
    db = env.user_tools.db
    assert isinstance(db, TelecomUserDB)
    return db


def _fn(env: Environment, env_type: str, func: str, **arguments: object) -> object:
    return env.run_env_function_call(
        {"env_type": env_type, "func_name": func, "arguments": arguments}
    )


def test_first_search_shows_the_surroundings_5g_signal(env: Environment) -> None:
    assert _user(env, "check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
    _fn(env, "user", "simulate_network_search")
    assert _user(env, "check_status_bar") == (
        "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
    )
    assert sim.speed_test(_db(env)) == (275.0, "Excellent")


def test_mode_preference_picks_technology_and_signal(env: Environment) -> None:
    db = _db(env)
    expected = {
        "4g_only": (NetworkTechnology.FOUR_G, SignalStrength.GOOD, 44.0, "Good"),
        "3g_only": (NetworkTechnology.THREE_G, SignalStrength.FAIR, 1.5, "Poor"),
        "2g_only": (NetworkTechnology.TWO_G, SignalStrength.POOR, 0.05, "Very Poor"),
    }
    for mode, (tech, signal, speed, desc) in expected.items():
        _user(env, "set_network_mode_preference", mode=mode)
        assert db.device.network_mode_preference == NetworkModePreference(mode)
        assert (db.device.network_technology_connected, db.device.network_signal_strength) == (
            tech,
            signal,
        )
        assert sim.speed_test(db) == (speed, desc)
    db.surroundings.signal_strength[NetworkTechnology.FIVE_G] = SignalStrength.NONE
    _user(env, "set_network_mode_preference", mode="4g_5g_preferred")
    assert db.device.network_technology_connected == NetworkTechnology.FOUR_G


def test_speed_factors_poor_vpn_and_data_saver(env: Environment) -> None:
    db = _db(env)
    _fn(env, "user", "simulate_network_search")
    _fn(env, "user", "break_vpn")
    assert sim.speed_test(db) == (27.5, "Good")
    _user(env, "toggle_data_saver_mode")
    assert sim.speed_test(db) == (5.5, "Fair")
    assert "🔽 Data Saver" in _user(env, "check_status_bar")
    _user(env, "disconnect_vpn")
    assert sim.speed_test(db) == (55.0, "Good")


def test_no_service_causes(env: Environment) -> None:
    db = _db(env)
    _fn(env, "user", "unseat_sim_card")
    assert db.device.network_connection_status == NetworkStatus.NO_SERVICE
    assert _user(env, "check_sim_status") == "No SIM card detected in the phone."
    assert _user(env, "run_speed_test") == "Speed test failed: No Connection."
    _user(env, "reseat_sim_card")
    assert db.device.network_connection_status == NetworkStatus.CONNECTED
    _fn(env, "user", "break_apn_settings")
    assert db.device.network_technology_connected == NetworkTechnology.NONE
    assert "📵 No Signal | 📵 Data Disabled" in _user(env, "check_status_bar")
    _user(env, "reset_apn_settings")  # only marks the reset for the next reboot
    assert db.device.network_connection_status == NetworkStatus.NO_SERVICE
    reboot = _user(env, "reboot_device")
    assert reboot.startswith("Resetting APN settings...\nRestarting network services...\n")
    assert db.device.network_connection_status == NetworkStatus.CONNECTED


def test_abroad_needs_device_roaming_and_line_roaming(env: Environment) -> None:
    db = _db(env)
    _fn(env, "user", "set_user_location", abroad=True)
    assert not sim.mobile_data_works(db)
    _user(env, "toggle_roaming")
    assert not sim.mobile_data_works(db)  # the line does not allow roaming
    db.surroundings.roaming_allowed = True
    assert sim.mobile_data_works(db)


def test_mms_rules(env: Environment) -> None:
    db = _db(env)
    assert sim.can_send_mms(db)
    _fn(env, "user", "set_wifi_calling", enabled=True, mms_over_wifi=True)
    assert not sim.can_send_mms(db)
    _user(env, "toggle_wifi_calling")
    assert sim.can_send_mms(db)
    _fn(env, "user", "remove_app_permission", app_name="messaging", permission="SMS")
    assert _user(env, "can_send_mms") == "Your messaging app cannot send MMS messages."
    granted = _user(env, "grant_app_permission", app_name="messaging", permission="sms")
    assert granted.startswith("Success. Permission 'sms' granted to app 'messaging'.\n")
    _user(env, "set_network_mode_preference", mode="2g_only")
    assert not sim.can_send_mms(db)


def test_airplane_mode_drops_wifi_and_vpn(env: Environment) -> None:
    db = _db(env)
    _user(env, "connect_vpn")
    assert _user(env, "toggle_airplane_mode") == (
        "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    )
    assert not db.device.vpn_connected and db.device.vpn_details is None
    assert _user(env, "toggle_wifi").startswith("Cannot change Wi-Fi settings while Airplane")
    _fn(env, "user", "turn_airplane_mode_off")
    assert _user(env, "toggle_wifi").startswith("Wi-Fi is now ON.")
    assert _user(env, "check_wifi_status") == "Wi-Fi is ON but not connected to any network."


def test_sync_derives_surroundings_and_payment_requests(env: Environment) -> None:
    db = _db(env)
    _fn(env, "user", "set_user_info", name="John Smith", phone_number="555-123-2002")
    assert db.surroundings.line_active and db.surroundings.roaming_allowed  # L1002 roams
    env.call("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
    assert not db.surroundings.roaming_allowed
    _fn(env, "assistant", "set_data_usage", customer_id="C1001", line_id="L1002", data_used_gb=15.0)
    assert db.surroundings.mobile_data_usage_exceeded
    env.call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 1.0})
    assert not db.surroundings.mobile_data_usage_exceeded
    sent = env.call("send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"})
    assert sent.content == "Payment request sent to the customer for bill B1002"
    request = db.surroundings.payment_request
    assert request is not None and request.bill_id == "B1002" and not request.paid
    paid = _user(env, "make_payment")
    assert paid == f"Payment of {request.amount_due} USD has been made for bill B1002."
    assert db.surroundings.payment_request is None
    bill = env.call("get_details_by_id", {"id": "B1002"}).content
    assert '"status": "Paid"' in bill


def test_sync_does_not_rerun_the_network_search(env: Environment) -> None:
    db = _db(env)
    _fn(env, "user", "set_user_info", name="John Smith", phone_number="555-123-2002")
    env.call("suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "x"})
    assert not db.surroundings.line_active
    assert db.device.network_connection_status == NetworkStatus.CONNECTED
    _user(env, "reboot_device")
    assert db.device.network_connection_status == NetworkStatus.NO_SERVICE
    env.call("resume_line", {"customer_id": "C1001", "line_id": "L1002"})
    assert db.surroundings.line_active
    assert db.device.network_connection_status == NetworkStatus.NO_SERVICE
