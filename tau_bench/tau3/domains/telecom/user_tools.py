"""The telecom user toolkit: what the simulated customer can do with their phone.

Tool order is the original's (`telecom/user_tools.json`); the class is named
`TelecomUserTools` because CPython's argument-error texts name it. Write tools answer
`<message>\\nStatus Bar: <bar>`; the simulation rules live in `device.py`, and the
initialization/assertion helpers (environment functions, not tools) in `user_helpers.py`.

The VPN quirk (spec §8.1): upstream's `connect_vpn` stores a reference to ONE class-level
default VPN-details object, and `break_vpn` (an initialization action) mutates that object
to "poor", so within one upstream process every later `connect_vpn` in any environment
yields a poor VPN. The conformance vectors were made as if each task ran in a fresh
process. We keep the "shared reference" semantics inside one toolkit (one environment:
connect, break, disconnect, connect again still gives the poor object), but every toolkit
instance starts with its own pristine default, so episodes never leak into each other and
results do not depend on which tasks ran earlier in the process.
"""

from __future__ import annotations

import inspect
from typing import Any

from tau_bench.tau3.domains.telecom import device as sim
from tau_bench.tau3.domains.telecom.user_helpers import TelecomUserHelpers
from tau_bench.tau3.domains.telecom.user_models import (
    APNSettings,
    NetworkModePreference,
    NetworkStatus,
    SignalStrength,
    SimStatus,
)
from tau_bench.tau3.toolkit import ToolKind, tool

_SIM_TEXT = {
    SimStatus.ACTIVE: "Your SIM card is active and working.",
    SimStatus.MISSING: "No SIM card detected in the phone.",
    SimStatus.LOCKED_PIN: "The SIM card is locked with a PIN code.",
    SimStatus.LOCKED_PUK: "The SIM card is locked with a PUK code.",
}

_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}


def _on_off(flag: Any) -> str:
    return "ON" if flag else "OFF"


def _yes_no(flag: Any) -> str:
    return "Yes" if flag else "No"


