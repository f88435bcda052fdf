"""The checks that decide what becomes a task: schema, data and policy constraints, the
sandbox verdict, and the instruction checks, on real benchmark records."""

from __future__ import annotations

from typing import Any

import pytest

from tau_bench.domains import Domain
from tau_bench.sdg.answers import InstructionDraft, ProposedAction, ScenarioProposal, extract_json
from tau_bench.sdg.context import UserContext, eligible_users
from tau_bench.sdg.difficulty import Difficulty, difficulty_of
from tau_bench.sdg.instruction import final_outputs, instruction_check
from tau_bench.sdg.sandbox import Sandbox, Validation
from tau_bench.sdg.schema_check import check_call, schemas_by_name
from tau_bench.sdg.structured import parse_answer


def act(name: str, **kwargs: Any) -> ProposedAction:
    return ProposedAction(name=name, kwargs=kwargs)


def verdict(
    domain: Domain, user: str, *actions: ProposedAction, level: str = "medium"
) -> Validation:
    return Sandbox(domain).validate(user, list(actions), Difficulty(level))


def reasons(validation: Validation) -> list[str]:
    return [p.reason for p in validation.problems]


# ----------------------------------------------------------------------------- basics


def test_difficulty_ranges_count_every_action() -> None:
    assert [difficulty_of(n) for n in (0, 1, 2, 5, 6, 10, 11)] == [
        None,
        Difficulty.easy,
        Difficulty.medium,
        Difficulty.medium,
        Difficulty.hard,
        Difficulty.hard,
        None,
    ]
    assert (
        Difficulty.hard.describe() == "6 to 10 actions"
        and Difficulty.easy.describe() == "exactly 1 action"
    )


def test_json_is_read_from_fences_and_prose_but_not_guessed() -> None:
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Here you go: {"a": [1, 2]} hope it helps') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="not valid JSON"):
        extract_json("{'a': 1}")
    with pytest.raises(ValueError, match="empty"):
        extract_json("   ")


def test_answers_are_validated_by_pydantic() -> None:
    value, reason, errors = parse_answer('{"summary": "x", "actions": []}', ScenarioProposal, None)
    assert value is None and reason == "malformed" and errors[0].startswith("actions:")
    value, _, _ = parse_answer(
        '{"summary": "x", "actions": [{"name": "t", "arguments": {"a": 1}}]}',
        ScenarioProposal,
        None,
    )
    assert value is not None and value.actions[0].kwargs == {"a": 1}
    draft, reason, errors = parse_answer(
        '{"instruction": "hi"}', InstructionDraft, lambda d: ["too short"]
    )
    assert draft is None and reason == "" and errors == ["too short"]


def test_schema_check(airline: Domain) -> None:
    schemas = schemas_by_name(airline.tool_schemas)
    assert check_call(schemas, 0, "get_user_details", {"user_id": "x"}) == []
    assert check_call(schemas, 0, "refund", {})[0].reason == "unknown_tool"
    problems = check_call(
        schemas,
        2,
        "update_reservation_baggages",
        {"reservation_id": "A", "total_baggages": True, "nonfree_baggages": "1", "extra": 1},
    )
    text = " | ".join(p.message for p in problems)
    assert all(p.reason == "bad_arguments" and p.action == 2 for p in problems)
    assert "total_baggages must be integer, got bool" in text
    assert "nonfree_baggages must be integer" in text and "payment_id is required" in text
    assert "kwargs.extra is not a parameter" in text
    bad_cabin = check_call(
        schemas,
        0,
        "update_reservation_flights",
        {"reservation_id": "A", "cabin": "first", "flights": [], "payment_id": "p"},
    )
    assert "must be one of" in bad_cabin[0].message


# ----------------------------------------------------------------------------- airline

NOW = "2024-05-15"


def _reservations(airline: Domain) -> dict[str, Any]:
    return airline.base_db.tables["reservations"]


def _future(airline: Domain, res: dict[str, Any]) -> bool:
    flights = airline.base_db.tables["flights"]
    return all(
        flights[f["flight_number"]]["dates"].get(f["date"], {}).get("status") == "available"
        for f in res["flights"]
    )


def _find(airline: Domain, **want: Any) -> dict[str, Any]:
    for res in _reservations(airline).values():
        if all(res.get(k) == v for k, v in want.items()) and _future(airline, res):
            return res
    raise LookupError(want)


