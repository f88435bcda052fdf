"""Retail tools (spec: ../shared/specs/tau-bench-tools.md §8), in `retail/tools.json` order.

Each tool does the original's checks and operations in the original's order, on the
episode's copy-on-write DB: reads go to the shared base records, and a record is copied with
`Table.for_update` only just before it is changed. Business errors are returned strings;
anything else (bad argument types) raises, and `Env.execute` turns it into `Error: <exc>`,
which gives the original's texts because the same Python operations are performed: a list
id fails a dict lookup with `unhashable type: 'list'`, a `None` email fails `.lower()`, a
string where a list is expected is iterated character by character (`Error: 7 not found`).

Quirks reproduced (spec §9):
- Q16 `modify_pending_order_items` stores `abs(diff)` unrounded (float artefacts such as
  `382.03000000000037` reach the observation and the hash) and books a `refund` of `0` (an
  int when the item lists are empty) when the price does not change;
  `exchange_delivered_order_items` rounds its diff. Items are renamed one pair at a time,
  each pair taking the first item whose *current* id matches, so duplicates are consumed one
  by one and an item renamed by an earlier pair can be renamed again.
- Q17 `modify_pending_order_payment` leaves the order `pending` with three history entries,
  and `cancel_pending_order` then refunds every entry, the refund entry included
  (gift-card over-refund).
- Q18 failing ground-truth calls fail with the same texts and change nothing (every check
  precedes the first write).
- Q19 argument errors (unknown/missing kwargs) are produced by `Tool.bind`; `calculate`'s
  parser messages are CPython 3.11's (see `tau_bench.calculator`).
- Q20 observations are `json.dumps` with default settings (`ensure_ascii=True`, insertion
  key order); a written address is `address1, address2, city, state, country, zip`, unlike
  the data's `... city, country, state, zip`; new keys (`cancel_reason`, `exchange_*`,
  `return_*`) are appended at the end.
- Gift cards are recognised by `source == "gift_card"` for the method being charged and by
  the substring `gift_card` in the method id for refunds (cancel, old method of a payment
  change) and for the return-method check, as upstream did.
- Status comparisons are exact: `pending (item modified)` is not `pending`.

Difference from upstream (not observable in observations or hashes): the `options` object
given to a modified item is a copy of the variant's options, not the product's own object,
so the shared base DB is never aliased into an episode's records.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tau_bench.calculator import evaluate_expression
from tau_bench.db import EpisodeDB
from tau_bench.domains.tool import Tool

DOMAIN = "retail"

CANCEL_REASONS = ["no longer needed", "ordered by mistake"]


def _owner_methods(db: EpisodeDB, order: Any) -> Any:
    """The payment methods of the order's owner (a shared base object: read only)."""
    return db["users"][order["user_id"]]["payment_methods"]


def _missing_item(item_ids: Any, order: Any) -> Any:
    """The first requested id asked for more often than the order holds it, else None."""
    order_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > order_item_ids.count(item_id):
            return item_id
    return None


def _first_item(order: Any, item_id: Any) -> Any:
    """The order's first item with id `item_id` (IndexError if none, as upstream)."""
    matches = [item for item in order["items"] if item["item_id"] == item_id]
    return matches[0]


def _price_difference(db: EpisodeDB, order: Any, item_ids: Any, new_item_ids: Any) -> Any:
    """Sum of new minus old prices, pair by pair (unrounded); an error string if a new item
    is unknown or unavailable. Starts from the int 0, as upstream did."""
    products = db["products"]
    diff: Any = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = _first_item(order, item_id)
        product_id = item["product_id"]
        if not (
            new_item_id in products[product_id]["variants"]
            and products[product_id]["variants"][new_item_id]["available"]
        ):
            return f"Error: new item {new_item_id} not found or available"
        old_price = item["price"]
        new_price = products[product_id]["variants"][new_item_id]["price"]
        diff += new_price - old_price
    return diff


def _swap_checks(
    db: EpisodeDB, order_id: Any, status: str, status_error: str, item_ids: Any, new_item_ids: Any
) -> tuple[Any, Any]:
    """The checks exchange and modify-items share, in upstream's order: order exists, has
    `status`, holds the items, lists match, new variants available. Returns
    (order, unrounded price difference) or (None, error string)."""
    orders = db["orders"]
    if order_id not in orders:
        return None, "Error: order not found"
    order = orders[order_id]
    if order["status"] != status:
        return None, status_error
    missing = _missing_item(item_ids, order)
    if missing is not None:
        return None, f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return None, "Error: the number of items to be exchanged should match"
    diff = _price_difference(db, order, item_ids, new_item_ids)
    if isinstance(diff, str):
        return None, diff
    return order, diff


