"""The telecom sync step (spec §5.6): carry the agent-side line state to the phone's world.

Runs after every successful tool call, environment function call and `set_state` — but NOT
between the gold environment's expected actions, which is why state derived here
(line_active, roaming_allowed, usage exceeded, payment requests, bills marked Paid) is stale
in the evaluator's gold user DB. It never re-runs the network search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tau_bench.tau3.domains.telecom.models import BillStatus, Customer, Line, LineStatus
from tau_bench.tau3.domains.telecom.tools import TelecomTools
from tau_bench.tau3.domains.telecom.user_models import PaymentRequest, TelecomUserDB

if TYPE_CHECKING:
    from tau_bench.tau3.environment import Environment


def sync_databases(tools: TelecomTools, user_db: TelecomUserDB) -> bool:
    """Update `user_db.surroundings` from the line of the user's phone number.

    Same lookups, order and error texts as the toolkit's helpers, written as plain loops
    (and flags assigned only when they change) because this runs after every call.
    Returns whether it changed anything (False: both DBs are exactly as before).
    """
    world = user_db.surroundings
    phone = world.phone_number
    if phone is None:
        return False
    changed = False
    db = tools.db
    for line in db.lines:
        if line.phone_number == phone:
            break
    else:
        raise ValueError(f"Line with phone number {phone} not found")
    active = line.status == LineStatus.ACTIVE
    if world.line_active is not active:
        world.line_active = active
        changed = True
    roaming = bool(line.roaming_enabled)
    if world.roaming_allowed is not roaming:
        world.roaming_allowed = roaming
        changed = True
    plan = tools._get_plan_by_id(line.plan_id)  # after the two above, as upstream
    exceeded = bool(line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb)
    if world.mobile_data_usage_exceeded is not exceeded:
        world.mobile_data_usage_exceeded = exceeded
        changed = True
    request = world.payment_request
    if request is not None and request.paid:
        changed = True  # before the call: it may raise after changing the bill
        tools._set_bill_to_paid(request.bill_id)
        world.payment_request = request = None
    if request is None:
        bills = db.bills
        first = None
        for bill_id in _customer_by_phone(db.customers, db.lines, phone).bill_ids:
            for bill in bills:
                if bill.bill_id == bill_id:
                    break
            else:
                raise ValueError(f"Bill with ID {bill_id} not found")
            if first is None and bill.status == BillStatus.AWAITING_PAYMENT:
                first = bill  # upstream looks up every bill id, even after a match
        if first is not None:
            world.payment_request = PaymentRequest(
                bill_id=first.bill_id, amount_due=first.total_due
            )
            changed = True
    return changed


def _customer_by_phone(customers: list[Customer], lines: list[Line], phone: str) -> Customer:
    """`TelecomTools.get_customer_by_phone`, inlined."""
    for customer in customers:
        if customer.phone_number == phone:
            return customer
        for line_id in customer.line_ids:
            for line in lines:
                if line.line_id == line_id:
                    break
            else:
                raise ValueError(f"Line with ID {line_id} not found")
            if line.phone_number == phone:
                return customer
    raise ValueError(f"Customer with phone number {phone} not found")


def sync(env: Environment) -> bool:
    """The domain hook the core environment calls; whether it changed anything."""
    if env.user_tools is None:
        return False
    return sync_databases(cast(TelecomTools, env.tools), cast(TelecomUserDB, env.user_tools.db))
