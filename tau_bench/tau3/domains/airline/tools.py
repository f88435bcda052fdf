"""Airline agent tools over a copy-on-write table DB (spec §4.1).

Records are the original's model dumps (dicts). Reads use `self.db[table][key]` and must
not mutate; writes go through `for_update`/`put`. Arguments are turned into the same
pydantic models as upstream (so validation error texts match), then dumped into records.
"""

from __future__ import annotations

from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.tau3.domains.airline.models import (
    AirportCode,
    Certificate,
    DirectFlight,
    FlightInfo,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
)
from tau_bench.tau3.domains.common import TRANSFER_RESULT, calculate
from tau_bench.tau3.serialise import Dumped
from tau_bench.tau3.toolkit import ToolKind, Toolkit, tool

NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"),
    ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"),
    ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"), ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)  # fmt: skip


def _as_models(items: Any, model: type[Any]) -> Any:
    """Upstream converts a list to models only when every element is a dict."""
    if all(isinstance(x, dict) for x in items):
        return [model(**x) for x in items]
    return items


def _dump(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


class AirlineTools(Toolkit):
    """The airline agent's tools, in the original's order."""

    db: EpisodeDB

    # -- lookups -------------------------------------------------------------------------
    def _user(self, user_id: Any, write: bool = False) -> dict[str, Any]:
        users = self.db["users"]
        if user_id not in users:
            raise ValueError(f"User {user_id} not found")
        return users.for_update(user_id) if write else users[user_id]  # type: ignore[no-any-return]

    def _reservation(self, reservation_id: Any, write: bool = False) -> dict[str, Any]:
        table = self.db["reservations"]
        if reservation_id not in table:
            raise ValueError(f"Reservation {reservation_id} not found")
        return table.for_update(reservation_id) if write else table[reservation_id]  # type: ignore[no-any-return]

    def _flight(self, flight_number: Any) -> dict[str, Any]:
        if flight_number not in self.db["flights"]:
            raise ValueError(f"Flight {flight_number} not found")
        return self.db["flights"][flight_number]  # type: ignore[no-any-return]

    def _instance(self, flight_number: Any, date: Any) -> dict[str, Any]:
        flight = self._flight(flight_number)
        if date not in flight["dates"]:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return flight["dates"][date]  # type: ignore[no-any-return]

    def _search_direct(
        self, date: Any, origin: Any = None, destination: Any = None, leave_after: Any = None
    ) -> list[DirectFlight]:
        out = []
        for flight in self.db["flights"].values():
            if (
                (origin is None or flight["origin"] == origin)
                and (destination is None or flight["destination"] == destination)
                and date in flight["dates"]
                and flight["dates"][date]["status"] == "available"
                and (leave_after is None or flight["scheduled_departure_time_est"] >= leave_after)
            ):
                inst = flight["dates"][date]
                out.append(
                    DirectFlight(
                        flight_number=flight["flight_number"],
                        origin=flight["origin"],
                        destination=flight["destination"],
                        status="available",
                        scheduled_departure_time_est=flight["scheduled_departure_time_est"],
                        scheduled_arrival_time_est=flight["scheduled_arrival_time_est"],
                        available_seats=inst["available_seats"],
                        prices=inst["prices"],
                    )
                )
        return out

    def _payment_for_update(self, user_id: str, payment_id: Any, total: Any) -> Payment | None:
        user = self.db["users"][user_id]
        if payment_id not in user["payment_methods"]:
            raise ValueError("Payment method not found")
        method = user["payment_methods"][payment_id]
        if method["source"] == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if method["source"] == "gift_card" and method["amount"] < total:
            raise ValueError("Gift card balance is not enough")
        if method["source"] == "gift_card":
            card = self._user(user_id, write=True)["payment_methods"][payment_id]
            card["amount"] -= total
        return Payment(payment_id=payment_id, amount=total) if total != 0 else None

    # -- tools ---------------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: str,
        cabin: str,
        flights: list[Any],
        passengers: list[Any],
        payment_methods: list[Any],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: str,
    ) -> Any:
        flights = _as_models(flights, FlightInfo)
        passengers = _as_models(passengers, Passenger)
        payment_methods = _as_models(payment_methods, Payment)
        user = self._user(user_id)
        reservation_id = next(
            (r for r in NEW_RESERVATION_IDS if r not in self.db["reservations"]), None
        )
        if reservation_id is None:
            raise ValueError("Too many reservations")
        reservation = Reservation(
            reservation_id=reservation_id,
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,  # type: ignore[arg-type]
            cabin=cabin,  # type: ignore[arg-type]
            flights=[],
            passengers=[_dump(p) for p in passengers],
            payment_history=[_dump(p) for p in payment_methods],
            created_at=NOW,
            total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages,
            insurance=insurance,  # type: ignore[arg-type]
        ).model_dump()
        total_price = 0
        booked: list[tuple[str, str]] = []
        for info in flights:
            number = info.flight_number
            flight = self._flight(number)
            inst = self._instance(number, info.date)
            if inst["status"] != "available":
                raise ValueError(f"Flight {number} not available on date {info.date}")
            if inst["available_seats"][cabin] < len(passengers):
                raise ValueError(f"Not enough seats on flight {number}")
            price = inst["prices"][cabin]
            reservation["flights"].append(
                ReservationFlight(
                    origin=flight["origin"],
                    destination=flight["destination"],
                    flight_number=number,
                    date=info.date,
                    price=price,
                ).model_dump()
            )
            booked.append((number, info.date))
            total_price += price * len(passengers)
        if insurance == "yes":
            total_price += 30 * len(passengers)
        total_price += 50 * nonfree_baggages
        methods = user["payment_methods"]
        for pm in payment_methods:
            if pm.payment_id not in methods:
                raise ValueError(f"Payment method {pm.payment_id} not found")
            method = methods[pm.payment_id]
            if method["source"] in {"gift_card", "certificate"} and method["amount"] < pm.amount:
                raise ValueError(f"Not enough balance in payment method {pm.payment_id}")
        total_payment = sum(pm.amount for pm in payment_methods)
        if total_payment != total_price:
            raise ValueError(
                f"Payment amount does not add up, total price is {total_price}, "
                f"but paid {total_payment}"
            )
        user_w = self._user(user_id, write=True)
        for pm in payment_methods:
            method = user_w["payment_methods"][pm.payment_id]
            if method["source"] == "gift_card":
                method["amount"] -= pm.amount
            elif method["source"] == "certificate":
                user_w["payment_methods"].pop(pm.payment_id)
        flights_table = self.db["flights"]
        for number, date in booked:
            flights_table.for_update(number)["dates"][date]["available_seats"][cabin] -= len(
                passengers
            )
        self.db["reservations"].put(reservation_id, reservation)
        user_w["reservations"].append(reservation_id)
        return Dumped(reservation)

    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        return calculate(expression)

    @tool(ToolKind.WRITE)
    def cancel_reservation(self, reservation_id: str) -> Any:
        reservation = self._reservation(reservation_id, write=True)
        history = reservation["payment_history"]
        refunds = [
            Payment(payment_id=p["payment_id"], amount=-p["amount"]).model_dump() for p in history
        ]
        history.extend(refunds)
        reservation["status"] = "cancelled"
        return Dumped(reservation)

    @tool(ToolKind.READ)
    def get_reservation_details(self, reservation_id: str) -> Any:
        return Dumped(self._reservation(reservation_id))

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> Any:
        return Dumped(self._user(user_id))

    @tool(ToolKind.READ)
    def list_all_airports(self) -> list[AirportCode]:
        return [AirportCode(iata=i, city=c) for i, c in AIRPORTS]

    @tool(ToolKind.READ)
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[DirectFlight]:
        return self._search_direct(date=date, origin=origin, destination=destination)

    @tool(ToolKind.READ)
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[Any]:
        results: list[Any] = []
        for first in self._search_direct(date=date, origin=origin):
            first.date = date
            date2 = (
                f"2024-05-{int(date[-2:]) + 1}"
                if "+1" in first.scheduled_arrival_time_est
                else date
            )
            for second in self._search_direct(
                date=date2,
                origin=first.destination,
                destination=destination,
                leave_after=first.scheduled_arrival_time_est,
            ):
                second.date = date2
                results.append([first, second])
        return results

    @tool(ToolKind.WRITE)
    def send_certificate(self, user_id: str, amount: int) -> str:
        user = self._user(user_id)
        for payment_id in NEW_CERTIFICATE_IDS:
            if payment_id not in user["payment_methods"]:
                cert = Certificate(id=payment_id, amount=amount, source="certificate")
                self._user(user_id, write=True)["payment_methods"][payment_id] = cert.model_dump()
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        return TRANSFER_RESULT

    @tool(ToolKind.WRITE)
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Any:
        current = self._reservation(reservation_id)
        self._user(current["user_id"])
        total_price = 50 * max(0, nonfree_baggages - current["nonfree_baggages"])
        payment = self._payment_for_update(current["user_id"], payment_id, total_price)
        reservation = self._reservation(reservation_id, write=True)
        if payment is not None:
            reservation["payment_history"].append(payment.model_dump())
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return Dumped(reservation)

    @tool(ToolKind.WRITE)
    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list[Any], payment_id: str
    ) -> Any:
        flights = _as_models(flights, FlightInfo)
        current = self._reservation(reservation_id)
        self._user(current["user_id"])
        n_passengers = len(current["passengers"])
        total_price = 0
        new_flights: list[Any] = []
        for info in flights:
            kept = next(
                (
                    f
                    for f in current["flights"]
                    if f["flight_number"] == info.flight_number
                    and f["date"] == info.date
                    and cabin == current["cabin"]
                ),
                None,
            )
            if kept:
                total_price += kept["price"] * n_passengers
                new_flights.append(kept)
                continue
            flight = self._flight(info.flight_number)
            inst = self._instance(info.flight_number, info.date)
            if inst["status"] != "available":
                raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
            if inst["available_seats"][cabin] < n_passengers:
                raise ValueError(f"Not enough seats on flight {info.flight_number}")
            segment = ReservationFlight(
                flight_number=info.flight_number,
                date=info.date,
                price=inst["prices"][cabin],
                origin=flight["origin"],
                destination=flight["destination"],
            ).model_dump()
            total_price += segment["price"] * n_passengers
            new_flights.append(segment)
        total_price -= sum(f["price"] for f in current["flights"]) * n_passengers
        payment = self._payment_for_update(current["user_id"], payment_id, total_price)
        reservation = self._reservation(reservation_id, write=True)
        if payment is not None:
            reservation["payment_history"].append(payment.model_dump())
        reservation["flights"] = [dict(f) for f in new_flights]
        reservation["cabin"] = cabin
        return Dumped(reservation)

    @tool(ToolKind.WRITE)
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> Any:
        passengers = _as_models(passengers, Passenger)
        current = self._reservation(reservation_id)
        if len(passengers) != len(current["passengers"]):
            raise ValueError("Number of passengers does not match")
        reservation = self._reservation(reservation_id, write=True)
        reservation["passengers"] = [_dump(p) for p in passengers]
        return Dumped(reservation)

    @tool(ToolKind.READ)
    def get_flight_status(self, flight_number: str, date: str) -> str:
        status: str = self._instance(flight_number, date)["status"]
        return status
