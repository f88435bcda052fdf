"""Airline constraints: the user's own reservations and payment methods, flights that
exist on the given dates with seats, coherent routes, and the policy's rules on changes,
cancellations, bags, passengers, payments and compensation certificates. τ³'s airline
policy is the same on these points but one: gold members get 4 free bags per business
passenger (`TAU3_CHECKS`)."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.sdg.problems import BAD_ARGUMENTS, INVALID_REFERENCE, POLICY

Finding = tuple[str, str]

NOW = "2024-05-15T15:00:00"
BOOKED_RECENTLY = "2024-05-14T15:00:00"  # created at or after this: within 24 hours
FLOWN = frozenset({"landed", "flying"})
MAX_PASSENGERS = 5
MAX_PAYMENTS = {"certificate": 1, "credit_card": 1, "gift_card": 3}
FREE_BAGS = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 3},
}
# τ³'s airline policy gives gold members 4 free bags per business passenger.
TAU3_FREE_BAGS = {**FREE_BAGS, "gold": {**FREE_BAGS["gold"], "business": 4}}
Allowance = Mapping[str, Mapping[str, int]]
_DATE = re.compile(r"^2024-\d{2}-\d{2}$")
_DOB = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _user_matches(user_id: str, given: Any) -> list[Finding]:
    if given != user_id:
        return [(INVALID_REFERENCE, f"user_id {given!r} is not the task's user {user_id!r}")]
    return []


def _reservation(db: EpisodeDB, user_id: str, rid: Any) -> tuple[Any, list[Finding]]:
    reservations = db["reservations"]
    if not isinstance(rid, str) or rid not in reservations:
        return None, [(INVALID_REFERENCE, f"reservation {rid!r} does not exist")]
    reservation = reservations[rid]
    if reservation.get("user_id") != user_id:
        return None, [(INVALID_REFERENCE, f"reservation {rid} belongs to another user")]
    return reservation, []


def _segment_status(db: EpisodeDB, flight: Mapping[str, Any]) -> str | None:
    record = db["flights"].get(str(flight.get("flight_number")))
    if record is None:
        return None
    date = record["dates"].get(flight.get("date"))
    return None if date is None else str(date.get("status"))


def _flown(db: EpisodeDB, reservation: Mapping[str, Any]) -> bool:
    return any(_segment_status(db, f) in FLOWN for f in reservation["flights"])


def _changeable(db: EpisodeDB, reservation: Mapping[str, Any]) -> list[Finding]:
    rid = reservation["reservation_id"]
    if reservation.get("status") == "cancelled":
        return [(POLICY, f"reservation {rid} is already cancelled")]
    if _flown(db, reservation):
        return [(POLICY, f"reservation {rid} has a segment already flown")]
    return []


def _payment(
    db: EpisodeDB, user_id: str, payment_id: Any, *, certificate_ok: bool
) -> tuple[str | None, list[Finding]]:
    methods = db["users"][user_id]["payment_methods"]
    if not isinstance(payment_id, str) or payment_id not in methods:
        return None, [(INVALID_REFERENCE, f"payment method {payment_id!r} is not the user's")]
    source = str(methods[payment_id]["source"])
    if source == "certificate" and not certificate_ok:
        return source, [(POLICY, "a travel certificate cannot pay for changes")]
    return source, []


def _check_flights(
    db: EpisodeDB, flights: Any, cabin: Any, passengers: int, kept: set[tuple[Any, Any]]
) -> list[Finding]:
    out: list[Finding] = []
    table = db["flights"]
    for flight in flights:
        number, date = flight.get("flight_number"), flight.get("date")
        if number not in table:
            out.append((INVALID_REFERENCE, f"flight {number!r} does not exist"))
            continue
        dates = table[number]["dates"]
        if date not in dates:
            out.append((INVALID_REFERENCE, f"flight {number} does not fly on {date!r}"))
            continue
        if (number, date) in kept:
            continue
        record = dates[date]
        if record["status"] != "available":
            out.append(
                (
                    INVALID_REFERENCE,
                    f"flight {number} on {date} is {record['status']}, not bookable",
                )
            )
        elif record["available_seats"].get(cabin, 0) < passengers:
            out.append(
                (INVALID_REFERENCE, f"flight {number} on {date} has no {passengers} {cabin} seats")
            )
    return out


def _route(
    db: EpisodeDB, flights: Any, origin: Any, destination: Any, flight_type: Any
) -> list[Finding]:
    """The legs must chain and go origin -> destination (and back for a round trip)."""
    table = db["flights"]
    legs = []
    for flight in flights:
        record = table.get(str(flight.get("flight_number")))
        if record is None:
            return []  # reported by _check_flights
        legs.append((record["origin"], record["destination"], flight.get("date") or ""))
    if not legs:
        return [(BAD_ARGUMENTS, "flights is empty")]
    trip = f"{flight_type} trip {origin}->{destination}"
    chained = all(a[1] == b[0] for a, b in itertools.pairwise(legs))
    dated = all(a[2] <= b[2] for a, b in itertools.pairwise(legs))
    end = destination if flight_type == "one_way" else origin
    visits = flight_type == "one_way" or any(leg[1] == destination for leg in legs[:-1])
    if not (chained and dated and legs[0][0] == origin and legs[-1][1] == end and visits):
        path = " ".join(f"{o}->{d}({day})" for o, d, day in legs)
        return [(INVALID_REFERENCE, f"flights {path} do not make a {trip}")]
    return []


def _free_bags(db: EpisodeDB, reservation: Mapping[str, Any], allowance: Allowance) -> int:
    """The policy's free bag allowance of a reservation (membership x cabin x passengers)."""
    membership = db["users"][reservation["user_id"]].get("membership", "regular")
    per_passenger = allowance.get(membership, allowance["regular"]).get(reservation["cabin"], 0)
    return per_passenger * len(reservation["passengers"])