class TelecomUserTools(TelecomUserHelpers):
    """User-side tools over a `TelecomUserDB` (the phone and its surroundings)."""

    def _bar(self, message: str) -> str:
        return f"{message}\nStatus Bar: {sim.status_bar(self.db)}"

    @tool(ToolKind.READ)
    def check_status_bar(self) -> str:
        return f"Status Bar: {sim.status_bar(self.db)}"

    @tool(ToolKind.READ)
    def check_network_status(self) -> str:
        d = self.db.device
        lines = [
            f"Airplane Mode: {_on_off(d.airplane_mode)}",
            f"SIM Card Status: {sim.sim_status(self.db).value}",
            f"Cellular Connection: {d.network_connection_status.value}",
            f"Cellular Signal: {d.network_signal_strength.value}",
            f"Cellular Network Type: {d.network_technology_connected.value}",
            f"Mobile Data Enabled: {_yes_no(d.data_enabled)}",
            f"Data Roaming Enabled: {_yes_no(d.roaming_enabled)}",
            f"Wi-Fi Radio: {_on_off(d.wifi_enabled)}",
            f"Wi-Fi Connected: {_yes_no(d.wifi_connected)}",
        ]
        if d.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {d.wifi_ssid}")
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_network_mode_preference(self) -> str:
        return f"Network Mode Preference: {self.db.device.network_mode_preference.value}"

    @tool(ToolKind.WRITE)
    def set_network_mode_preference(self, mode: Any) -> str:
        # A non-string is stored unvalidated, the search falls back to 4G, and `.value`
        # then fails on it (None reads as "invalid"): upstream's behaviour (spec §5.3).
        valid: Any = None
        try:
            valid = NetworkModePreference(mode) if isinstance(mode, str) else mode
            self.db.device.network_mode_preference = valid
            sim.network_search(self.db)
        except ValueError:
            valid = None
        if valid is None:
            options = ", ".join(m.value for m in NetworkModePreference)
            return self._bar(
                f"Failed to set network mode: '{mode}' is not a valid option. "
                f"Please use one of: {options}"
            )
        return self._bar(f"Preferred Network Mode set to: {valid.value}")

    @tool(ToolKind.READ)
    def run_speed_test(self) -> str:
        speed, desc = sim.speed_test(self.db)
        if speed is None:
            return f"Speed test failed: {desc or 'Could not determine speed'}."
        advice = _SPEED_ADVICE.get(desc, "")
        return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"

    @tool(ToolKind.WRITE)
    def toggle_airplane_mode(self) -> str:
        state = self._toggle_airplane_mode()
        return self._bar(f"Airplane Mode is now {_on_off(state)}.")

    @tool(ToolKind.READ)
    def check_sim_status(self) -> str:
        status = sim.sim_status(self.db)
        fallback = f"Unknown SIM status: {status.value}"  # built eagerly, as upstream
        return _SIM_TEXT.get(status, fallback)

    @tool(ToolKind.WRITE)
    def reseat_sim_card(self) -> str:
        self.db.device.sim_card_missing = False
        sim.network_search(self.db)
        return self._bar("SIM card re-seated successfully.")

    @tool(ToolKind.WRITE)
    def toggle_data(self) -> str:
        return self._bar(f"Mobile Data is now {_on_off(self._toggle_data())}.")

    @tool(ToolKind.WRITE)
    def toggle_roaming(self) -> str:
        return self._bar(f"Data Roaming is now {_on_off(self._toggle_roaming())}.")

    @tool(ToolKind.READ)
    def check_data_restriction_status(self) -> str:
        if self.db.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool(ToolKind.WRITE)
    def toggle_data_saver_mode(self) -> str:
        state = self._toggle_data_saver_mode()
        return self._bar(f"Data Saver Mode is now {_on_off(state)}.")

    @tool(ToolKind.READ)
    def check_apn_settings(self) -> str:
        apn = self.db.device.active_apn_settings.model_copy(deep=True)
        name = apn.apn_name.value or "Not Set"
        url = apn.mmsc_url or "Not Set"
        return (
            f"Current APN Name: {name}\nMMSC URL (for picture messages): {url}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool(ToolKind.WRITE)
    def set_apn_settings(self, apn_settings: Any) -> str:
        if isinstance(apn_settings, dict):
            apn_settings = APNSettings(**apn_settings)
        self.db.device.active_apn_settings = apn_settings  # stored before any failure
        message = f"APN settings set to: {apn_settings.apn_name.value}"
        sim.network_search(self.db)
        return self._bar(message)

    @tool(ToolKind.WRITE)
    def reset_apn_settings(self) -> str:
        self.db.device.active_apn_settings.reset_at_reboot = True
        sim.network_search(self.db)
        return self._bar("APN settings will reset at reboot.")

    @tool(ToolKind.READ)
    def check_wifi_status(self) -> str:
        d = self.db.device
        if not d.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if d.wifi_connected:
            return (
                f"Wi-Fi is ON and connected to '{d.wifi_ssid}'. "
                f"Signal strength: {d.wifi_signal_strength.value}."
            )
        return "Wi-Fi is ON but not connected to any network."

    @tool(ToolKind.WRITE)
    def toggle_wifi(self) -> str:
        d = self.db.device
        if d.airplane_mode:
            return self._bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        d.wifi_enabled = not d.wifi_enabled
        if not d.wifi_enabled:
            self._wifi_disconnect()
        return self._bar(f"Wi-Fi is now {_on_off(d.wifi_enabled)}.")

    @tool(ToolKind.READ)
    def check_wifi_calling_status(self) -> str:
        return f"Wi-Fi Calling is currently turned {_on_off(self.db.device.wifi_calling_enabled)}."

    @tool(ToolKind.WRITE)
    def toggle_wifi_calling(self) -> str:
        state = self._toggle_wifi_calling()
        return self._bar(f"Wi-Fi Calling is now {_on_off(state)}.")

    @tool(ToolKind.READ)
    def check_vpn_status(self) -> str:
        d = self.db.device
        if d.vpn_connected:
            details = d.vpn_details.model_dump() if d.vpn_details else None
            if details:
                # Python's dict repr, enum members as `<PerformanceLevel.X: 'x'>` (upstream).
                return f"VPN is ON and connected. Details: {details}"
            return "VPN is ON and connected (no specific details available)."
        if d.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool(ToolKind.WRITE)
    def connect_vpn(self) -> str:
        d = self.db.device
        if d.vpn_connected:
            return "VPN already connected."
        d.vpn_connected = True
        d.vpn_details = self.default_vpn_details  # a shared reference, see module doc
        return self._bar("VPN connected successfully.")

    @tool(ToolKind.WRITE)
    def disconnect_vpn(self) -> str:
        done = self._disconnect_vpn()
        message = (
            "VPN disconnected successfully." if done else "No active VPN connection to disconnect."
        )
        return self._bar(message)

    @tool(ToolKind.READ)
    def check_installed_apps(self) -> str:
        names = ", ".join(self.db.device.app_statuses.keys())
        return f"The following apps are installed on the phone: {names}"

    @tool(ToolKind.READ)
    def check_app_status(self, app_name: str) -> str:
        app = self.db.device.app_statuses.get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        lines = [f"Status for App: {app_name}"]
        granted = self._granted(app.permissions)
        if not granted:
            lines.append(" - Permissions: None granted.")
        else:
            lines.append(" - Permissions Granted:")
            lines.extend(f"   - {perm}" for perm in granted)
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_app_permissions(self, app_name: str) -> str:
        app = self.db.device.app_statuses.get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool(ToolKind.WRITE)
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        app = self.db.device.app_statuses.get(app_name)
        permission = permission.lower()
        if not app:
            return self._bar(f"Error. App '{app_name}' not found. Cannot grant permission.")
        available = list(app.permissions.model_dump().keys())
        if permission not in available:
            return self._bar(
                f"Error. Permission '{permission}' not tracked for app '{app_name}', "
                f"available permissions: {available}"
            )
        setattr(app.permissions, permission, True)
        return self._bar(f"Success. Permission '{permission}' granted to app '{app_name}'.")

    @tool(ToolKind.READ)
    def can_send_mms(self) -> str:
        if sim.can_send_mms(self.db):
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    @tool(ToolKind.WRITE)
    def reboot_device(self) -> str:
        d = self.db.device
        lines = []
        if d.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            d.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        d.network_connection_status = NetworkStatus.SEARCHING
        sim.network_search(self.db)
        return self._bar("\n".join(lines))

    @tool(ToolKind.READ)
    def check_payment_request(self) -> str:
        request = self.db.surroundings.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    @tool(ToolKind.WRITE)
    def make_payment(self) -> str:
        request = self.db.surroundings.payment_request
        if request is None:
            return "You do not have a payment request."
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # --- state changes shared by tools and helpers ---

    def _wifi_disconnect(self) -> None:
        d = self.db.device
        d.wifi_connected = False
        d.wifi_ssid = None
        d.wifi_signal_strength = SignalStrength.NONE

    def _toggle_airplane_mode(self) -> bool:
        d = self.db.device
        was_on = d.airplane_mode
        d.airplane_mode = not was_on
        if was_on:
            d.network_connection_status = NetworkStatus.SEARCHING
            if d.wifi_enabled:
                self._wifi_disconnect()
        else:
            self._wifi_disconnect()
            if d.vpn_connected:
                self._disconnect_vpn()
        sim.network_search(self.db)
        return bool(d.airplane_mode)

    def _toggle_data(self) -> bool:
        d = self.db.device
        d.data_enabled = not d.data_enabled
        sim.network_search(self.db)
        return d.data_enabled

    def _toggle_roaming(self) -> bool:
        d = self.db.device
        d.roaming_enabled = not d.roaming_enabled
        sim.network_search(self.db)
        return d.roaming_enabled

    def _toggle_data_saver_mode(self) -> bool:
        d = self.db.device
        d.data_saver_mode = not d.data_saver_mode
        return d.data_saver_mode

    def _toggle_wifi_calling(self) -> bool:
        d = self.db.device
        d.wifi_calling_enabled = not d.wifi_calling_enabled
        return d.wifi_calling_enabled

    def _disconnect_vpn(self) -> bool:
        d = self.db.device
        if not d.vpn_connected:
            return False
        d.vpn_connected = False
        d.vpn_details = None
        return True

    @staticmethod
    def _granted(permissions: Any) -> list[str]:
        return [
            name.replace("_", " ").lower()
            for name, allowed in permissions.model_dump().items()
            if allowed
        ]


# CPython's argument-error texts name the class that defines a method; upstream defines
# the helpers in TelecomUserTools itself, so the inherited helpers carry that name too.
for _helper in vars(TelecomUserHelpers).values():
    if inspect.isfunction(_helper):
        _helper.__qualname__ = f"TelecomUserTools.{_helper.__name__}"
