"""Stage 1a: pick a real user (seeded) and describe what they own, for the model.

The view is all the model gets to ground a scenario in: the profile, payment methods
(with balances), and orders (retail: items with their product and item ids, plus a few
available alternative variants of those products) or reservations (airline: flights with
their status on the day, passengers, payments, plus bookable direct flights on the
user's routes). A few "focus" suggestions, drawn from what this user could really ask,
keep generated scenarios varied; the model may ignore them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.targets import as_target

MAX_RESERVATIONS = 6
MAX_ORDERS = 6
MAX_FLIGHT_OPTIONS = 12
MAX_ALTERNATIVES = 4
FIRST_BOOKABLE_DAY = 16  # the policy's "now" is 2024-05-15 15:00 EST
LAST_DAY = 30
Tables = Mapping[str, Mapping[str, Any]]
FOCUS_COUNT = {Difficulty.easy: 1, Difficulty.medium: 2, Difficulty.hard: 3}


@dataclass
class UserContext:
    """One sampled user: what the model sees (`view`) and suggested intents (`focus`)."""

    domain: str  # the domain's own name (airline, retail), whatever the suite
    user_id: str
    view: dict[str, Any]
    focus: list[str] = field(default_factory=list)


def eligible_users(domain: Any) -> list[str]:
    """Users worth a scenario: retail users with a pending or delivered order, airline
    users with at least one reservation (file order, so sampling is reproducible).
    `domain`: a suite domain or a `Target`."""
    target = as_target(domain)
    users = target.tables["users"]
    if target.family == "retail":
        orders = target.tables["orders"]
        return [
            uid
            for uid, user in users.items()
            if any(
                orders.get(o, {}).get("status") in ("pending", "delivered") for o in user["orders"]
            )
        ]
    return [uid for uid, user in users.items() if user.get("reservations")]


def sample_context(
    domain: Any, rng: random.Random, difficulty: Difficulty, candidates: list[str]
) -> UserContext:
    """A seeded user and their view; `candidates` is `eligible_users(domain)`."""
    target = as_target(domain)
    user_id = rng.choice(candidates)
    if target.family == "airline":
        view, intents = _airline_view(target.tables, user_id, rng)
    else:
        view, intents = _retail_view(target.tables, user_id, rng)
    rng.shuffle(intents)
    return UserContext(target.family, user_id, view, intents[: FOCUS_COUNT[difficulty]])


def _methods(user: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(m) for m in user["payment_methods"].values()]


# ----------------------------------------------------------------------------- retail


def _retail_view(
    tables: Tables, user_id: str, rng: random.Random
) -> tuple[dict[str, Any], list[str]]:
    user = tables["users"][user_id]
    order_ids = [o for o in user["orders"] if o in tables["orders"]]
    if len(order_ids) > MAX_ORDERS:
        order_ids = sorted(rng.sample(order_ids, MAX_ORDERS), key=order_ids.index)
    orders = []
    intents: list[str] = []
    wanted_products: dict[str, set[str]] = {}
    for oid in order_ids:
        order = tables["orders"][oid]
        orders.append(
            {
                "order_id": oid,
                "status": order["status"],
                "address": order["address"],
                "items": [
                    {k: item[k] for k in ("name", "product_id", "item_id", "price", "options")}
                    for item in order["items"]
                ],
                "payment_history": order["payment_history"],
            }
        )
        if order["status"] in ("pending", "delivered"):
            for item in order["items"]:
                wanted_products.setdefault(item["product_id"], set()).add(item["item_id"])
        if order["status"] == "pending":
            intents += [
                f"cancel pending order {oid}",
                f"change the shipping address of pending order {oid}",
                f"swap an item of pending order {oid} for another option of the same product",
            ]
            if len(user["payment_methods"]) > 1:
                intents.append(f"pay pending order {oid} with another payment method")
        elif order["status"] == "delivered":
            intents += [
                f"return items of delivered order {oid}",
                f"exchange an item of delivered order {oid} for another option",
            ]
    intents.append("update the default address of the account")
    alternatives = {}
    for pid in sorted(wanted_products):
        product = tables["products"][pid]
        variants = [
            {"item_id": v["item_id"], "options": v["options"], "price": v["price"]}
            for v in product["variants"].values()
            if v["available"] and v["item_id"] not in wanted_products[pid]
        ]
        if len(variants) > MAX_ALTERNATIVES:
            variants = rng.sample(variants, MAX_ALTERNATIVES)
        alternatives[pid] = {"name": product["name"], "available_variants": variants}
    view = {
        "user_id": user_id,
        "name": user["name"],
        "email": user["email"],
        "address": user["address"],
        "payment_methods": _methods(user),
        "orders": orders,
        "alternatives": alternatives,
    }
    return view, intents


# ----------------------------------------------------------------------------- airline


def _segment(flights: Mapping[str, Any], segment: dict[str, Any]) -> dict[str, Any]:
    """A reservation's flight with its status that day (and seats/prices if bookable)."""
    record = flights.get(segment["flight_number"], {}).get("dates", {}).get(segment["date"])
    out = {**segment, "status": str(record.get("status")) if record else "unknown"}
    if record and record.get("status") == "available":
        out["current_prices"] = record["prices"]
        out["available_seats"] = record["available_seats"]
    return out


