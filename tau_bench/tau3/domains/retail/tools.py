"""Retail agent tools over a copy-on-write table DB (spec §4.2).

Records are the original's model dumps. Each tool mutates in the same order as the
original, so partial updates before an exception persist exactly as they did there.
"""

from __future__ import annotations

import json
from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.tau3.domains.common import TRANSFER_RESULT, calculate
from tau_bench.tau3.domains.retail.models import OrderPayment, UserAddress
from tau_bench.tau3.serialise import Dumped
from tau_bench.tau3.toolkit import ToolKind, Toolkit, tool

CANCEL_REASONS = {"no longer needed", "ordered by mistake"}


def _count_check(order: dict[str, Any], item_ids: Any, message: Any) -> None:
    all_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_ids.count(item_id):
            raise ValueError(message(item_id))


def _find_item(order: dict[str, Any], item_id: Any) -> dict[str, Any]:
    item = next((i for i in order["items"] if i["item_id"] == item_id), None)
    if item is None:
        raise ValueError(f"Item {item_id} not found")
    return item


class RetailTools(Toolkit):
    """The retail agent's tools, in the original's order."""

    db: EpisodeDB

    # -- lookups -------------------------------------------------------------------------
    def _order(self, order_id: Any, write: bool = False) -> dict[str, Any]:
        orders = self.db["orders"]
        if order_id not in orders:
            raise ValueError("Order not found")
        return orders.for_update(order_id) if write else orders[order_id]  # type: ignore[no-any-return]

    def _user(self, user_id: Any, write: bool = False) -> dict[str, Any]:
        users = self.db["users"]
        if user_id not in users:
            raise ValueError("User not found")
        return users.for_update(user_id) if write else users[user_id]  # type: ignore[no-any-return]

    def _product(self, product_id: Any) -> dict[str, Any]:
        if product_id not in self.db["products"]:
            raise ValueError("Product not found")
        return self.db["products"][product_id]  # type: ignore[no-any-return]

    def _variant(self, product_id: Any, variant_id: Any) -> dict[str, Any]:
        product = self._product(product_id)
        if variant_id not in product["variants"]:
            raise ValueError("Variant not found")
        return product["variants"][variant_id]  # type: ignore[no-any-return]

    def _method(self, user_id: Any, method_id: Any, write: bool = False) -> dict[str, Any]:
        user = self._user(user_id)
        if method_id not in user["payment_methods"]:
            raise ValueError("Payment method not found")
        if write:
            user = self._user(user_id, write=True)
        return user["payment_methods"][method_id]  # type: ignore[no-any-return]

    def _price_difference(
        self, order: dict[str, Any], item_ids: Any, new_item_ids: Any, same_id_error: bool
    ) -> tuple[float | int, dict[str, Any] | None]:
        diff: float | int = 0
        variant = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            if same_id_error and item_id == new_item_id:
                raise ValueError("The new item id should be different from the old item id")
            item = _find_item(order, item_id)
            variant = self._variant(item["product_id"], new_item_id)
            if not variant["available"]:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff += variant["price"] - item["price"]
        return diff, variant

    # -- tools ---------------------------------------------------------------------------
    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        return calculate(expression)

    @tool(ToolKind.WRITE)
    def cancel_pending_order(self, order_id: str, reason: str) -> Any:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise ValueError("Invalid reason")
        refunds = []
        for payment in order["payment_history"]:
            method_id = payment["payment_method_id"]
            refunds.append(
                OrderPayment(
                    transaction_type="refund", amount=payment["amount"], payment_method_id=method_id
                ).model_dump()
            )
            user = self._user(order["user_id"])
            method = self._method(user["user_id"], method_id)
            if method["source"] == "gift_card":
                method = self._method(user["user_id"], method_id, write=True)
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order = self._order(order_id, write=True)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return Dumped(order)

    @tool(ToolKind.WRITE)
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Any:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be exchanged")
        _count_check(order, item_ids, lambda i: f"Number of {i} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match.")
        diff, _ = self._price_difference(order, item_ids, new_item_ids, same_id_error=False)
        diff = round(diff, 2)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ValueError("Insufficient gift card balance to pay for the price difference")
        order = self._order(order_id, write=True)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff
        return Dumped(order)

    @tool(ToolKind.READ)
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db["users"].items():
            if (
                user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return str(user_id)
        raise ValueError("User not found")

    @tool(ToolKind.READ)
    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db["users"].items():
            if user["email"].lower() == email.lower():
                return str(user_id)
        raise ValueError("User not found")

    @tool(ToolKind.READ)
    def get_order_details(self, order_id: str) -> Any:
        return Dumped(self._order(order_id))

    @tool(ToolKind.READ)
    def get_product_details(self, product_id: str) -> Any:
        return Dumped(self._product(product_id))

    @tool(ToolKind.READ)
    def get_item_details(self, item_id: str) -> Any:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                return Dumped(product["variants"][item_id])
        raise ValueError("Item not found")

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> Any:
        return Dumped(self._user(user_id))

    @tool(ToolKind.READ)
    def list_all_product_types(self) -> str:
        names = {p["name"]: p["product_id"] for p in self.db["products"].values()}
        return json.dumps(names, sort_keys=True)

    @tool(ToolKind.WRITE)
    def modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> Any:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ValueError("Non-pending order cannot be modified")
        address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        ).model_dump()
        order = self._order(order_id, write=True)
        order["address"] = address
        return Dumped(order)

    @tool(ToolKind.WRITE)
    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Any:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be modified")
        _count_check(order, item_ids, lambda i: f"{i} not found")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match")
        diff, variant = self._price_difference(order, item_ids, new_item_ids, same_id_error=True)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ValueError("Insufficient gift card balance to pay for the new item")
        order = self._order(order_id, write=True)
        order["payment_history"].append(
            OrderPayment(
                transaction_type="payment" if diff > 0 else "refund",
                amount=abs(diff),
                payment_method_id=payment_method_id,
            ).model_dump()
        )
        if method["source"] == "gift_card":
            method = self._method(order["user_id"], payment_method_id, write=True)
            method["balance"] = round(method["balance"] - diff, 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            item = _find_item(order, item_id)
            assert variant is not None
            item["item_id"] = new_item_id
            item["price"] = variant["price"]  # the LAST pair's variant (upstream bug)
            item["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return Dumped(order)

    @tool(ToolKind.WRITE)
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> Any:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ValueError("Non-pending order cannot be modified")
        method = self._method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ValueError("There should be exactly one payment for a pending order")
        old_id = history[0]["payment_method_id"]
        if old_id == payment_method_id:
            raise ValueError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ValueError("Insufficient gift card balance to pay for the order")
        order = self._order(order_id, write=True)
        order["payment_history"].extend(
            [
                OrderPayment(
                    transaction_type="payment", amount=amount, payment_method_id=payment_method_id
                ).model_dump(),
                OrderPayment(
                    transaction_type="refund", amount=amount, payment_method_id=old_id
                ).model_dump(),
            ]
        )
        if method["source"] == "gift_card":
            method = self._method(order["user_id"], payment_method_id, write=True)
            method["balance"] = round(method["balance"] - amount, 2)
        old = self._method(order["user_id"], old_id)
        if old["source"] == "gift_card":
            old = self._method(order["user_id"], old_id, write=True)
            old["balance"] = round(old["balance"] + amount, 2)
        return Dumped(order)

    @tool(ToolKind.WRITE)
    def modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> Any:
        self._user(user_id)
        address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        ).model_dump()
        user = self._user(user_id, write=True)
        user["address"] = address
        return Dumped(user)

    @tool(ToolKind.WRITE)
    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> Any:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        user = self._user(order["user_id"])
        method = self._method(user["user_id"], payment_method_id)
        if (
            method["source"] != "gift_card"
            and payment_method_id != order["payment_history"][0]["payment_method_id"]
        ):
            raise ValueError("Payment method should be the original payment method")
        _count_check(order, item_ids, lambda _i: "Some item not found")
        order = self._order(order_id, write=True)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return Dumped(order)

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        return TRANSFER_RESULT
