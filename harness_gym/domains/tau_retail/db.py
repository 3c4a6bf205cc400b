"""The retail databases in the upstream tau-bench schema: the default one and upstream's files.

The default DB (60 users, 150 orders, 20 products) is rebuilt from ``random.Random(0)`` by
:func:`build_db`, so the task file need not carry it; :func:`load_upstream_db` reads tau-bench's
``users.json``, ``orders.json`` and ``products.json`` from a ``data_path``. Both are cached: treat them
as read-only.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path
from typing import Any

from harness_gym.core.task import TaskFileError
from harness_gym.domains.upstream_files import read_json

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
