"""Deterministic tau-retail task sets over the default DB (``db.build_db``), in the upstream schema.

Run ``python -m harness_gym.domains.tau_retail.generate`` to write ``harness_gym/data/tau_retail-v0.jsonl``
(the paper's set: 36 tasks over 10 templates) and ``... generate --version v1`` for
``tau_retail-v1.jsonl``, the set MDP v2 plays (``generate_mdp2.py``: requests composed of 0-4 writes in
upstream's proportions). A task file carries the tasks (gold actions, required outputs, reference plan and
flawed plans, built by ``records.make_record``); the DB itself is rebuilt from its seed at run time.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness_gym.core.task import packaged_task_file, write_jsonl
from harness_gym.domains.generation import MDP2_VERSION, VERSION, task_file
from harness_gym.domains.tau_retail.db import build_db
from harness_gym.domains.tau_retail.records import DOMAIN, REASONS, alt_variant, make_record


def _default_tasks(db) -> list[tuple[str, str, str, list, list]]:
    """(template, user_id, instruction, actions, outputs) for 36 tasks over 10 templates."""
    users, orders, products = db["users"], db["orders"], db["products"]
    out = []

    def by_status(uid, status):
        return [o for o in users[uid]["orders"] if orders[o]["status"] == status]

    def exchangeable(oid):
        for item in orders[oid]["items"]:
            alt = alt_variant(db, item["product_id"], item["item_id"])
            if alt:
                return item, alt
        return None

    def swap(
        tool: str, lookup: dict[str, Any], oid: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any], str, str]:
        """Gold actions swapping an item of order ``oid`` for another variant (``tool``: exchange or
        modify), with the item, the new variant and the order's payment method."""
        item, alt = exchangeable(oid)
        pm = orders[oid]["payment_history"][0]["payment_method_id"]
        swapped = {
            "order_id": oid,
            "item_ids": [item["item_id"]],
            "new_item_ids": [alt],
            "payment_method_id": pm,
        }
        acts = [
            lookup,
            {"name": "get_order_details", "kwargs": {"order_id": oid}},
            {"name": "get_product_details", "kwargs": {"product_id": item["product_id"]}},
            {"name": tool, "kwargs": swapped},
        ]
        return acts, item, alt, pm

    uids = sorted(users)
    templates = [
        "cancel",
        "order_address",
        "user_address",
        "return",
        "exchange",
        "modify_items",
        "modify_payment",
        "cancel_and_return",
        "exchange_and_address",
        "return_refund_total",
    ]
    cursor = 0
    for k in range(36):
        template = templates[k % len(templates)]
        for _ in range(len(uids)):
            uid = uids[cursor % len(uids)]
            cursor += 7
            u = users[uid]
            name = f"{u['name']['first_name']} {u['name']['last_name']}"
            lookup = {"name": "find_user_id_by_email", "kwargs": {"email": u["email"]}}
            pend, deliv = by_status(uid, "pending"), by_status(uid, "delivered")
            first_pm = lambda oid: orders[oid]["payment_history"][0]["payment_method_id"]  # noqa: E731
            if template == "cancel" and pend:
                reason = REASONS[k % 2]
                acts = [
                    lookup,
                    {"name": "get_order_details", "kwargs": {"order_id": pend[0]}},
                    {"name": "cancel_pending_order", "kwargs": {"order_id": pend[0], "reason": reason}},
                ]
                out.append(
                    (
                        template,
                        uid,
                        f"You are {name} ({u['email']}). Cancel order {pend[0]}: {reason}.",
                        acts,
                        [],
                    )
                )
                break
            if template in ("order_address", "user_address") and (pend or template == "user_address"):
                addr = {
                    "address1": f"{k + 7} Harbor Street",
                    "address2": f"Apt {k + 3}",
                    "city": "Portland",
                    "state": "OR",
                    "country": "USA",
                    "zip": f"{97200 + k}",
                }
                if template == "user_address":
                    acts = [lookup, {"name": "modify_user_address", "kwargs": {"user_id": uid, **addr}}]
                    text = "update your default address"
                else:
                    acts = [
                        lookup,
                        {"name": "modify_pending_order_address", "kwargs": {"order_id": pend[0], **addr}},
                    ]
                    text = f"ship order {pend[0]} to a new address"
                out.append(
                    (
                        template,
                        uid,
                        f"You are {name} ({u['email']}); {text}: {addr['address1']}, "
                        f"{addr['address2']}, Portland OR {addr['zip']}.",
                        acts,
                        [],
                    )
                )
                break
            if (
                template in ("return", "return_refund_total", "cancel_and_return")
                and deliv
                and (template != "cancel_and_return" or pend)
            ):
                oid = deliv[0]
                items = [i["item_id"] for i in orders[oid]["items"]][:2]
                gift = [m for m in u["payment_methods"] if m.startswith("gift_card")]
                pm = gift[0] if gift and k % 2 else first_pm(oid)
                acts = [
                    lookup,
                    {"name": "get_order_details", "kwargs": {"order_id": oid}},
                    {
                        "name": "return_delivered_order_items",
                        "kwargs": {"order_id": oid, "item_ids": items, "payment_method_id": pm},
                    },
                ]
                outputs: list[str] = []
                text = f"return {len(items)} item(s) of order {oid} for a refund to {pm}"
                if template == "return_refund_total":
                    prices = [i["price"] for i in orders[oid]["items"] if i["item_id"] in items]
                    expr = " + ".join(f"{p}" for p in prices)
                    acts.insert(2, {"name": "calculate", "kwargs": {"expression": expr}})
                    outputs = [str(round(sum(prices), 2))]
                    text += " and learn the total refund amount"
                if template == "cancel_and_return":
                    acts.append(
                        {
                            "name": "cancel_pending_order",
                            "kwargs": {"order_id": pend[0], "reason": REASONS[0]},
                        }
                    )
                    text += f", and cancel order {pend[0]} (no longer needed)"
                out.append((template, uid, f"You are {name} ({u['email']}); {text}.", acts, outputs))
                break
            if (
                template in ("exchange", "exchange_and_address")
                and deliv
                and exchangeable(deliv[0])
                and (template == "exchange" or pend)
            ):
                oid = deliv[0]
                acts, item, alt, pm = swap("exchange_delivered_order_items", lookup, oid)
                opts = products[item["product_id"]]["variants"][alt]["options"]
                text = f"exchange the {item['name']} in order {oid} for the {opts} variant, paying with {pm}"
                if template == "exchange_and_address":
                    addr = dict(u["address"], address1=f"{k + 40} Pine Court")
                    acts.append(
                        {"name": "modify_pending_order_address", "kwargs": {"order_id": pend[0], **addr}}
                    )
                    text += (
                        f", and send order {pend[0]} to {addr['address1']} (rest of the address unchanged)"
                    )
                out.append((template, uid, f"You are {name} ({u['email']}); {text}.", acts, []))
                break
            if template == "modify_items" and pend and exchangeable(pend[0]):
                oid = pend[0]
                acts, item, alt, pm = swap("modify_pending_order_items", lookup, oid)
                opts = products[item["product_id"]]["variants"][alt]["options"]
                out.append(
                    (
                        template,
                        uid,
                        f"You are {name} ({u['email']}); change the {item['name']} in pending "
                        f"order {oid} to the {opts} variant, settling the difference with {pm}.",
                        acts,
                        [],
                    )
                )
                break
            if template == "modify_payment" and pend:
                oid = pend[0]
                old = first_pm(oid)
                amount = orders[oid]["payment_history"][0]["amount"]
                others = [
                    m
                    for m, v in sorted(u["payment_methods"].items())
                    if m != old and (v["source"] != "gift_card" or v["balance"] >= amount)
                ]
                if others:
                    acts = [
                        lookup,
                        {"name": "get_order_details", "kwargs": {"order_id": oid}},
                        {
                            "name": "modify_pending_order_payment",
                            "kwargs": {"order_id": oid, "payment_method_id": others[0]},
                        },
                    ]
                    out.append(
                        (
                            template,
                            uid,
                            f"You are {name} ({u['email']}); pay for order {oid} with "
                            f"{others[0]} instead of {old}.",
                            acts,
                            [],
                        )
                    )
                    break
        else:
            raise RuntimeError(f"no user fits template {template}")
    return out


def generate_records() -> list[dict[str, Any]]:
    db = build_db()
    records = []
    for k, (template, uid, instruction, acts, outputs) in enumerate(_default_tasks(db)):
        split = "eval" if k % 9 < 5 else "train"
        records.append(
            make_record(db, f"{DOMAIN}-{k:03d}", split, template, uid, instruction, acts, outputs, "default")
        )
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="write a tau-retail task file")
    parser.add_argument("--version", choices=(VERSION, MDP2_VERSION), default=VERSION)
    version = parser.parse_args(argv).version
    if version == VERSION:
        write_jsonl(generate_records(), packaged_task_file(f"{DOMAIN}-v0.jsonl"))
    else:
        from harness_gym.domains.tau_retail.generate_mdp2 import generate_records as generate_v1

        write_jsonl(generate_v1(), task_file(DOMAIN, MDP2_VERSION))


if __name__ == "__main__":
    main()
