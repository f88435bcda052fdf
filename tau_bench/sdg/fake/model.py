"""The fake model: reads the pipeline's tagged prompt, answers like a careful model, and
makes the mistakes it is told to make (`faults`), so tests and the benchmark exercise
every rejection path through real HTTP and litellm calls. It serves v1 and τ³ domains
alike (`tau3/airline`, `tau3/retail`): τ³ gets its airline bag allowance and the
structured user-scenario instructions its prompt asks for."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from tau_bench.fakes.openai_server import ChatReply, ChatRequest
from tau_bench.sdg.constraints.airline import FREE_BAGS, TAU3_FREE_BAGS
from tau_bench.sdg.fake import airline, retail
from tau_bench.sdg.fake.plan import Call, call, describe_method
from tau_bench.sdg.targets import as_target

SCENARIO_FAULTS = (
    "malformed",  # not JSON once; the retry is fine
    "malformed_always",  # not JSON, twice
    "unknown_tool",
    "foreign_id",  # another customer's order / reservation / user id
    "invalid_item",  # an item, flight or payment id that does not exist or fit
    "missing_arg",
    "read_only",  # nothing changes
    "too_many",  # more actions than the difficulty allows
    "tool_error",  # passes the checks, but the tool refuses it
)
INSTRUCTION_FAULTS = (
    "leak",  # an internal payment id in the instruction; the retry is fine
    "ungrounded",  # an output that no tool returned; the retry is fine
    "malformed_instruction",  # not JSON once
    "bad_always",  # leaks on both attempts
)

FaultPicker = Callable[[str, dict[str, Any]], str | None]
"""(stage "scenario" | "instruction", user context view) -> a fault name or None."""


def _tags(messages: Sequence[dict[str, Any]], name: str) -> list[Any]:
    pattern = re.compile(rf"<{name}>\s*(.*?)\s*</{name}>", re.DOTALL)
    found = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for match in pattern.finditer(str(message.get("content") or "")):
            try:
                found.append(json.loads(match.group(1)))
            except json.JSONDecodeError:
                continue
    return found


class FakeModel:
    """Answers the pipeline's prompts. `faults(stage, view)` decides the mistakes."""

    def __init__(self, domain: Any, faults: FaultPicker | None = None) -> None:
        self.domain = domain
        self.target = as_target(domain)
        self.faults: FaultPicker = faults or (lambda stage, view: None)
        self.calls = 0

    def respond(self, request: ChatRequest) -> ChatReply:
        """The fake OpenAI server's reply function (`tau_bench.fakes.OpenAIServer`)."""
        return ChatReply(text=self.reply(request.messages))

    def reply(self, messages: Sequence[dict[str, Any]]) -> str:
        self.calls += 1
        requests = _tags(messages, "request")
        views = _tags(messages, "user_context")
        if not requests or not views:
            return json.dumps({"error": "no <request> / <user_context> in the prompt"})
        request: dict[str, Any] = {}
        for r in requests:
            request.update(r)
        view = views[-1]
        last_user = next(m for m in reversed(messages) if m.get("role") == "user")
        retry = "<request>" not in str(last_user.get("content"))
        if request.get("stage") == "instruction":
            fault = self.faults("instruction", view)
            if retry and fault != "bad_always":
                fault = None
            actions = _tags(messages, "actions")
            return self._instruction(view, actions[-1] if actions else [], fault)
        fault = None if request.get("stage") == "repair" else self.faults("scenario", view)
        if retry and fault != "malformed_always":
            fault = None
        return self._scenario(view, request, fault)

    # ------------------------------------------------------------------ scenarios

    def _scenario(self, view: dict[str, Any], request: dict[str, Any], fault: str | None) -> str:
        low, high = int(request.get("min_actions", 1)), int(request.get("max_actions", 1))
        rng = random.Random(f"{view['user_id']}:{low}:{high}:{request.get('focus')}")
        if self.target.family == "airline":
            allowance = TAU3_FREE_BAGS if self.target.suite == "tau3" else FREE_BAGS
            summary, actions = airline.plan(view, low, high, rng, allowance)
        else:
            summary, actions = retail.plan(view, low, high, rng)
        writes = [i for i, a in enumerate(actions) if self._writes(a["name"])]
        if fault in ("malformed", "malformed_always"):
            return f"Sure! Here is the scenario: {{'summary': {summary!r}, 'actions': " + str(
                actions
            )
        if fault and writes:
            actions = self._break(fault, view, actions, writes, high, rng)
        return json.dumps({"summary": summary, "actions": actions})

    def _writes(self, name: str) -> bool:
        return name in self.target.writes

    def _break(
        self,
        fault: str,
        view: dict[str, Any],
        actions: list[Call],
        writes: list[int],
        high: int,
        rng: random.Random,
    ) -> list[Call]:
        actions = json.loads(json.dumps(actions))
        target = actions[writes[0]]
        kwargs = target["kwargs"]
        if fault == "unknown_tool":
            target["name"] = "issue_refund"
        elif fault == "missing_arg":
            kwargs.pop(next(iter(kwargs)))
        elif fault == "read_only":
            for i in writes:
                actions[i] = call("get_user_details", user_id=view["user_id"])
        elif fault == "too_many":
            actions += [call("get_user_details", user_id=view["user_id"])] * (
                high + 2 - len(actions)
            )
        elif fault == "foreign_id":
            self._foreign(view, kwargs)
        elif fault == "invalid_item":
            self._invalid(kwargs)
        elif fault == "tool_error":
            actions[writes[0]] = self._refused(view, target, rng)
        return actions

    def _foreign(self, view: dict[str, Any], kwargs: dict[str, Any]) -> None:
        """Point the write at another customer's record (which the tool would accept)."""
        tables = self.target.tables
        me = view["user_id"]
        if "order_id" in kwargs:
            status = tables["orders"][kwargs["order_id"]]["status"]
            kwargs["order_id"] = next(
                oid
                for oid, o in tables["orders"].items()
                if o["user_id"] != me and o["status"] == status
            )
        elif "reservation_id" in kwargs:
            kwargs["reservation_id"] = next(
                rid for rid, r in tables["reservations"].items() if r["user_id"] != me
            )
        elif "user_id" in kwargs:
            kwargs["user_id"] = next(uid for uid in tables["users"] if uid != me)

    def _invalid(self, kwargs: dict[str, Any]) -> None:
        if "new_item_ids" in kwargs:
            kwargs["new_item_ids"] = ["1000000000" for _ in kwargs["new_item_ids"]]
        elif "item_ids" in kwargs:
            kwargs["item_ids"] = ["1000000000"]
        elif "flights" in kwargs:
            kwargs["flights"][0]["flight_number"] = "HAT999"
        elif "payment_method_id" in kwargs:
            kwargs["payment_method_id"] = "credit_card_0000000"
        elif "payment_id" in kwargs:
            kwargs["payment_id"] = "credit_card_0000000"
        elif "reservation_id" in kwargs:
            kwargs["reservation_id"] = "ZZZZZZ"
        elif "order_id" in kwargs:
            kwargs["order_id"] = "#W0000000"
        elif "user_id" in kwargs:
            kwargs["user_id"] = "nobody_0000"

    def _refused(self, view: dict[str, Any], target: Call, rng: random.Random) -> Call:
        """A call every check lets through but the tool refuses."""
        if self.target.family == "airline":
            wrong = airline.booking(view, rng, overpay=1)
            return wrong.action if wrong else target
        for order in view["orders"]:
            history = order["payment_history"]
            if order["status"] == "pending" and history:
                current = history[0]["payment_method_id"]
                return call(
                    "modify_pending_order_payment",
                    order_id=order["order_id"],
                    payment_method_id=current,
                )
        for order in view["orders"]:
            if order["status"] == "delivered":
                return call(
                    "cancel_pending_order", order_id=order["order_id"], reason="no longer needed"
                )
        return target

    # ------------------------------------------------------------------ instructions

    def _instruction(
        self, view: dict[str, Any], actions: list[dict[str, Any]], fault: str | None
    ) -> str:
        if fault == "malformed_instruction":
            return "instruction: You want things done."
        methods = {m["id"]: m for m in view["payment_methods"]}
        if self.target.family == "airline":
            identity = f"Your user id is {view['user_id']}."
        else:
            name = view["name"]
            identity = (
                f"You are {name['first_name']} {name['last_name']} in {view['address']['zip']}."
            )
        wants: list[str] = []
        outputs: list[str] = []
        for action in actions:
            sentence = self._want(view, action, methods)
            if sentence:
                wants.append(sentence)
            if action["name"] == "calculate" and not str(action["observation"]).startswith("Error"):
                wants.append("You want to know the total amount involved.")
                outputs.append(str(action["observation"]))
        manner = ["You are polite but brief, and you only answer what you are asked."]
        if fault in ("leak", "bad_always"):
            manner.append(f"Your payment method id is {next(iter(methods))}.")
        if fault == "ungrounded":
            outputs.append("98765.43")
        if self.target.instruction_format == "tau3":
            return json.dumps(
                {
                    "known_info": identity,
                    "reason_for_call": " ".join(wants),
                    "unknown_info": "You do not remember any internal reference numbers.",
                    "task_instructions": " ".join(manner),
                    "outputs": outputs,
                }
            )
        instruction = " ".join([identity, *wants, *manner])
        return json.dumps({"instruction": instruction, "outputs": outputs})

    def _want(self, view: dict[str, Any], action: dict[str, Any], methods: dict[str, Any]) -> str:
        name, kw = action["name"], action["kwargs"]

        def pay(key: str) -> str:
            method = methods.get(kw.get(key))
            return f"your {describe_method(method)}" if method else "your usual payment method"

        items = {i["item_id"]: i for o in view.get("orders", []) for i in o["items"]}
        variants = {
            v["item_id"]: v
            for alt in view.get("alternatives", {}).values()
            for v in alt["available_variants"]
        }

        def item_names(ids: list[str]) -> str:
            return ", ".join(items[i]["name"] if i in items else "item" for i in ids)

        def options(ids: list[str]) -> str:
            return "; ".join(
                ", ".join(f"{k} {v}" for k, v in variants[i]["options"].items())
                if i in variants
                else "another option"
                for i in ids
            )

        if name == "cancel_pending_order":
            return f"You want to cancel your order {kw['order_id']} because it is {kw['reason']}."
        if name in ("modify_pending_order_address", "modify_user_address"):
            where = f"{kw['address1']}, {kw['address2']}, {kw['city']}, {kw['state']} {kw['zip']}, {kw['country']}"
            what = (
                f"the shipping address of order {kw['order_id']}"
                if "order_id" in kw
                else "your default address"
            )
            return f"You want {what} changed to {where}."
        if name == "modify_pending_order_payment":
            return f"You want to pay for order {kw['order_id']} with {pay('payment_method_id')} instead."
        if name in ("modify_pending_order_items", "exchange_delivered_order_items"):
            verb = "swap" if name == "modify_pending_order_items" else "exchange"
            return (
                f"In order {kw['order_id']} you want to {verb} the {item_names(kw['item_ids'])} for "
                f"the one with {options(kw['new_item_ids'])}, settling the difference with {pay('payment_method_id')}."
            )
        if name == "return_delivered_order_items":
            return (
                f"You want to return the {item_names(kw['item_ids'])} from order {kw['order_id']}, "
                f"refunded to {pay('payment_method_id')}."
            )
        if name == "cancel_reservation":
            return f"You want to cancel reservation {kw['reservation_id']}; your plans changed."
        if name == "update_reservation_baggages":
            return (
                f"You want {kw['total_baggages']} checked bags in total on reservation "
                f"{kw['reservation_id']}, paying with {pay('payment_id')}."
            )
        if name == "update_reservation_flights":
            return (
                f"You want reservation {kw['reservation_id']} in {kw['cabin'].replace('_', ' ')} on the same "
                f"flights, paying with {pay('payment_id')}."
            )
        if name == "update_reservation_passengers":
            last = kw["passengers"][-1]
            return (
                f"On reservation {kw['reservation_id']} you want the last passenger replaced by "
                f"{last['first_name']} {last['last_name']}, born {last['dob']}."
            )
        if name == "send_certificate":
            return "A flight of yours was disrupted; you are upset and ask for compensation."
        if name == "book_reservation":
            flight = kw["flights"][0]
            return (
                f"You want a one-way economy trip from {kw['origin']} to {kw['destination']} on "
                f"{flight['date']} on flight {flight['flight_number']}, just you, no bags, no "
                f"insurance, paying with {pay_entry(kw, methods)}."
            )
        return ""


def pay_entry(kw: dict[str, Any], methods: dict[str, Any]) -> str:
    entry = kw["payment_methods"][0]
    method = methods.get(entry["payment_id"])
    return f"your {describe_method(method)}" if method else "your usual payment method"