def _airline_view(
    tables: Tables, user_id: str, rng: random.Random
) -> tuple[dict[str, Any], list[str]]:
    flights = tables["flights"]
    user = tables["users"][user_id]
    rids = [r for r in user["reservations"] if r in tables["reservations"]]
    if len(rids) > MAX_RESERVATIONS:
        rids = sorted(rng.sample(rids, MAX_RESERVATIONS), key=rids.index)
    reservations = []
    intents: list[str] = []
    routes: set[tuple[str, str]] = set()
    for rid in rids:
        res = tables["reservations"][rid]
        segments = []
        for f in res["flights"]:
            routes.add((f["origin"], f["destination"]))
            segments.append(_segment(flights, f))
        reservations.append(
            {
                **{k: v for k, v in res.items() if k not in ("flights", "user_id")},
                "flights": segments,
            }
        )
        statuses = {s["status"] for s in segments}
        if res.get("status") == "cancelled" or statuses & {"landed", "flying"}:
            continue
        intents += [
            f"add checked bags to reservation {rid}",
            f"change a passenger's details on reservation {rid}",
            f"change the cabin of reservation {rid}",
        ]
        if res["cabin"] != "basic_economy":
            intents.append(f"move reservation {rid} to other flights on the same route")
        if res["cabin"] == "business" or res.get("insurance") == "yes" or "cancelled" in statuses:
            intents.append(f"cancel reservation {rid}")
        if statuses & {"delayed", "cancelled"}:
            intents.append(
                f"complain about a disrupted flight of reservation {rid} and ask for compensation"
            )
    intents.append("book a new trip")
    all_routes = sorted({(f["origin"], f["destination"]) for f in flights.values()})
    chosen = sorted(routes)
    chosen = [*rng.sample(chosen, min(2, len(chosen))), rng.choice(all_routes)]
    view = {
        "user_id": user_id,
        "name": user["name"],
        "email": user["email"],
        "dob": user["dob"],
        "membership": user["membership"],
        "address": user["address"],
        "payment_methods": _methods(user),
        "saved_passengers": user["saved_passengers"],
        "reservations": reservations,
        "bookable_direct_flights": _flight_options(flights, chosen, rng),
    }
    return view, intents


def _flight_options(
    flights: Mapping[str, Any], routes: list[tuple[str, str]], rng: random.Random
) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = []
    for origin, destination in routes:
        days = rng.sample(range(FIRST_BOOKABLE_DAY, LAST_DAY + 1), 2)
        for day in sorted(days):
            date = f"2024-05-{day:02d}"
            for f in flights.values():
                if f["origin"] != origin or f["destination"] != destination:
                    continue
                record = f["dates"].get(date)
                if not record or record["status"] != "available":
                    continue
                options.append(
                    {
                        "flight_number": f["flight_number"],
                        "origin": origin,
                        "destination": destination,
                        "date": date,
                        "departure": f["scheduled_departure_time_est"],
                        "arrival": f["scheduled_arrival_time_est"],
                        "prices": record["prices"],
                        "available_seats": record["available_seats"],
                    }
                )
    return options[:MAX_FLIGHT_OPTIONS]
