"""Deterministic retail DB + task set in the upstream tau-bench schema, and the upstream-data loader.

Run ``python -m harness_gym.domains.tau_retail.generate`` to write ``harness_gym/data/tau_retail-v0.jsonl``.
The default DB (60 users, 150 orders, 20 products) is rebuilt from ``random.Random(0)`` by ``build_db``;
the task file carries the tasks (gold actions, required outputs, reference plan and flawed plans).
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

from harness_gym.core.task import TaskFileError, packaged_task_file, write_jsonl
from harness_gym.domains.base import N_EVAL, N_TRAIN
from harness_gym.domains.generation import task_record
from harness_gym.domains.tau_retail.tools import RESPOND, WRITE_TOOLS
from harness_gym.domains.tau_retail.verifier import CRITERIA, artifact_scores, render_plan
from harness_gym.domains.upstream_files import read_json, read_jsonl

DOMAIN = "tau_retail"

PRODUCTS = {
    "Desk Lamp": {"color": ["black", "white", "silver"], "brightness": ["low", "medium", "high"]},
    "Hiking Boots": {"size": ["8", "9", "10", "11"], "material": ["leather", "synthetic"]},
    "Water Bottle": {"capacity": ["500ml", "750ml", "1000ml"], "color": ["blue", "red", "green"]},
    "Backpack": {"color": ["black", "grey", "navy"], "size": ["small", "medium", "large"]},
    "Wireless Earbuds": {"color": ["black", "white"], "battery life": ["6 hours", "8 hours", "10 hours"]},
    "Office Chair": {"material": ["mesh", "fabric", "leather"], "color": ["black", "gray"]},
    "T-Shirt": {"size": ["S", "M", "L", "XL"], "color": ["red", "blue", "black"]},
    "Coffee Maker": {"capacity": ["4 cups", "8 cups", "12 cups"], "type": ["drip", "espresso"]},
    "Yoga Mat": {"thickness": ["4mm", "6mm", "8mm"], "color": ["purple", "green", "pink"]},
    "Mechanical Keyboard": {"switch type": ["linear", "tactile", "clicky"], "backlight": ["none", "RGB"]},
    "Smart Watch": {"color": ["black", "gold", "silver"], "band": ["leather", "silicone"]},
    "Bluetooth Speaker": {"color": ["blue", "black", "red"], "water resistance": ["yes", "no"]},
    "Electric Kettle": {"capacity": ["1L", "1.5L", "2L"], "material": ["glass", "steel"]},
    "Running Shoes": {"size": ["7", "8", "9", "10"], "color": ["white", "black", "yellow"]},
    "Sunglasses": {"frame": ["plastic", "metal"], "lens": ["polarized", "non-polarized"]},
    "Garden Hose": {"length": ["25ft", "50ft", "100ft"], "material": ["rubber", "vinyl"]},
    "Notebook": {"size": ["A4", "A5"], "cover": ["hard", "soft"], "pages": ["100", "200"]},
    "Tea Kettle": {"material": ["ceramic", "stainless steel"], "capacity": ["1 liter", "2 liters"]},
    "Skateboard": {"deck": ["maple", "bamboo"], "length": ["28 inch", "31 inch", "34 inch"]},
    "Wall Clock": {"diameter": ["10 inches", "12 inches"], "style": ["modern", "rustic", "digital"]},
}
FIRST = ["Ava", "Liam", "Mia", "Noah", "Zoe", "Omar", "Ivy", "Raj", "Lena", "Hugo", "Nina", "Yuki"]
LAST = ["Garcia", "Okafor", "Silva", "Novak", "Khan", "Moreau", "Berg", "Tanaka", "Rossi", "Patel"]
CITIES = [("Austin", "TX"), ("Denver", "CO"), ("Boston", "MA"), ("Seattle", "WA"), ("Phoenix", "AZ")]
STREETS = ["Oak Street", "Maple Avenue", "Lakeview Drive", "Hillcrest Road", "Elm Lane", "River Road"]
STATUSES = ["pending", "delivered", "processed", "cancelled", "pending", "delivered"]
REASONS = ("no longer needed", "ordered by mistake")


def _id(rng: random.Random, n: int = 10) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


@cache
def build_db() -> dict[str, dict[str, Any]]:
    """The default database (deterministic, cached; treat as read-only)."""
    rng = random.Random(0)
    products: dict[str, Any] = {}
    for name, options in PRODUCTS.items():
        pid = _id(rng)
        variants = {}
        keys = sorted(options)
        combos = [{}]
        for key in keys:
            combos = [{**c, key: v} for c in combos for v in options[key]]
        for combo in rng.sample(combos, min(len(combos), rng.randint(4, 7))):
            iid = _id(rng)
            variants[iid] = {
                "item_id": iid,
                "options": combo,
                "available": rng.random() < 0.8,
                "price": round(rng.uniform(20, 400), 2),
            }
        products[pid] = {"name": name, "product_id": pid, "variants": variants}
    users: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    pids = sorted(products)
    order_index = 0
    for u in range(60):
        first, last = FIRST[u % len(FIRST)], LAST[(u * 7 + u // 12) % len(LAST)]
        uid = f"{first.lower()}_{last.lower()}_{1000 + u * 37}"
        city, state = CITIES[u % len(CITIES)]
        address = {
            "address1": f"{100 + u * 13} {STREETS[u % len(STREETS)]}",
            "address2": f"Suite {200 + u}",
            "city": city,
            "country": "USA",
            "state": state,
            "zip": f"{80000 + u * 97}",
        }
        methods: dict[str, Any] = {}
        cc = f"credit_card_{_id(rng, 7)}"
        methods[cc] = {
            "source": "credit_card",
            "brand": rng.choice(["visa", "mastercard"]),
            "last_four": _id(rng, 4),
            "id": cc,
        }
        if u % 2 == 0:
            gc = f"gift_card_{_id(rng, 7)}"
            methods[gc] = {"source": "gift_card", "balance": float(rng.randint(20, 300)), "id": gc}
        if u % 3 == 0:
            pp = f"paypal_{_id(rng, 7)}"
            methods[pp] = {"source": "paypal", "id": pp}
        user = {
            "name": {"first_name": first, "last_name": last},
            "address": address,
            "email": f"{first.lower()}.{last.lower()}{u}@example.com",
            "payment_methods": methods,
            "orders": [],
        }
        n_orders = 2 + (u % 3 == 0)
        for _ in range(n_orders):
            if order_index >= 150:
                break
            oid = f"#W{_id(rng, 7)}"
            items = []
            for pid in rng.sample(pids, rng.randint(1, 3)):
                vid = rng.choice(sorted(products[pid]["variants"]))
                v = products[pid]["variants"][vid]
                items.append(
                    {
                        "name": products[pid]["name"],
                        "product_id": pid,
                        "item_id": vid,
                        "price": v["price"],
                        "options": v["options"],
                    }
                )
            status = STATUSES[(order_index * 5 + u) % len(STATUSES)]
            payer = sorted(methods)[order_index % len(methods)]
            total = round(sum(i["price"] for i in items), 2)
            history = [{"transaction_type": "payment", "amount": total, "payment_method_id": payer}]
            if status == "cancelled":
                history.append({"transaction_type": "refund", "amount": total, "payment_method_id": payer})
            fulfil = (
                []
                if status in ("pending", "cancelled")
                else [{"tracking_id": [_id(rng, 12)], "item_ids": [i["item_id"] for i in items]}]
            )
            orders[oid] = {
                "order_id": oid,
                "user_id": uid,
                "address": dict(address),
                "items": items,
                "fulfillments": fulfil,
                "status": status,
                "payment_history": history,
            }
            user["orders"].append(oid)
            order_index += 1
        users[uid] = user
    return {"users": users, "orders": orders, "products": products}


# -- task construction ---------------------------------------------------------------------------
def _alt_variant(db, pid: str, current: str, exclude: tuple[str, ...] = ()) -> str | None:
    for vid, v in sorted(db["products"][pid]["variants"].items()):
        if vid != current and vid not in exclude and v["available"]:
            return vid
    return None


def _respond(outputs) -> dict[str, Any]:
    text = "; ".join(outputs) if outputs else "Your request has been processed."
    return {"name": RESPOND, "kwargs": {"content": text}}


def reference_calls(actions, outputs) -> list[dict[str, Any]]:
    return [*actions, _respond(outputs)]


def flawed_pool(db, user_id: str, actions, outputs) -> list[dict[str, str]]:
    """Realistic wrong plans: each a concrete mutation of the gold actions, kept only if it scores < max."""
    ref = reference_calls(actions, outputs)
    writes = [i for i, c in enumerate(ref) if c["name"] in WRITE_TOOLS]
    candidates: list[tuple[str, list]] = []
    user = db["users"][user_id]
    for i in writes:
        candidates.append(("missing_write", ref[:i] + ref[i + 1 :]))
    for i in writes[:2]:
        call = json.loads(json.dumps(ref[i]))
        kw = call["kwargs"]
        if kw.get("new_item_ids"):
            order = db["orders"].get(kw["order_id"])
            item = (
                next((x for x in order["items"] if x["item_id"] == kw["item_ids"][0]), None)
                if order
                else None
            )
            alt = (
                _alt_variant(db, item["product_id"], kw["new_item_ids"][0], (item["item_id"],))
                if item
                else None
            )
            if alt:
                kw["new_item_ids"][0] = alt
                candidates.append(("wrong_argument", [*ref[:i], call, *ref[i + 1 :]]))
                call = json.loads(json.dumps(ref[i]))
                kw = call["kwargs"]
        if "payment_method_id" in kw:
            others = [m for m in sorted(user["payment_methods"]) if m != kw["payment_method_id"]]
            if others:
                kw["payment_method_id"] = others[0]
                candidates.append(("wrong_argument", [*ref[:i], call, *ref[i + 1 :]]))
        elif "reason" in kw:
            kw["reason"] = next(r for r in REASONS if r != kw["reason"])
            candidates.append(("wrong_argument", [*ref[:i], call, *ref[i + 1 :]]))
        elif "zip" in kw:
            kw["zip"] = kw["zip"][:-1] + str((int(kw["zip"][-1]) + 3) % 10)
            candidates.append(("wrong_argument", [*ref[:i], call, *ref[i + 1 :]]))
        call = json.loads(json.dumps(ref[i]))
        if call["kwargs"].get("item_ids") and call["kwargs"]["order_id"] in db["orders"]:
            order = db["orders"][call["kwargs"]["order_id"]]
            others = [x["item_id"] for x in order["items"] if x["item_id"] not in call["kwargs"]["item_ids"]]
            if others:
                call["kwargs"]["item_ids"][0] = others[0]
                candidates.append(("wrong_item", [*ref[:i], call, *ref[i + 1 :]]))
    gold_orders = {c["kwargs"].get("order_id") for c in actions}
    own_pending = [
        o for o in user["orders"] if db["orders"][o]["status"] == "pending" and o not in gold_orders
    ]
    if own_pending:
        extra = {"name": "cancel_pending_order", "kwargs": {"order_id": own_pending[0], "reason": REASONS[0]}}
    else:
        address = dict(user["address"], zip=str(int(user["address"]["zip"]) + 1).zfill(5))
        extra = {"name": "modify_user_address", "kwargs": {"user_id": user_id, **address}}
    candidates.append(("extra_write", [*ref[:-1], extra, ref[-1]]))
    foreign = next(
        o
        for o, order in sorted(db["orders"].items())
        if order["user_id"] != user_id and order["status"] == "pending"
    )
    violation = {"name": "cancel_pending_order", "kwargs": {"order_id": foreign, "reason": REASONS[0]}}
    base_calls = ref[:-1] if not writes else [c for j, c in enumerate(ref[:-1]) if j != writes[0]]
    candidates.append(("policy_violation", [*base_calls, violation, ref[-1]]))
    delivered = [o for o in user["orders"] if db["orders"][o]["status"] != "pending"]
    if delivered:
        bad = {"name": "cancel_pending_order", "kwargs": {"order_id": delivered[0], "reason": REASONS[1]}}
        candidates.append(("policy_violation", [*base_calls, bad, ref[-1]]))
    if outputs:
        wrong = [o.replace("0", "9").replace("1", "7").replace("5", "3") + " approx" for o in outputs]
        candidates.append(("wrong_output", [*ref[:-1], _respond(wrong)]))
    candidates.append(("malformed", []))
    payload = {"user_id": user_id, "actions": actions, "outputs": outputs}
    top = sum(CRITERIA.values())
    pool, seen = [], set()
    for flaw, calls in candidates:
        text = render_plan(calls)[:-9] if flaw == "malformed" else render_plan(calls)
        if flaw == "malformed":
            text = render_plan(ref)[: len(render_plan(ref)) // 2]
        if text in seen:
            continue
        total = sum(s for s, _ in artifact_scores(db, payload, text).values())
        if total < top - 1e-9:
            seen.add(text)
            pool.append({"flaw": flaw, "source": text})
    return pool


def difficulty_of(actions, outputs) -> str:
    n = sum(c["name"] in WRITE_TOOLS for c in actions)
    if n >= 2 or (n and outputs):
        return "hard"
    return (
        "easy"
        if n <= 1
        and not any(
            c["name"] in ("exchange_delivered_order_items", "modify_pending_order_items") for c in actions
        )
        else "standard"
    )


PROMPT = (
    "You are a retail customer-service agent following the store policy. Customer request:\n{instruction}\n"
    "Write the plan of tool calls that resolves it as one JSON object "
    '{{"calls": [{{"name": <tool>, "kwargs": {{...}}}}, ...]}}; end with a "respond" call whose '
    '"content" tells the customer the outcome (and any figure they asked for). Tools: {tools}.'
)


def make_record(
    db, task_id: str, split: str, template: str, user_id: str, instruction: str, actions, outputs, source: str
) -> dict[str, Any]:
    from harness_gym.domains.tau_retail.tools import TOOLS

    payload = {
        "db": source,
        "user_id": user_id,
        "instruction": instruction,
        "actions": actions,
        "outputs": outputs,
        "reference": render_plan(reference_calls(actions, outputs)),
        "pool": flawed_pool(db, user_id, actions, outputs),
    }
    prompt = PROMPT.format(instruction=instruction, tools=", ".join(TOOLS))
    return task_record(DOMAIN, task_id, difficulty_of(actions, outputs), split, template, prompt, payload)


def _default_tasks(db) -> list[tuple[str, str, str, list, list]]:
    """(template, user_id, instruction, actions, outputs) for 36 tasks over 10 templates."""
    users, orders, products = db["users"], db["orders"], db["products"]
    out = []

    def by_status(uid, status):
        return [o for o in users[uid]["orders"] if orders[o]["status"] == status]

    def exchangeable(oid):
        for item in orders[oid]["items"]:
            alt = _alt_variant(db, item["product_id"], item["item_id"])
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


# -- upstream data ---------------------------------------------------------------------------------
TASK_FIELDS = ("task_id", "user_id", "instruction", "actions", "outputs")
"""Fields every upstream task line must have."""
UPSTREAM_FILES = ("users.json", "orders.json", "products.json", "tasks_train.jsonl", "tasks_test.jsonl")


@cache
def load_upstream_db(data_path: str) -> dict[str, Any]:
    root = Path(data_path)
    for name in UPSTREAM_FILES:
        if not (root / name).is_file():
            raise FileNotFoundError(f"tau_retail data_path {root}: missing required file {name}")
    db = {k: read_json(root / f"{k}.json") for k in ("users", "orders", "products")}
    for k, table in db.items():
        if not isinstance(table, dict):
            raise TaskFileError(
                f"{root / f'{k}.json'}: expected a JSON object keyed by id, got {type(table).__name__}"
            )
    return db


def upstream_template(actions) -> str:
    names = sorted({c["name"] for c in actions if c["name"] in WRITE_TOOLS})
    return "+".join(names) or "read_only"


def load_upstream_records(
    data_path: str, n_train: int = N_TRAIN, n_eval: int = N_EVAL
) -> list[dict[str, Any]]:
    """Upstream train tasks -> train, test tasks -> eval; an evenly spaced deterministic pick of each."""
    db = load_upstream_db(data_path)
    records = []
    for split, name, n in (("train", "tasks_train.jsonl", n_train), ("eval", "tasks_test.jsonl", n_eval)):
        path = Path(data_path) / name
        raw = read_jsonl(path, TASK_FIELDS)
        if n > len(raw):
            raise ValueError(f"{path} has {len(raw)} tasks, fewer than the {n} requested")
        for j in range(n):
            line, t = raw[(j * len(raw)) // n]
            if t["user_id"] not in db["users"]:
                raise TaskFileError(f"{path} line {line}: user_id {t['user_id']!r} is not in users.json")
            records.append(
                make_record(
                    db,
                    f"{DOMAIN}-{split}-{t['task_id']:03d}",
                    split,
                    upstream_template(t["actions"]),
                    t["user_id"],
                    t["instruction"],
                    t["actions"],
                    t["outputs"],
                    "upstream",
                )
            )
    return records


def main() -> None:
    write_jsonl(generate_records(), packaged_task_file(f"{DOMAIN}-v0.jsonl"))


if __name__ == "__main__":
    main()