def calculate(db: EpisodeDB, expression: Any) -> str:
    """Evaluate an arithmetic expression; the result rounded to 2 decimals (spec §7.2)."""
    return evaluate_expression(expression)


def cancel_pending_order(db: EpisodeDB, order_id: Any, reason: Any) -> str:
    """Cancel a pending order, refunding every payment-history entry (Q17)."""
    orders = db["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be cancelled"
    if reason not in CANCEL_REASONS:
        return "Error: invalid reason"

    order = orders.for_update(order_id)
    refunds = []
    for payment in order["payment_history"]:
        payment_id = payment["payment_method_id"]
        refunds.append(
            {
                "transaction_type": "refund",
                "amount": payment["amount"],
                "payment_method_id": payment_id,
            }
        )
        if "gift_card" in payment_id:
            owner = db["users"].for_update(order["user_id"])
            method = owner["payment_methods"][payment_id]
            method["balance"] += payment["amount"]
            method["balance"] = round(method["balance"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return json.dumps(order)


def exchange_delivered_order_items(
    db: EpisodeDB, order_id: Any, item_ids: Any, new_item_ids: Any, payment_method_id: Any
) -> str:
    """Request an exchange of delivered items; records the rounded price difference."""
    order, diff = _swap_checks(
        db,
        order_id,
        "delivered",
        "Error: non-delivered order cannot be exchanged",
        item_ids,
        new_item_ids,
    )
    if order is None:
        return str(diff)
    diff = round(diff, 2)

    methods = _owner_methods(db, order)
    if payment_method_id not in methods:
        return "Error: payment method not found"
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff:
        return "Error: insufficient gift card balance to pay for the price difference"

    order = db["orders"].for_update(order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return json.dumps(order)


def find_user_id_by_email(db: EpisodeDB, email: Any) -> str:
    """The id of the first user whose email matches case-insensitively (plain string)."""
    for user_id, profile in db["users"].items():
        if profile["email"].lower() == email.lower():
            return user_id
    return "Error: user not found"


def find_user_id_by_name_zip(db: EpisodeDB, first_name: Any, last_name: Any, zip: Any) -> str:
    """The id of the first user with matching names (case-insensitive) and exact zip."""
    for user_id, profile in db["users"].items():
        if (
            profile["name"]["first_name"].lower() == first_name.lower()
            and profile["name"]["last_name"].lower() == last_name.lower()
            and profile["address"]["zip"] == zip
        ):
            return user_id
    return "Error: user not found"


def get_order_details(db: EpisodeDB, order_id: Any) -> str:
    """The order record as JSON."""
    orders = db["orders"]
    if order_id in orders:
        return json.dumps(orders[order_id])
    return "Error: order not found"


def get_product_details(db: EpisodeDB, product_id: Any) -> str:
    """The product record (with all variants) as JSON."""
    products = db["products"]
    if product_id in products:
        return json.dumps(products[product_id])
    return "Error: product not found"


def get_user_details(db: EpisodeDB, user_id: Any) -> str:
    """The user record as JSON."""
    users = db["users"]
    if user_id in users:
        return json.dumps(users[user_id])
    return "Error: user not found"


def list_all_product_types(db: EpisodeDB) -> str:
    """Product name → product id, sorted by name, as JSON."""
    product_dict = {product["name"]: product["product_id"] for product in db["products"].values()}
    return json.dumps(dict(sorted(product_dict.items())))


def modify_pending_order_address(
    db: EpisodeDB,
    order_id: Any,
    address1: Any,
    address2: Any,
    city: Any,
    state: Any,
    country: Any,
    zip: Any,
) -> str:
    """Replace a pending order's shipping address."""
    orders = db["orders"]
    if order_id not in orders:
        return "Error: order not found"
    if orders[order_id]["status"] != "pending":
        return "Error: non-pending order cannot be modified"

    order = orders.for_update(order_id)
    order["address"] = {
        "address1": address1,
        "address2": address2,
        "city": city,
        "state": state,
        "country": country,
        "zip": zip,
    }
    return json.dumps(order)


def modify_pending_order_items(
    db: EpisodeDB, order_id: Any, item_ids: Any, new_item_ids: Any, payment_method_id: Any
) -> str:
    """Swap items of a pending order for other variants; books the unrounded diff (Q16)."""
    order, diff = _swap_checks(
        db,
        order_id,
        "pending",
        "Error: non-pending order cannot be modified",
        item_ids,
        new_item_ids,
    )
    if order is None:
        return str(diff)

    methods = _owner_methods(db, order)
    if payment_method_id not in methods:
        return "Error: payment method not found"
    if methods[payment_method_id]["source"] == "gift_card" and (
        methods[payment_method_id]["balance"] < diff
    ):
        return "Error: insufficient gift card balance to pay for the new item"

    order = db["orders"].for_update(order_id)
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff > 0 else "refund",
            "amount": abs(diff),
            "payment_method_id": payment_method_id,
        }
    )
    if methods[payment_method_id]["source"] == "gift_card":
        owner = db["users"].for_update(order["user_id"])
        method = owner["payment_methods"][payment_method_id]
        method["balance"] -= diff
        method["balance"] = round(method["balance"], 2)

    products = db["products"]
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = _first_item(order, item_id)
        variant = products[item["product_id"]]["variants"][new_item_id]
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = copy.deepcopy(variant["options"])
    order["status"] = "pending (item modified)"
    return json.dumps(order)


def modify_pending_order_payment(db: EpisodeDB, order_id: Any, payment_method_id: Any) -> str:
    """Move a pending order's single payment to another method (order stays pending, Q17)."""
    orders = db["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"

    methods = _owner_methods(db, order)
    if payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) > 1 or history[0]["transaction_type"] != "payment":
        return "Error: there should be exactly one payment for a pending order"
    if history[0]["payment_method_id"] == payment_method_id:
        return "Error: the new payment method should be different from the current one"
    amount = history[0]["amount"]
    if methods[payment_method_id]["source"] == "gift_card" and (
        methods[payment_method_id]["balance"] < amount
    ):
        return "Error: insufficient gift card balance to pay for the order"

    order = orders.for_update(order_id)
    old_payment_method_id = order["payment_history"][0]["payment_method_id"]
    order["payment_history"].extend(
        [
            {
                "transaction_type": "payment",
                "amount": amount,
                "payment_method_id": payment_method_id,
            },
            {
                "transaction_type": "refund",
                "amount": amount,
                "payment_method_id": old_payment_method_id,
            },
        ]
    )
    if methods[payment_method_id]["source"] == "gift_card":
        owner = db["users"].for_update(order["user_id"])
        new_method = owner["payment_methods"][payment_method_id]
        new_method["balance"] -= amount
        new_method["balance"] = round(new_method["balance"], 2)
    if "gift_card" in old_payment_method_id:
        owner = db["users"].for_update(order["user_id"])
        old_method = owner["payment_methods"][old_payment_method_id]
        old_method["balance"] += amount
        old_method["balance"] = round(old_method["balance"], 2)
    return json.dumps(order)


def modify_user_address(
    db: EpisodeDB,
    user_id: Any,
    address1: Any,
    address2: Any,
    city: Any,
    state: Any,
    country: Any,
    zip: Any,
) -> str:
    """Replace a user's default address."""
    users = db["users"]
    if user_id not in users:
        return "Error: user not found"

    user = users.for_update(user_id)
    user["address"] = {
        "address1": address1,
        "address2": address2,
        "city": city,
        "state": state,
        "country": country,
        "zip": zip,
    }
    return json.dumps(user)


def return_delivered_order_items(
    db: EpisodeDB, order_id: Any, item_ids: Any, payment_method_id: Any
) -> str:
    """Request a return of delivered items (no refund is booked)."""
    orders = db["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be returned"

    if payment_method_id not in _owner_methods(db, order):
        return "Error: payment method not found"
    if (
        "gift_card" not in payment_method_id
        and payment_method_id != order["payment_history"][0]["payment_method_id"]
    ):
        return "Error: payment method should be either the original payment method or a gift card"
    if _missing_item(item_ids, order) is not None:
        return "Error: some item not found"

    order = orders.for_update(order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return json.dumps(order)


def think(db: EpisodeDB, thought: Any) -> str:
    """Log a thought; returns the empty string."""
    return ""


def transfer_to_human_agents(db: EpisodeDB, summary: Any) -> str:
    """Hand the conversation to a human (terminate tool)."""
    return "Transfer successful"


TOOLS: list[Tool] = [
    Tool.of(DOMAIN, calculate),
    Tool.of(DOMAIN, cancel_pending_order, writes=True),
    Tool.of(DOMAIN, exchange_delivered_order_items, writes=True),
    Tool.of(DOMAIN, find_user_id_by_email),
    Tool.of(DOMAIN, find_user_id_by_name_zip),
    Tool.of(DOMAIN, get_order_details),
    Tool.of(DOMAIN, get_product_details),
    Tool.of(DOMAIN, get_user_details),
    Tool.of(DOMAIN, list_all_product_types),
    Tool.of(DOMAIN, modify_pending_order_address, writes=True),
    Tool.of(DOMAIN, modify_pending_order_items, writes=True),
    Tool.of(DOMAIN, modify_pending_order_payment, writes=True),
    Tool.of(DOMAIN, modify_user_address, writes=True),
    Tool.of(DOMAIN, return_delivered_order_items, writes=True),
    Tool.of(DOMAIN, think),
    Tool.of(DOMAIN, transfer_to_human_agents),
]