def _card(airline: Domain, user: str) -> str:
    methods = airline.base_db.tables["users"][user]["payment_methods"]
    return next(m for m, v in methods.items() if v["source"] == "credit_card")


def test_airline_rejects_other_users_reservations_that_the_tool_accepts(airline: Domain) -> None:
    res = _find(airline, cabin="business")
    other = next(u for u in airline.base_db.tables["users"] if u != res["user_id"])
    v = verdict(
        airline,
        other,
        act("cancel_reservation", reservation_id=res["reservation_id"]),
        level="easy",
    )
    assert (
        reasons(v) == ["invalid_reference"] and "belongs to another user" in v.problems[0].message
    )
    ok = verdict(
        airline,
        res["user_id"],
        act("cancel_reservation", reservation_id=res["reservation_id"]),
        level="easy",
    )
    assert ok.ok and ok.writes == 1 and ok.final_hash != ok.initial_hash


def test_airline_policy_on_cancellations_and_flight_changes(airline: Domain) -> None:
    strict = next(
        r
        for r in _reservations(airline).values()
        if r["cabin"] == "economy"
        and r["insurance"] == "no"
        and r["created_at"] < "2024-05-14T15"
        and _future(airline, r)
    )
    v = verdict(
        airline,
        strict["user_id"],
        act("cancel_reservation", reservation_id=strict["reservation_id"]),
        level="easy",
    )
    assert reasons(v) == ["policy"] and "may not be cancelled" in v.problems[0].message

    basic = _find(airline, cabin="basic_economy", flight_type="one_way")
    flights = airline.base_db.tables["flights"]
    leg = basic["flights"][0]
    alternative = next(
        f
        for f in flights.values()
        if f["origin"] == leg["origin"]
        and f["destination"] == leg["destination"]
        and f["flight_number"] != leg["flight_number"]
    )
    moved = [{"flight_number": alternative["flight_number"], "date": leg["date"]}] + [
        {"flight_number": f["flight_number"], "date": f["date"]} for f in basic["flights"][1:]
    ]
    v = verdict(
        airline,
        basic["user_id"],
        act(
            "update_reservation_flights",
            reservation_id=basic["reservation_id"],
            cabin="basic_economy",
            flights=moved,
            payment_id=_card(airline, basic["user_id"]),
        ),
        level="easy",
    )
    assert "basic economy flights cannot be changed (only the cabin)" in " ".join(
        p.message for p in v.problems
    )


def test_airline_bags_follow_the_allowance_and_are_never_removed(airline: Domain) -> None:
    res = _find(airline, cabin="economy")
    user = airline.base_db.tables["users"][res["user_id"]]
    free = {"regular": 1, "silver": 2, "gold": 3}[user["membership"]] * len(res["passengers"])
    total = res["total_baggages"] + 1
    right = max(res["nonfree_baggages"], total - free)
    card = (
        _card(airline, res["user_id"])
        if any(m["source"] == "credit_card" for m in user["payment_methods"].values())
        else None
    )
    if card is None:
        pytest.fail("fixture reservation owner has no credit card")
    rid = res["reservation_id"]
    wrong = verdict(
        airline,
        res["user_id"],
        act(
            "update_reservation_baggages",
            reservation_id=rid,
            total_baggages=total,
            nonfree_baggages=right + 1,
            payment_id=card,
        ),
        level="easy",
    )
    assert reasons(wrong) == ["policy"] and "free allowance" in wrong.problems[0].message
    removed = verdict(
        airline,
        res["user_id"],
        act(
            "update_reservation_baggages",
            reservation_id=rid,
            total_baggages=0,
            nonfree_baggages=0,
            payment_id=card,
        ),
        level="easy",
    )
    assert reasons(removed) == ["policy"]
    ok = verdict(
        airline,
        res["user_id"],
        act(
            "update_reservation_baggages",
            reservation_id=rid,
            total_baggages=total,
            nonfree_baggages=right,
            payment_id=card,
        ),
        level="easy",
    )
    assert ok.ok


def _bookable(airline: Domain) -> dict[str, Any]:
    for f in airline.base_db.tables["flights"].values():
        record = f["dates"].get("2024-05-20")
        if record and record["status"] == "available" and record["available_seats"]["economy"] > 0:
            return {**f, "record": record}
    raise LookupError


