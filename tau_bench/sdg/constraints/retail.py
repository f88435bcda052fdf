"""Retail constraints: the user's own orders, items that are in the order, new items that
are available variants of the same product, the user's own payment methods, real
identities for the lookups, and well-formed addresses."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.sdg.problems import BAD_ARGUMENTS, INVALID_REFERENCE, POLICY

Finding = tuple[str, str]

_ZIP = re.compile(r"^\d{5}$")


def _order(db: EpisodeDB, user_id: str, order_id: Any) -> tuple[Any, list[Finding]]:
    orders = db["orders"]
    if not isinstance(order_id, str) or order_id not in orders:
        return None, [(INVALID_REFERENCE, f"order {order_id!r} does not exist")]
    order = orders[order_id]
    if order.get("user_id") != user_id:
        return None, [(INVALID_REFERENCE, f"order {order_id} belongs to another user")]
    return order, []


def _payment(db: EpisodeDB, user_id: str, payment_id: Any) -> list[Finding]:
    if payment_id not in db["users"][user_id]["payment_methods"]:
        return [(INVALID_REFERENCE, f"payment method {payment_id!r} is not the user's")]
    return []


def _items_in_order(order: Mapping[str, Any], item_ids: list[Any]) -> list[Finding]:
    if not item_ids:
        return [(BAD_ARGUMENTS, "item_ids is empty")]
    held = Counter(item["item_id"] for item in order["items"])
    wanted = Counter(item_ids)
    return [
        (INVALID_REFERENCE, f"item {item_id!r} is not in order {order['order_id']}")
        for item_id, count in wanted.items()
        if count > held.get(item_id, 0)
    ]


def _new_items(db: EpisodeDB, order: Mapping[str, Any], kw: Mapping[str, Any]) -> list[Finding]:
    item_ids, new_ids = kw["item_ids"], kw["new_item_ids"]
    if len(item_ids) != len(new_ids):
        return [(BAD_ARGUMENTS, "item_ids and new_item_ids differ in length")]
    out: list[Finding] = []
    products = db["products"]
    by_id = {item["item_id"]: item for item in order["items"]}
    for old, new in zip(item_ids, new_ids, strict=True):
        item = by_id.get(old)
        if item is None:
            continue  # reported by _items_in_order
        variants = products[item["product_id"]]["variants"]
        if new == old:
            out.append((POLICY, f"new item {new} is the item {old} itself"))
        elif new not in variants:
            out.append(
                (
                    INVALID_REFERENCE,
                    f"{new!r} is not a variant of {item['name']} ({item['product_id']})",
                )
            )
        elif not variants[new]["available"]:
            out.append((INVALID_REFERENCE, f"item {new} ({item['name']}) is not available"))
    return out


def _change_items(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    order, out = _order(db, user_id, kw["order_id"])
    if order is None:
        return out
    out = _items_in_order(order, kw["item_ids"])
    out += _new_items(db, order, kw)
    out += _payment(db, user_id, kw["payment_method_id"])
    return out


def _return_items(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    order, out = _order(db, user_id, kw["order_id"])
    if order is None:
        return out
    return _items_in_order(order, kw["item_ids"]) + _payment(db, user_id, kw["payment_method_id"])


def _order_payment(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    order, out = _order(db, user_id, kw["order_id"])
    if order is None:
        return out
    return _payment(db, user_id, kw["payment_method_id"])


def _address(kw: Mapping[str, Any]) -> list[Finding]:
    out = [
        (BAD_ARGUMENTS, f"{field} is empty")
        for field in ("address1", "city", "state", "country")
        if not str(kw[field]).strip()
    ]
    if not _ZIP.match(str(kw["zip"])):
        out.append((BAD_ARGUMENTS, f"zip {kw['zip']!r} is not 5 digits"))
    return out


def _order_address(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    order, out = _order(db, user_id, kw["order_id"])
    return out if order is None else _address(kw)


def _user_address(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    return _same_user(db, user_id, kw) or _address(kw)


def _own_order(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    return _order(db, user_id, kw["order_id"])[1]


def _same_user(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    if kw["user_id"] != user_id:
        return [
            (INVALID_REFERENCE, f"user_id {kw['user_id']!r} is not the task's user {user_id!r}")
        ]
    return []


def _by_email(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    email = str(db["users"][user_id]["email"])
    if str(kw["email"]).lower() != email.lower():
        return [(INVALID_REFERENCE, f"{kw['email']!r} is not the user's email")]
    return []


def _by_name_zip(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    user = db["users"][user_id]
    name = user["name"]
    if (
        str(kw["first_name"]).lower() != name["first_name"].lower()
        or str(kw["last_name"]).lower() != name["last_name"].lower()
        or kw["zip"] != user["address"]["zip"]
    ):
        return [(INVALID_REFERENCE, "name and zip are not the user's")]
    return []


def _product(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    if kw["product_id"] not in db["products"]:
        return [(INVALID_REFERENCE, f"product {kw['product_id']!r} does not exist")]
    return []


CHECKS = {
    "cancel_pending_order": _own_order,
    "exchange_delivered_order_items": _change_items,
    "find_user_id_by_email": _by_email,
    "find_user_id_by_name_zip": _by_name_zip,
    "get_order_details": _own_order,
    "get_product_details": _product,
    "get_user_details": _same_user,
    "modify_pending_order_address": _order_address,
    "modify_pending_order_items": _change_items,
    "modify_pending_order_payment": _order_payment,
    "modify_user_address": _user_address,
    "return_delivered_order_items": _return_items,
}