def _passengers_ok(passengers: Any) -> list[Finding]:
    out: list[Finding] = []
    for p in passengers:
        if not (isinstance(p, dict) and p.get("first_name") and p.get("last_name")):
            out.append((BAD_ARGUMENTS, f"passenger {p!r} needs first_name and last_name"))
        elif not _DOB.match(str(p.get("dob", ""))):
            out.append((BAD_ARGUMENTS, f"passenger dob {p.get('dob')!r} is not YYYY-MM-DD"))
    return out


# ----------------------------------------------------------------------------- tools


def book_reservation(
    db: EpisodeDB, user_id: str, kw: Mapping[str, Any], allowance: Allowance = FREE_BAGS
) -> list[Finding]:
    out = _user_matches(user_id, kw["user_id"])
    if out:
        return out
    passengers, flights, cabin = kw["passengers"], kw["flights"], kw["cabin"]
    if not 1 <= len(passengers) <= MAX_PASSENGERS:
        out.append(
            (POLICY, f"a reservation has 1 to {MAX_PASSENGERS} passengers, not {len(passengers)}")
        )
    out += _passengers_ok(passengers)
    out += _check_flights(db, flights, cabin, len(passengers), set())
    out += _route(db, flights, kw["origin"], kw["destination"], kw["flight_type"])
    used: dict[str, int] = {}
    for entry in kw["payment_methods"]:
        source, found = _payment(db, user_id, entry.get("payment_id"), certificate_ok=True)
        out += found
        if source is not None:
            used[source] = used.get(source, 0) + 1
        if not isinstance(entry.get("amount"), int | float) or entry["amount"] <= 0:
            out.append((BAD_ARGUMENTS, f"payment amount {entry.get('amount')!r} must be positive"))
    for source, count in used.items():
        if count > MAX_PAYMENTS.get(source, 99):
            out.append((POLICY, f"at most {MAX_PAYMENTS[source]} {source} payment(s) per booking"))
    membership = db["users"][user_id].get("membership", "regular")
    free = allowance.get(membership, allowance["regular"]).get(cabin, 0) * len(passengers)
    total, nonfree = kw["total_baggages"], kw["nonfree_baggages"]
    if total < 0 or nonfree != max(0, total - free):
        out.append(
            (
                POLICY,
                f"{total} bags for a {membership} member in {cabin} means "
                f"{max(0, total - free)} non-free bags, not {nonfree}",
            )
        )
    return out