def test_airline_booking_checks_flights_routes_and_the_state_it_creates(airline: Domain) -> None:
    user_id = next(
        u
        for u, v in airline.base_db.tables["users"].items()
        if any(m["source"] == "credit_card" for m in v["payment_methods"].values())
    )
    user = airline.base_db.tables["users"][user_id]
    card = _card(airline, user_id)
    f = _bookable(airline)
    price = f["record"]["prices"]["economy"]
    me = {
        "first_name": user["name"]["first_name"],
        "last_name": user["name"]["last_name"],
        "dob": user["dob"],
    }
    base = dict(
        user_id=user_id,
        origin=f["origin"],
        destination=f["destination"],
        flight_type="one_way",
        cabin="economy",
        flights=[{"flight_number": f["flight_number"], "date": "2024-05-20"}],
        passengers=[me],
        payment_methods=[{"payment_id": card, "amount": price}],
        total_baggages=0,
        nonfree_baggages=0,
        insurance="no",
    )
    booked = act("book_reservation", **base)
    # a later action may use the reservation the booking created (checks read the episode)
    follow = act("get_reservation_details", reservation_id="HATHAT")
    assert verdict(airline, user_id, booked, follow).ok

    ghost = act(
        "book_reservation",
        **{**base, "flights": [{"flight_number": "HAT999", "date": "2024-05-20"}]},
    )
    assert (
        "flight 'HAT999' does not exist"
        in verdict(airline, user_id, ghost, level="easy").problems[0].message
    )
    elsewhere = act("book_reservation", **{**base, "destination": f["origin"]})
    assert (
        "do not make a one_way trip"
        in verdict(airline, user_id, elsewhere, level="easy").problems[0].message
    )
    overpaid = act(
        "book_reservation",
        **{**base, "payment_methods": [{"payment_id": card, "amount": price + 1}]},
    )
    v = verdict(airline, user_id, overpaid, level="easy")
    assert reasons(v) == ["tool_error"] and "does not add up" in v.problems[0].message
    transfer = act("transfer_to_human_agents", summary="x")
    assert reasons(verdict(airline, user_id, transfer, booked)) == ["policy"]


# ----------------------------------------------------------------------------- retail


def _order(retail: Domain, status: str) -> dict[str, Any]:
    return next(o for o in retail.base_db.tables["orders"].values() if o["status"] == status)


def test_retail_rejects_foreign_orders_wrong_variants_and_foreign_payments(retail: Domain) -> None:
    order = _order(retail, "delivered")
    user_id = order["user_id"]
    methods = retail.base_db.tables["users"][user_id]["payment_methods"]
    original = order["payment_history"][0]["payment_method_id"]
    item = order["items"][0]
    products = retail.base_db.tables["products"]
    other = next(u for u in retail.base_db.tables["users"] if u != user_id)
    ret = act(
        "return_delivered_order_items",
        order_id=order["order_id"],
        item_ids=[item["item_id"]],
        payment_method_id=original,
    )
    assert reasons(verdict(retail, other, ret, level="easy")) == ["invalid_reference"]
    assert verdict(retail, user_id, ret, level="easy").ok

    alien = next(
        v for p in products.values() if p["product_id"] != item["product_id"] for v in p["variants"]
    )
    swap = act(
        "exchange_delivered_order_items",
        order_id=order["order_id"],
        item_ids=[item["item_id"]],
        new_item_ids=[alien],
        payment_method_id=original,
    )
    assert "is not a variant of" in verdict(retail, user_id, swap, level="easy").problems[0].message
    same = act(
        "exchange_delivered_order_items",
        order_id=order["order_id"],
        item_ids=[item["item_id"]],
        new_item_ids=[item["item_id"]],
        payment_method_id=original,
    )
    assert reasons(verdict(retail, user_id, same, level="easy")) == ["policy"]
    foreign_card = next(
        m
        for u, v in retail.base_db.tables["users"].items()
        if u != user_id
        for m in v["payment_methods"]
        if m not in methods
    )
    paid = act(
        "return_delivered_order_items",
        order_id=order["order_id"],
        item_ids=[item["item_id"]],
        payment_method_id=foreign_card,
    )
    assert "is not the user's" in verdict(retail, user_id, paid, level="easy").problems[0].message


