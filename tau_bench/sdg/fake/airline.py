"""The fake model's airline scenarios, computed from the user context in the prompt."""

from __future__ import annotations

import random
from typing import Any

from tau_bench.sdg.constraints.airline import BOOKED_RECENTLY, FREE_BAGS, Allowance
from tau_bench.sdg.fake.plan import Call, Write, assemble, call, pick_writes, write_count

NEW_CABIN = {"basic_economy": "economy", "economy": "business", "business": "economy"}


def _payer(view: dict[str, Any], amount: float, *, certificate_ok: bool = False) -> str | None:
    """A credit card, else a gift card (or certificate) holding at least `amount`."""
    methods = view["payment_methods"]
    for source in ("credit_card", "gift_card") + (("certificate",) if certificate_ok else ()):
        for m in methods:
            if m["source"] == source and (source == "credit_card" or m.get("amount", 0) >= amount):
                return str(m["id"])
    return None


def _open(res: dict[str, Any]) -> bool:
    statuses = {s["status"] for s in res["flights"]}
    return res.get("status") != "cancelled" and not statuses & {"landed", "flying"}


def booking(view: dict[str, Any], rng: random.Random, overpay: int = 0) -> Write | None:
    options = [f for f in view["bookable_direct_flights"] if f["available_seats"]["economy"] >= 1]
    if not options:
        return None
    flight = rng.choice(options)
    price = flight["prices"]["economy"]
    payer = _payer(view, price, certificate_ok=True)
    if payer is None:
        return None
    name = view["name"]
    me = {"first_name": name["first_name"], "last_name": name["last_name"], "dob": view["dob"]}
    route = {"origin": flight["origin"], "destination": flight["destination"]}
    action = call(
        "book_reservation",
        user_id=view["user_id"],
        **route,
        flight_type="one_way",
        cabin="economy",
        flights=[{"flight_number": flight["flight_number"], "date": flight["date"]}],
        passengers=[me],
        payment_methods=[{"payment_id": payer, "amount": price + overpay}],
        total_baggages=0,
        nonfree_baggages=0,
        insurance="no",
    )
    search = call("search_direct_flight", **route, date=flight["date"])
    summary = f"book a one-way trip {flight['origin']}->{flight['destination']} on {flight['date']}"
    return Write("booking", summary, action, [search])


def _cabin_change(res: dict[str, Any], view: dict[str, Any], before: list[Call]) -> Write | None:
    segments = res["flights"]
    count = len(res["passengers"])
    new = NEW_CABIN[res["cabin"]]
    if not segments or any(
        "current_prices" not in s or s["available_seats"][new] < count for s in segments
    ):
        return None
    terms = [f"({s['current_prices'][new]} - {s['price']})" for s in segments]
    cost = sum(s["current_prices"][new] - s["price"] for s in segments) * count
    payer = _payer(view, cost)
    if payer is None:
        return None
    rid = res["reservation_id"]
    flights = [{"flight_number": s["flight_number"], "date": s["date"]} for s in segments]
    action = call(
        "update_reservation_flights",
        reservation_id=rid,
        cabin=new,
        flights=flights,
        payment_id=payer,
    )
    calc = call("calculate", expression=f"({' + '.join(terms)}) * {count}")
    return Write(rid, f"move reservation {rid} to {new}", action, before, [calc])


def candidates(
    view: dict[str, Any], rng: random.Random, allowance: Allowance = FREE_BAGS
) -> list[Write]:
    out: list[Write] = []
    saved = view["saved_passengers"]
    for res in view["reservations"]:
        rid = res["reservation_id"]
        before = [call("get_reservation_details", reservation_id=rid)]
        statuses = {s["status"] for s in res["flights"]}
        count = len(res["passengers"])
        if statuses & {"delayed", "cancelled"} and (
            view["membership"] in ("silver", "gold")
            or res.get("insurance") == "yes"
            or res["cabin"] == "business"
        ):
            amount = (100 if "cancelled" in statuses else 50) * count
            out.append(
                Write(
                    "certificate",
                    f"get compensation for reservation {rid}",
                    call("send_certificate", user_id=view["user_id"], amount=amount),
                    before,
                )
            )
        if not _open(res):
            continue
        payer = _payer(view, 50)
        if payer:
            total = res["total_baggages"] + 1
            free = allowance[view["membership"]][res["cabin"]] * count
            nonfree = max(res["nonfree_baggages"], total - free)
            bags = call(
                "update_reservation_baggages",
                reservation_id=rid,
                total_baggages=total,
                nonfree_baggages=nonfree,
                payment_id=payer,
            )
            out.append(Write(rid, f"add a bag to reservation {rid}", bags, before))
        change = _cabin_change(res, view, before)
        if change:
            out.append(change)
        newcomers = [p for p in saved if p not in res["passengers"]]
        if newcomers:
            passengers = [*res["passengers"][:-1], dict(rng.choice(newcomers))]
            out.append(
                Write(
                    rid,
                    f"change a passenger of reservation {rid}",
                    call(
                        "update_reservation_passengers", reservation_id=rid, passengers=passengers
                    ),
                    before,
                )
            )
        if (
            res.get("created_at", "") >= BOOKED_RECENTLY
            or res["cabin"] == "business"
            or res.get("insurance") == "yes"
            or "cancelled" in statuses
        ):
            out.append(
                Write(
                    rid,
                    f"cancel reservation {rid}",
                    call("cancel_reservation", reservation_id=rid),
                    before,
                )
            )
    book = booking(view, rng)
    if book:
        out.append(book)
    return out


def plan(
    view: dict[str, Any],
    low: int,
    high: int,
    rng: random.Random,
    allowance: Allowance = FREE_BAGS,
) -> tuple[str, list[Call]]:
    """A scenario for the user of `view`; `allowance`: the policy's free bags (v1 or τ³)."""
    writes = pick_writes(candidates(view, rng, allowance), write_count(high, rng), rng)
    written = {w.key for w in writes}
    first = [call("get_user_details", user_id=view["user_id"])]
    extra = [
        call("get_reservation_details", reservation_id=r["reservation_id"])
        for r in view["reservations"]
        if r["reservation_id"] not in written
    ]
    extra.append(call("list_all_airports"))
    extra += [
        call(
            "search_direct_flight", origin=f["origin"], destination=f["destination"], date=f["date"]
        )
        for f in view["bookable_direct_flights"]
    ]
    actions = assemble(first, writes, extra, low, high, rng)
    name = view["name"]
    who = f"{name['first_name']} {name['last_name']}"
    return f"{who} wants to " + " and ".join(w.summary for w in writes) + ".", actions
