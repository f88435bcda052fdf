"""Airline tools, written from the behaviour spec (../shared/specs/tau-bench-tools.md §7).

Every tool is `fn(db, **kwargs) -> str` over a copy-on-write `EpisodeDB`: reads use the shared
base records, and a record is only taken with `Table.for_update` (or added with `Table.put`)
once every check has passed, so a call that returns an error never changes the DB (Q18).
Arguments are used exactly as given (no validation, no type conversion), and every check
reads and compares them in the spec's order, so malformed calls fail with the original's
exception texts (a KeyError `'date'`, `unhashable type: 'list'`, `'<' not supported ...`).
Sums are left folds starting at int 0 (not `sum()`, whose float algorithm changed in 3.12),
so float results are bit-identical to the original's.

Quirks reproduced here (spec §9):
- Q7   `send_certificate` returns None once the user holds the three certificate ids
       (`Env` turns that into an `Error:` observation instead of crashing).
- Q10  `search_onestop_flight` builds the second-leg date as `2024-05-<day+1>` (no zero
       padding, month fixed), compares times as plain strings, and shows the second leg's
       status/seats/prices for the *first* date while labelling it with the next date.
- Q11  `update_reservation_flights` never changes `reservation.cabin`.
- Q12  booking ids HATHAT/HATHAU/HATHAV (a fourth booking overwrites HATHAV and the user
       lists it twice); certificates are consumed whole; balances are checked per payment
       entry, not cumulatively; seat counts are never decremented.
- Q13  `cancel_reservation` cancels and refunds again an already cancelled reservation and
       never restores gift card / certificate balances.
- Q14  `get_reservation_details` answers `Error: user not found` for an unknown reservation.
- Q15  fewer non-free bags cost nothing and are not refunded; a gift card is debited by the
       cost even when it is 0.
- Q19  `calculate` reports CPython 3.11's parser messages (`(<string>, line N)`).
- Q20  observations are `json.dumps` with its defaults (`ensure_ascii=True`).
Not reproduced (documented difference): Q5, the aliasing of the caller's `passengers` /
`payment_methods` lists into the DB — `Env` hands every tool a deep copy of the arguments.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tau_bench.calculator import evaluate_expression
from tau_bench.db import EpisodeDB, Table
from tau_bench.domains.tool import Tool

DOMAIN = "airline"

_BOOKING_IDS = ("HATHAT", "HATHAU", "HATHAV")
_CREATED_AT = "2024-05-15T15:00:00"
_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
_AIRPORTS = {
    "SFO": "San Francisco",
    "JFK": "New York",
    "LAX": "Los Angeles",
    "ORD": "Chicago",
    "DFW": "Dallas",
    "DEN": "Denver",
    "SEA": "Seattle",
    "ATL": "Atlanta",
    "MIA": "Miami",
    "BOS": "Boston",
    "PHX": "Phoenix",
    "IAH": "Houston",
    "LAS": "Las Vegas",
    "MCO": "Orlando",
    "EWR": "Newark",
    "CLT": "Charlotte",
    "MSP": "Minneapolis",
    "DTW": "Detroit",
    "PHL": "Philadelphia",
    "LGA": "LaGuardia",
}


def _price_new_flight(
    flights: Table, flight: Any, cabin: Any, passengers: Any
) -> tuple[str | None, Any]:
    """Check one requested flight entry and fill in its price/origin/destination (§7.1 step 4).

    `flight` is the caller's (already deep-copied) entry; `len(passengers)` is taken only at
    the seat check, where the original took it. Returns (error, price).
    """
    flight_number = flight["flight_number"]
    if flight_number not in flights:
        return f"Error: flight {flight_number} not found", None
    flight_data = flights[flight_number]
    date = flight["date"]
    if date not in flight_data["dates"]:
        return f"Error: flight {flight_number} not found on date {date}", None
    date_data = flight_data["dates"][date]
    if date_data["status"] != "available":
        return f"Error: flight {flight_number} not available on date {date}", None
    if date_data["available_seats"][cabin] < len(passengers):
        return f"Error: not enough seats on flight {flight_number}", None
    price = date_data["prices"][cabin]
    flight["price"] = price
    flight["origin"] = flight_data["origin"]
    flight["destination"] = flight_data["destination"]
    return None, price


def book_reservation(
    db: EpisodeDB,
    user_id: Any,
    origin: Any,
    destination: Any,
    flight_type: Any,
    cabin: Any,
    flights: Any,
    passengers: Any,
    payment_methods: Any,
    total_baggages: Any,
    nonfree_baggages: Any,
    insurance: Any,
) -> str:
    """Book a reservation for a user, paying with the given payment entries (§7.1)."""
    users = db["users"]
    if user_id not in users:
        return "Error: user not found"
    user = users[user_id]
    reservations = db["reservations"]
    reservation_id = _BOOKING_IDS[0]
    if reservation_id in reservations:
        reservation_id = _BOOKING_IDS[1]
        if reservation_id in reservations:
            reservation_id = _BOOKING_IDS[2]  # taken even if it exists (Q12)
    reservation = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": copy.deepcopy(flights),
        "passengers": passengers,
        "payment_history": payment_methods,
        "created_at": _CREATED_AT,
        "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
    }

    flight_table = db["flights"]
    total: Any = 0
    for flight in reservation["flights"]:
        error, price = _price_new_flight(flight_table, flight, cabin, passengers)
        if error is not None:
            return error
        total += price * len(passengers)
    if insurance == "yes":
        total += 30 * len(passengers)
    total += 50 * nonfree_baggages

    for entry in payment_methods:
        payment_id = entry["payment_id"]
        if payment_id not in user["payment_methods"]:
            return f"Error: payment method {payment_id} not found"
        method = user["payment_methods"][payment_id]
        if method["source"] in ("gift_card", "certificate") and method["amount"] < entry["amount"]:
            return f"Error: not enough balance in payment method {payment_id}"
    paid: Any = 0
    for entry in payment_methods:
        paid = paid + entry["amount"]
    if paid != total:
        return f"Error: payment amount does not add up, total price is {total}, but paid {paid}"

    user = users.for_update(user_id)
    for entry in payment_methods:
        payment_id = entry["payment_id"]
        method = user["payment_methods"][payment_id]
        if method["source"] == "gift_card":
            method["amount"] -= entry["amount"]
        elif method["source"] == "certificate":
            del user["payment_methods"][payment_id]  # consumed whole (Q12)
    reservations.put(reservation_id, reservation)
    user["reservations"].append(reservation_id)
    return json.dumps(reservation)


_ALLOWED_CHARS = "0123456789+-*/(). "


def calculate(db: EpisodeDB, expression: Any) -> str:
    """Evaluate an arithmetic expression; the result rounded to 2 decimals, as str (§7.2)."""
    return evaluate_expression(expression)


def cancel_reservation(db: EpisodeDB, reservation_id: Any) -> str:
    """Cancel a reservation, appending a refund for every payment made so far (§7.3, Q13)."""
    reservations = db["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    reservation = reservations.for_update(reservation_id)
    refunds = [
        {"payment_id": payment["payment_id"], "amount": -payment["amount"]}
        for payment in reservation["payment_history"]
    ]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return json.dumps(reservation)


def get_reservation_details(db: EpisodeDB, reservation_id: Any) -> str:
    """The reservation record as JSON (§7.4; unknown id says `user not found`, Q14)."""
    reservations = db["reservations"]
    if reservation_id in reservations:
        return json.dumps(reservations[reservation_id])
    return "Error: user not found"


def get_user_details(db: EpisodeDB, user_id: Any) -> str:
    """The user record as JSON (§7.5)."""
    users = db["users"]
    if user_id in users:
        return json.dumps(users[user_id])
    return "Error: user not found"


def list_all_airports(db: EpisodeDB) -> str:
    """The fixed table of 20 airport codes and cities (§7.6)."""
    return json.dumps(_AIRPORTS)


def _flight_on(flight: Any, date_record: Any) -> dict[str, Any]:
    """A flight's fields except `dates`, merged with one date's record (a new dict)."""
    result = {key: value for key, value in flight.items() if key != "dates"}
    result.update(date_record)
    return result


def search_direct_flight(db: EpisodeDB, origin: Any, destination: Any, date: Any) -> str:
    """Available direct flights between two airports on a date (§7.7)."""
    results = []
    for flight in db["flights"].values():
        if flight["origin"] == origin and flight["destination"] == destination:
            dates = flight["dates"]
            if date in dates and dates[date]["status"] == "available":
                results.append(_flight_on(flight, dates[date]))
    return json.dumps(results)


def search_onestop_flight(db: EpisodeDB, origin: Any, destination: Any, date: Any) -> str:
    """Available one-stop connections, with the original's date handling (§7.8, Q10)."""
    flights = db["flights"]
    results = []
    for first in flights.values():
        if first["origin"] != origin:
            continue
        for second in flights.values():
            if second["destination"] != destination or first["destination"] != second["origin"]:
                continue
            if "+1" in first["scheduled_arrival_time_est"]:
                second_date = "2024-05-" + str(int(date[-2:]) + 1)
            else:
                second_date = date
            if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                continue
            if (
                date in first["dates"]
                and second_date in second["dates"]
                and first["dates"][date]["status"] == "available"
                and second["dates"][second_date]["status"] == "available"
            ):
                leg1 = _flight_on(first, first["dates"][date])
                leg1["date"] = date
                leg2 = _flight_on(second, second["dates"][date])  # first date's record (Q10)
                leg2["date"] = second_date
                results.append([leg1, leg2])
    return json.dumps(results)