def cancel_reservation(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    reservation, out = _reservation(db, user_id, kw["reservation_id"])
    if reservation is None:
        return out
    out = _changeable(db, reservation)
    if out:
        return out
    eligible = (
        reservation.get("created_at", "") >= BOOKED_RECENTLY
        or reservation.get("cabin") == "business"
        or reservation.get("insurance") == "yes"
        or any(_segment_status(db, f) == "cancelled" for f in reservation["flights"])
    )
    if not eligible:
        return [
            (
                POLICY,
                f"reservation {reservation['reservation_id']} may not be cancelled "
                "(not booked in the last 24 hours, not business, no insurance, no cancelled flight)",
            )
        ]
    return []


def update_reservation_flights(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    reservation, out = _reservation(db, user_id, kw["reservation_id"])
    if reservation is None:
        return out
    out = _changeable(db, reservation)
    if out:
        return out
    flights, cabin = kw["flights"], kw["cabin"]
    old = [(f["flight_number"], f["date"]) for f in reservation["flights"]]
    new = [(f.get("flight_number"), f.get("date")) for f in flights]
    if new != old and reservation["cabin"] == "basic_economy":
        out.append((POLICY, "basic economy flights cannot be changed (only the cabin)"))
    if new == old and cabin == reservation["cabin"]:
        out.append((POLICY, "the update changes neither the flights nor the cabin"))
    kept = set(old) if cabin == reservation["cabin"] else set()
    out += _check_flights(db, flights, cabin, len(reservation["passengers"]), kept)
    out += _route(
        db, flights, reservation["origin"], reservation["destination"], reservation["flight_type"]
    )
    out += _payment(db, user_id, kw["payment_id"], certificate_ok=False)[1]
    return out


def update_reservation_baggages(
    db: EpisodeDB, user_id: str, kw: Mapping[str, Any], allowance: Allowance = FREE_BAGS
) -> list[Finding]:
    reservation, out = _reservation(db, user_id, kw["reservation_id"])
    if reservation is None:
        return out
    out = _changeable(db, reservation)
    if out:
        return out
    total, nonfree = kw["total_baggages"], kw["nonfree_baggages"]
    if not 0 <= nonfree <= total:
        out.append(
            (BAD_ARGUMENTS, f"nonfree_baggages {nonfree} must be between 0 and total {total}")
        )
    if total < reservation["total_baggages"] or nonfree < reservation["nonfree_baggages"]:
        out.append((POLICY, "checked bags can be added, not removed"))
    elif total == reservation["total_baggages"]:
        out.append((POLICY, "the update adds no bag"))
    else:
        expected = max(
            reservation["nonfree_baggages"], total - _free_bags(db, reservation, allowance)
        )
        if nonfree != expected:
            out.append(
                (
                    POLICY,
                    f"with {total} bags the free allowance leaves {expected} non-free bags, not {nonfree}",
                )
            )
    out += _payment(db, user_id, kw["payment_id"], certificate_ok=False)[1]
    return out


def update_reservation_passengers(
    db: EpisodeDB, user_id: str, kw: Mapping[str, Any]
) -> list[Finding]:
    reservation, out = _reservation(db, user_id, kw["reservation_id"])
    if reservation is None:
        return out
    out = _changeable(db, reservation)
    if out:
        return out
    passengers = kw["passengers"]
    if len(passengers) != len(reservation["passengers"]):
        out.append((POLICY, "the number of passengers cannot change"))
    out += _passengers_ok(passengers)
    if passengers == reservation["passengers"]:
        out.append((POLICY, "the update does not change the passengers"))
    return out


def send_certificate(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    out = _user_matches(user_id, kw["user_id"])
    if out:
        return out
    counts = {
        len(db["reservations"][rid]["passengers"])
        for rid in db["users"][user_id].get("reservations", [])
        if rid in db["reservations"]
    }
    allowed = sorted({50 * n for n in counts} | {100 * n for n in counts})
    if kw["amount"] not in allowed:
        return [
            (
                POLICY,
                f"a compensation certificate is $50 or $100 per passenger of one of "
                f"the user's reservations ({allowed}), not {kw['amount']}",
            )
        ]
    return []


def _own_reservation(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    return _reservation(db, user_id, kw["reservation_id"])[1]


def _same_user(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    return _user_matches(user_id, kw["user_id"])


def _search(db: EpisodeDB, user_id: str, kw: Mapping[str, Any]) -> list[Finding]:
    airports = {f["origin"] for f in db["flights"].values()}
    out = [
        (INVALID_REFERENCE, f"{kw[k]!r} is not an airport served")
        for k in ("origin", "destination")
        if kw[k] not in airports
    ]
    if not _DATE.match(str(kw["date"])):
        out.append((BAD_ARGUMENTS, f"date {kw['date']!r} is not YYYY-MM-DD in 2024"))
    return out


CHECKS = {
    "book_reservation": book_reservation,
    "cancel_reservation": cancel_reservation,
    "get_reservation_details": _own_reservation,
    "get_user_details": _same_user,
    "search_direct_flight": _search,
    "search_onestop_flight": _search,
    "send_certificate": send_certificate,
    "update_reservation_baggages": update_reservation_baggages,
    "update_reservation_flights": update_reservation_flights,
    "update_reservation_passengers": update_reservation_passengers,
}
TAU3_CHECKS: dict[str, Callable[[EpisodeDB, str, Mapping[str, Any]], list[Finding]]] = {
    **CHECKS,
    "book_reservation": functools.partial(book_reservation, allowance=TAU3_FREE_BAGS),
    "update_reservation_baggages": functools.partial(
        update_reservation_baggages, allowance=TAU3_FREE_BAGS
    ),
}
