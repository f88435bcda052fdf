"""The phone simulation rules (spec §5.4), as functions over the user database.

Kept apart from the toolkit so the rules read as one unit: network search, "mobile data
works", the speed test, "MMS works" and the status bar. Comparisons use `==` against
str-enum members on purpose: tool code may store unvalidated values (a plain string or an
int) and the original's outcome for those depends on exactly these comparisons.
"""

from __future__ import annotations

from typing import Any

from tau_bench.tau3.domains.telecom.user_models import (
    APNNames,
    NetworkModePreference,
    NetworkStatus,
    NetworkTechnology,
    PerformanceLevel,
    SignalStrength,
    SimStatus,
    TelecomUserDB,
)

_PREFERRED_TECH = {
    NetworkModePreference.FOUR_G_ONLY: NetworkTechnology.FOUR_G,
    NetworkModePreference.THREE_G_ONLY: NetworkTechnology.THREE_G,
    NetworkModePreference.TWO_G_ONLY: NetworkTechnology.TWO_G,
}

_TECH_RANGE = {
    NetworkTechnology.TWO_G: (0.1, 0.4),
    NetworkTechnology.THREE_G: (1.0, 5.0),
    NetworkTechnology.FOUR_G: (10.0, 100.0),
    NetworkTechnology.FIVE_G: (50.0, 500.0),
    NetworkTechnology.NONE: (0.0, 0.0),
}

_SIGNAL_FACTOR = {
    SignalStrength.POOR: 0.2,
    SignalStrength.FAIR: 0.5,
    SignalStrength.GOOD: 0.8,
    SignalStrength.EXCELLENT: 1.0,
    SignalStrength.NONE: 0.0,
}

_SIGNAL_ICON = {
    SignalStrength.NONE: "📵 No Signal",
    SignalStrength.POOR: "📶¹ Poor",
    SignalStrength.FAIR: "📶² Fair",
    SignalStrength.GOOD: "📶³ Good",
    SignalStrength.EXCELLENT: "📶⁴ Excellent",
}


def sim_status(db: TelecomUserDB) -> Any:
    """The SIM state the phone reports: `missing` wins over the stored status."""
    device = db.device
    return SimStatus.MISSING if device.sim_card_missing else device.sim_card_status


def _set_radio(db: TelecomUserDB, status: Any, tech: Any, signal: Any) -> None:
    """Set connection status, technology and signal (only the ones that change: the
    search runs after most phone actions and pydantic assignments are not free)."""
    device = db.device
    if device.network_connection_status is not status:
        device.network_connection_status = status
    if device.network_technology_connected is not tech:
        device.network_technology_connected = tech
    if device.network_signal_strength is not signal:
        device.network_signal_strength = signal


def _no_service(db: TelecomUserDB) -> None:
    _set_radio(db, NetworkStatus.NO_SERVICE, NetworkTechnology.NONE, SignalStrength.NONE)


def network_search(db: TelecomUserDB) -> None:
    """Re-evaluate connection status, technology and signal from SIM, settings, world."""
    device, world = db.device, db.surroundings
    if sim_status(db) == SimStatus.ACTIVE:
        pref = device.network_mode_preference
        tech = NetworkTechnology.FOUR_G  # also the fallback for an unknown preference
        if pref == NetworkModePreference.FOUR_G_5G_PREFERRED:
            five_g = world.signal_strength.get(NetworkTechnology.FIVE_G, SignalStrength.NONE)
            if five_g != SignalStrength.NONE:
                tech = NetworkTechnology.FIVE_G
        else:
            for mode, mode_tech in _PREFERRED_TECH.items():
                if pref == mode:
                    tech = mode_tech
                    break
        signal = world.signal_strength.get(tech, SignalStrength.NONE)
        _set_radio(db, NetworkStatus.CONNECTED, tech, signal)
    else:
        _no_service(db)
    # All three are read (no short-circuit), as upstream: a broken APN object must fail.
    airplane = device.airplane_mode
    broken_apn = device.active_apn_settings.apn_name == APNNames.BROKEN
    if airplane or broken_apn or not world.line_active:
        _no_service(db)


def mobile_data_works(db: TelecomUserDB) -> bool:
    """Data needs radio, signal, service, roaming when abroad, the switch and quota."""
    device, world = db.device, db.surroundings
    if device.airplane_mode or device.network_signal_strength == SignalStrength.NONE:
        return False
    if device.network_connection_status == NetworkStatus.NO_SERVICE:
        return False
    if world.is_abroad and (not device.roaming_enabled or not world.roaming_allowed):
        return False
    if not device.data_enabled:
        return False
    return not world.mobile_data_usage_exceeded


def speed_test(db: TelecomUserDB) -> tuple[float | None, str]:
    """(Mbps, description), or (None, "No Connection") when mobile data does not work."""
    if not mobile_data_works(db):
        return None, "No Connection"
    device = db.device
    vpn = device.vpn_details
    poor_vpn = device.vpn_connected and vpn and vpn.server_performance == PerformanceLevel.POOR
    factor = 0.1 if poor_vpn else 1.0
    if device.data_saver_mode:
        factor *= 0.2
    low, high = _TECH_RANGE.get(device.network_technology_connected, (0.0, 0.0))
    signal = _SIGNAL_FACTOR.get(device.network_signal_strength, 0.0)
    speed = round((low + high) / 2.0 * signal * factor, 2)
    if speed < 1:
        desc = "Very Poor"
    elif speed < 5:
        desc = "Poor"
    elif speed < 25:
        desc = "Fair"
    elif speed < 100:
        desc = "Good"
    else:
        desc = "Excellent"
    return speed, desc


def can_send_mms(db: TelecomUserDB) -> bool:
    """MMS needs working data, 3G or better, no MMS-over-Wi-Fi, an MMSC URL, app perms."""
    if not mobile_data_works(db):
        return False
    device = db.device
    if device.network_technology_connected == NetworkTechnology.TWO_G:
        return False
    if device.wifi_calling_enabled and device.wifi_calling_mms_over_wifi:
        return False
    if device.active_apn_settings.mmsc_url is None:
        return False
    app = device.app_statuses.get("messaging")
    if app is None:
        return False
    return bool(app.permissions.storage and app.permissions.sms)


def status_bar(db: TelecomUserDB) -> str:
    """The status bar line shown after every write tool."""
    device = db.device
    parts: list[str] = []
    if device.airplane_mode:
        parts.append("✈️ Airplane Mode")
    else:
        parts.append(_SIGNAL_ICON.get(device.network_signal_strength, "📵 No Signal"))
        has_tech = device.network_technology_connected != NetworkTechnology.NONE
        if has_tech:
            parts.append(device.network_technology_connected.value)
        if device.data_enabled and has_tech:
            parts.append("📱 Data Enabled")
            if device.data_saver_mode:
                parts.append("🔽 Data Saver")
        else:
            parts.append("📵 Data Disabled")
    if device.wifi_enabled and device.wifi_connected:
        ssid = device.wifi_ssid
        parts.append(f"📡 Connected to {ssid}" if ssid else "📡 Enabled")
    if device.vpn_connected:
        parts.append("🔒 VPN Connected")
    parts.append(f"🔋 {device.battery_level}%")
    return " | ".join(parts)