def send_certificate(db: EpisodeDB, user_id: Any, amount: Any) -> str | None:
    """Give the user the next free certificate id with `amount` (§7.9; None after 3, Q7)."""
    users = db["users"]
    if user_id not in users:
        return "Error: user not found"
    for certificate_id in _CERTIFICATE_IDS:
        if certificate_id not in users[user_id]["payment_methods"]:
            user = users.for_update(user_id)
            user["payment_methods"][certificate_id] = {
                "source": "certificate",
                "amount": amount,
                "id": certificate_id,
            }
            return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
    return None


def think(db: EpisodeDB, thought: Any) -> str:
    """Log a thought; returns the empty string (§7.10)."""
    return ""


def transfer_to_human_agents(db: EpisodeDB, summary: Any) -> str:
    """Hand the conversation to a human agent; a terminate tool (§7.11)."""
    return "Transfer successful"


def update_reservation_baggages(
    db: EpisodeDB, reservation_id: Any, total_baggages: Any, nonfree_baggages: Any, payment_id: Any
) -> str:
    """Set a reservation's bag counts, charging 50 per extra non-free bag (§7.12, Q15)."""
    reservations = db["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    reservation = reservations[reservation_id]
    cost = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    users = db["users"]
    owner_id = reservation["user_id"]
    methods = users[owner_id]["payment_methods"]
    if payment_id not in methods:
        return "Error: payment method not found"
    source = methods[payment_id]["source"]
    if source == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if source == "gift_card" and methods[payment_id]["amount"] < cost:
        return "Error: gift card balance is not enough"

    reservation = reservations.for_update(reservation_id)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    if source == "gift_card":
        users.for_update(owner_id)["payment_methods"][payment_id]["amount"] -= cost
    if cost != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": cost})
    return json.dumps(reservation)


def update_reservation_flights(
    db: EpisodeDB, reservation_id: Any, cabin: Any, flights: Any, payment_id: Any
) -> str:
    """Replace a reservation's flights, paying or refunding the difference (§7.13, Q11)."""
    reservations = db["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    reservation = reservations[reservation_id]
    new_flights = copy.deepcopy(flights)
    count = len(reservation["passengers"])
    flight_table = db["flights"]
    total: Any = 0
    for flight in new_flights:
        kept = None
        if cabin == reservation["cabin"]:
            for existing in reservation["flights"]:
                if (
                    existing["flight_number"] == flight["flight_number"]
                    and existing["date"] == flight["date"]
                ):
                    kept = existing
                    break
        if kept is not None:
            total += kept["price"] * count
            flight["price"] = kept["price"]
            flight["origin"] = kept["origin"]
            flight["destination"] = kept["destination"]
            continue
        error, price = _price_new_flight(flight_table, flight, cabin, reservation["passengers"])
        if error is not None:
            return error
        total += price * count
    old_price: Any = 0
    for existing in reservation["flights"]:
        old_price = old_price + existing["price"]
    total -= old_price * count

    users = db["users"]
    owner_id = reservation["user_id"]
    methods = users[owner_id]["payment_methods"]
    if payment_id not in methods:
        return "Error: payment method not found"
    source = methods[payment_id]["source"]
    if source == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if source == "gift_card" and methods[payment_id]["amount"] < total:
        return "Error: gift card balance is not enough"

    if source == "gift_card":
        users.for_update(owner_id)["payment_methods"][payment_id]["amount"] -= total
    reservation = reservations.for_update(reservation_id)
    reservation["flights"] = new_flights  # the cabin is left unchanged (Q11)
    if total != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total})
    return json.dumps(reservation)


