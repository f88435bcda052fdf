"""Environment functions of the telecom user toolkit: scenario set-up and assertions.

Initialization actions (`set_user_info`, `break_vpn`, `turn_data_off`, …) and env
assertions (`assert_can_send_mms`, …) call these by name; the agent and the user
simulator cannot (they are not tools). The `turn_*` helpers toggle and toggle again when
the result is not the wanted state, so each toggle's side effects happen, as upstream.
The toggles themselves are defined by the toolkit subclass (`TelecomUserTools`).
"""

from __future__ import annotations

from typing import Any

from tau_bench.tau3.domains.telecom import device as sim
from tau_bench.tau3.domains.telecom.user_models import (
    APNNames,
    NetworkStatus,
    PerformanceLevel,
    SimStatus,
    TelecomUserDB,
    VpnDetails,
)
from tau_bench.tau3.toolkit import IdSource, Toolkit


def default_vpn_details() -> VpnDetails:
    """The VPN every `connect_vpn` attaches (one object per toolkit, see user_tools)."""
    return VpnDetails(
        server_address="192.168.1.1",
        protocol="OpenVPN",
        server_performance=PerformanceLevel.EXCELLENT,
    )


class TelecomUserHelpers(Toolkit):
    """Base of `TelecomUserTools`: the db, the VPN default and the helper functions."""

    db: TelecomUserDB

    def __init__(self, db: TelecomUserDB, ids: IdSource | None = None) -> None:
        super().__init__(db, ids)
        self._default_vpn: VpnDetails | None = None

    @property
    def default_vpn_details(self) -> VpnDetails:
        """This toolkit's one VPN-details object (made on first use)."""
        if self._default_vpn is None:
            self._default_vpn = default_vpn_details()
        return self._default_vpn

    # Implemented by TelecomUserTools; declared for the helpers below.
    def _toggle_airplane_mode(self) -> bool:
        raise NotImplementedError

    def _toggle_data(self) -> bool:
        raise NotImplementedError

    def _toggle_roaming(self) -> bool:
        raise NotImplementedError

    def _toggle_data_saver_mode(self) -> bool:
        raise NotImplementedError

    def _toggle_wifi_calling(self) -> bool:
        raise NotImplementedError

    def connect_vpn(self) -> str:
        raise NotImplementedError

    # --- scenario set-up ---

    def set_user_info(self, name: str, phone_number: str) -> None:
        self.db.surroundings.name = name
        self.db.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.db.surroundings.is_abroad = abroad

    def simulate_network_search(self) -> None:
        sim.network_search(self.db)

    def turn_airplane_mode_on(self) -> str:
        if not self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.db.device.sim_card_missing = True
        sim.network_search(self.db)
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: str) -> str:
        if mode == "pin":
            self.db.device.sim_card_status = SimStatus.LOCKED_PIN
        elif mode == "puk":
            self.db.device.sim_card_status = SimStatus.LOCKED_PUK
        sim.network_search(self.db)
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.db.device.data_enabled = True  # no network search, as upstream
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._toggle_data():
            self._toggle_data()
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        if not self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        if self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.db.device.active_apn_settings.apn_name = APNNames.BROKEN
        sim.network_search(self.db)
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.db.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def break_vpn(self) -> str:
        """Connect and make the (shared default) VPN object poor: slow mobile data."""
        self.connect_vpn()
        details: Any = self.db.device.vpn_details
        details.server_performance = PerformanceLevel.POOR
        return "VPN connection broken."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        if self.db.device.wifi_calling_enabled != enabled:
            self._toggle_wifi_calling()
        message = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.db.device.wifi_calling_mms_over_wifi = mms_over_wifi
            message += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return message

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.db.device.app_statuses.get(app_name)
        permission = permission.lower()
        if not app:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if not hasattr(app.permissions, permission):
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(app.permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # --- assertions ---

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return bool(self.db.device.airplane_mode == expected_status)

    def assert_service_status(self, expected_status: str) -> bool:
        return bool(self.db.device.network_connection_status == NetworkStatus(expected_status))

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return sim.mobile_data_works(self.db) == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return bool(self.db.device.roaming_enabled == expected_status)

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return bool(self.db.device.data_saver_mode == expected_status)

    def assert_internet_speed(
        self, expected_speed: float, expected_desc: str | None = None
    ) -> bool:
        speed, desc = sim.speed_test(self.db)
        value = speed or 0.0
        if expected_desc is None:
            return value >= expected_speed
        return value >= expected_speed and desc.lower() == expected_desc.lower()

    def assert_internet_not_excellent(self) -> bool:
        _, desc = sim.speed_test(self.db)
        return desc.lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return sim.can_send_mms(self.db) == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return bool(self.db.surroundings.mobile_data_usage_exceeded == expected_status)
