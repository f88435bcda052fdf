"""The fake model's retail scenarios, computed from the user context in the prompt."""

from __future__ import annotations

import random
from typing import Any

from tau_bench.sdg.fake.plan import Call, Write, assemble, call, pick_writes, write_count

REASONS = ("no longer needed", "ordered by mistake")


def _methods(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in view["payment_methods"]}


def _payer(view: dict[str, Any], amount: float, prefer: str | None = None) -> str | None:
    """A payment method for `amount`: `prefer` if usable, else a card/PayPal, else a gift card."""
    methods = _methods(view)

    def usable(m: dict[str, Any]) -> bool:
        return m["source"] != "gift_card" or float(m.get("balance", 0)) >= amount

    if prefer in methods and usable(methods[prefer]):
        return prefer
    ranked = sorted(methods.values(), key=lambda m: (m["source"] == "gift_card", m["id"]))
    return next((m["id"] for m in ranked if usable(m)), None)


def _alternative(view: dict[str, Any], item: dict[str, Any], rng: random.Random) -> Any:
    variants = view["alternatives"].get(item["product_id"], {}).get("available_variants", [])
    return rng.choice(variants) if variants else None


def _new_address(view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    home = view["address"]
    return {
        "address1": f"{rng.randint(10, 999)} Maple Avenue",
        "address2": f"Apt {rng.randint(1, 40)}",
        "city": home["city"],
        "state": home["state"],
        "country": "USA",
        "zip": home["zip"],
    }


def candidates(view: dict[str, Any], rng: random.Random) -> list[Write]:
    out: list[Write] = []
    for order in view["orders"]:
        oid, items, history = order["order_id"], order["items"], order["payment_history"]
        details = call("get_order_details", order_id=oid)
        original = history[0]["payment_method_id"] if history else None
        if order["status"] == "pending":
            out.append(
                Write(
                    oid,
                    f"cancel pending order {oid}",
                    call("cancel_pending_order", order_id=oid, reason=rng.choice(REASONS)),
                    [details],
                )
            )
            out.append(
                Write(
                    oid,
                    f"ship pending order {oid} elsewhere",
                    call("modify_pending_order_address", order_id=oid, **_new_address(view, rng)),
                    [details],
                )
            )
            if len(history) == 1:
                others = [m for m in _methods(view) if m != original]
                payer = _payer(view, history[0]["amount"], rng.choice(others)) if others else None
                if payer and payer != original:
                    out.append(
                        Write(
                            oid,
                            f"pay pending order {oid} another way",
                            call(
                                "modify_pending_order_payment",
                                order_id=oid,
                                payment_method_id=payer,
                            ),
                            [details],
                        )
                    )
            for item in items:
                variant = _alternative(view, item, rng)
                payer = _payer(view, variant["price"] - item["price"]) if variant else None
                if variant and payer:
                    out.append(
                        Write(
                            oid,
                            f"swap the {item['name']} of pending order {oid}",
                            call(
                                "modify_pending_order_items",
                                order_id=oid,
                                item_ids=[item["item_id"]],
                                new_item_ids=[variant["item_id"]],
                                payment_method_id=payer,
                            ),
                            [details, call("get_product_details", product_id=item["product_id"])],
                        )
                    )
                    break
        elif order["status"] == "delivered" and items:
            chosen = rng.sample(items, rng.randint(1, min(2, len(items))))
            gift_cards = [m for m, v in _methods(view).items() if v["source"] == "gift_card"]
            refund = original if original in _methods(view) else next(iter(gift_cards), None)
            if refund:
                prices = " + ".join(str(i["price"]) for i in chosen)
                out.append(
                    Write(
                        oid,
                        f"return items of delivered order {oid}",
                        call(
                            "return_delivered_order_items",
                            order_id=oid,
                            item_ids=[i["item_id"] for i in chosen],
                            payment_method_id=refund,
                        ),
                        [details],
                        [call("calculate", expression=prices)] if len(chosen) > 1 else [],
                    )
                )
            for item in items:
                variant = _alternative(view, item, rng)
                diff = round(variant["price"] - item["price"], 2) if variant else 0.0
                payer = _payer(view, diff, original) if variant else None
                if variant and payer:
                    out.append(
                        Write(
                            oid,
                            f"exchange the {item['name']} of delivered order {oid}",
                            call(
                                "exchange_delivered_order_items",
                                order_id=oid,
                                item_ids=[item["item_id"]],
                                new_item_ids=[variant["item_id"]],
                                payment_method_id=payer,
                            ),
                            [details, call("get_product_details", product_id=item["product_id"])],
                        )
                    )
                    break
    out.append(
        Write(
            "user",
            "move to a new default address",
            call("modify_user_address", user_id=view["user_id"], **_new_address(view, rng)),
        )
    )
    return out


def plan(view: dict[str, Any], low: int, high: int, rng: random.Random) -> tuple[str, list[Call]]:
    writes = pick_writes(candidates(view, rng), write_count(high, rng), rng)
    name = view["name"]
    first = [
        call(
            "find_user_id_by_name_zip",
            first_name=name["first_name"],
            last_name=name["last_name"],
            zip=view["address"]["zip"],
        )
    ]
    written = {w.key for w in writes}
    extra: list[Call] = [call("get_user_details", user_id=view["user_id"])]
    extra += [
        call("get_order_details", order_id=o["order_id"])
        for o in view["orders"]
        if o["order_id"] not in written
    ]
    extra.append(call("list_all_product_types"))
    products = sorted({i["product_id"] for o in view["orders"] for i in o["items"]})
    extra += [call("get_product_details", product_id=p) for p in products]
    actions = assemble(first, writes, extra, low, high, rng)
    who = f"{name['first_name']} {name['last_name']}"
    return f"{who} wants to " + " and ".join(w.summary for w in writes) + ".", actions