def update_reservation_passengers(db: EpisodeDB, reservation_id: Any, passengers: Any) -> str:
    """Replace a reservation's passenger list, which must keep its length (§7.14)."""
    reservations = db["reservations"]
    if reservation_id not in reservations:
        return "Error: reservation not found"
    if len(passengers) != len(reservations[reservation_id]["passengers"]):
        return "Error: number of passengers does not match"
    reservation = reservations.for_update(reservation_id)
    reservation["passengers"] = passengers
    return json.dumps(reservation)


TOOLS: list[Tool] = [
    Tool.of(DOMAIN, book_reservation, writes=True),
    Tool.of(DOMAIN, calculate),
    Tool.of(DOMAIN, cancel_reservation, writes=True),
    Tool.of(DOMAIN, get_reservation_details),
    Tool.of(DOMAIN, get_user_details),
    Tool.of(DOMAIN, list_all_airports),
    Tool.of(DOMAIN, search_direct_flight),
    Tool.of(DOMAIN, search_onestop_flight),
    Tool.of(DOMAIN, send_certificate, writes=True),
    Tool.of(DOMAIN, think),
    Tool.of(DOMAIN, transfer_to_human_agents),
    Tool.of(DOMAIN, update_reservation_baggages, writes=True),
    Tool.of(DOMAIN, update_reservation_flights, writes=True),
    Tool.of(DOMAIN, update_reservation_passengers, writes=True),
]