def test_retail_identity_lookups_and_addresses(retail: Domain) -> None:
    order = _order(retail, "pending")
    user_id = order["user_id"]
    user = retail.base_db.tables["users"][user_id]
    wrong_mail = act("find_user_id_by_email", email="someone@example.com")
    cancel = act("cancel_pending_order", order_id=order["order_id"], reason="no longer needed")
    assert reasons(verdict(retail, user_id, wrong_mail, cancel)) == ["invalid_reference"]
    right_mail = act("find_user_id_by_email", email=user["email"].upper())
    assert verdict(retail, user_id, right_mail, cancel).ok
    address = dict(
        address1="1 Main St", address2="", city="Austin", state="TX", country="USA", zip="7870"
    )
    v = verdict(
        retail, user_id, act("modify_user_address", user_id=user_id, **address), level="easy"
    )
    assert reasons(v) == ["bad_arguments"] and "zip" in v.problems[0].message


def test_sandbox_verdicts(retail: Domain) -> None:
    delivered = _order(retail, "delivered")
    user_id = delivered["user_id"]
    look = act("get_order_details", order_id=delivered["order_id"])
    assert reasons(verdict(retail, user_id, look, level="easy")) == ["no_change"]
    assert reasons(verdict(retail, user_id, look, look, level="easy")) == ["difficulty_mismatch"]
    refused = act("cancel_pending_order", order_id=delivered["order_id"], reason="no longer needed")
    v = verdict(retail, user_id, look, refused)
    assert reasons(v) == ["tool_error"] and v.problems[0].action == 1
    assert "non-pending order cannot be cancelled" in v.problems[0].message
    assert [a.name for a in v.executed] == ["get_order_details", "cancel_pending_order"]
    record = v.to_dict()
    assert (
        record["ok"] is False
        and record["reason"] == "tool_error"
        and len(record["observations"]) == 2
    )


# ----------------------------------------------------------------------------- instruction


def _context(retail: Domain) -> tuple[UserContext, Validation]:
    order = _order(retail, "pending")
    user_id = order["user_id"]
    user = retail.base_db.tables["users"][user_id]
    view = {
        "user_id": user_id,
        "name": user["name"],
        "email": user["email"],
        "address": user["address"],
        "payment_methods": list(user["payment_methods"].values()),
        "orders": [],
        "alternatives": {},
    }
    validation = verdict(
        retail,
        user_id,
        act("cancel_pending_order", order_id=order["order_id"], reason="ordered by mistake"),
        act("calculate", expression="1000 + 234.5"),
    )
    assert validation.ok
    return UserContext("retail", user_id, view), validation


def test_instruction_checks(retail: Domain) -> None:
    context, validation = _context(retail)
    check = instruction_check(context, validation)
    name = context.view["name"]
    who = f"You are {name['first_name']} {name['last_name']} in {context.view['address']['zip']}."
    good = InstructionDraft(
        instruction=f"{who} You want to cancel your order as you ordered it by mistake.",
        outputs=["1,234.5"],
    )
    assert check(good) == [] and final_outputs(good) == ["1234.5"]
    anonymous = InstructionDraft(
        instruction=f"Your user id is {context.user_id}. You want to cancel an order please."
    )
    assert "email, or their full name and zip code" in check(anonymous)[0]
    leaking = InstructionDraft(
        instruction=f"{who} Pay with {context.view['payment_methods'][0]['id']} for your order."
    )
    assert any("internal ids" in p for p in check(leaking))
    invented = InstructionDraft(
        instruction=f"{who} You want to cancel your order, and know the refund.", outputs=["999.99"]
    )
    assert any("appears in no observation" in p for p in check(invented))
    third = InstructionDraft(
        instruction=f"The customer {name['first_name']} {name['last_name']} ({context.view['address']['zip']}) cancels."
    )
    assert any("second person" in p for p in check(third))


def test_eligible_users_have_something_to_ask_about(airline: Domain, retail: Domain) -> None:
    users = eligible_users(retail)
    orders = retail.base_db.tables["orders"]
    assert users and all(
        any(
            orders[o]["status"] in ("pending", "delivered")
            for o in retail.base_db.tables["users"][u]["orders"]
        )
        for u in users
    )
    assert all(airline.base_db.tables["users"][u]["reservations"] for u in eligible_users(airline))
