"""The retail database, the 16 retail tools with upstream tau-bench semantics, and the native reward.

The database is ``{"users", "orders", "products"}`` in the upstream JSON schema. Tools mutate a
copy-on-write view (``RetailDB``) so a plan can be dry-run against a shared base without a deep copy of
the whole database; only the orders and users a write touches are copied.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from hashlib import sha256
from typing import Any

READ_TOOLS = (
    "calculate",
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_order_details",
    "get_product_details",
    "get_user_details",
    "list_all_product_types",
    "think",
    "transfer_to_human_agents",
)
WRITE_TOOLS = (
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
)
TOOLS = tuple(sorted(READ_TOOLS + WRITE_TOOLS))
RESPOND = "respond"
TERMINATE_TOOLS = ("transfer_to_human_agents",)


class RetailDB:
    """A copy-on-write view of a base database: reads see the base until an entry is written."""

    def __init__(self, base: Mapping[str, Mapping[str, Any]]) -> None:
        self.base = base
        self.users: dict[str, Any] = dict(base["users"])
        self.orders: dict[str, Any] = dict(base["orders"])
        self.products: Mapping[str, Any] = base["products"]
        self.touched: set[tuple[str, str]] = set()

    def user_w(self, user_id: str) -> dict[str, Any]:
        if ("users", user_id) not in self.touched:
            self.users[user_id] = copy.deepcopy(self.users[user_id])
            self.touched.add(("users", user_id))
        return self.users[user_id]

    def order_w(self, order_id: str) -> dict[str, Any]:
        if ("orders", order_id) not in self.touched:
            self.orders[order_id] = copy.deepcopy(self.orders[order_id])
            self.touched.add(("orders", order_id))
        return self.orders[order_id]

    def data(self) -> dict[str, Any]:
        return {"users": self.users, "orders": self.orders, "products": dict(self.products)}


def to_hashable(item: Any) -> Any:
    """Upstream's canonical form: dicts as sorted (key, value) tuples, lists as tuples."""
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(element) for element in item)
    if isinstance(item, set):
        return tuple(sorted(to_hashable(element) for element in item))
    return item


def data_hash(data: Mapping[str, Any]) -> str:
    """Upstream ``get_data_hash``: sha256 of ``str`` of the canonical form of the whole database."""
    return sha256(str(to_hashable(dict(data))).encode("utf-8")).hexdigest()


def same_state(a: RetailDB, b: RetailDB) -> bool:
    """Equal to comparing upstream data hashes when both views share one base (only written keys differ)."""
    for table, key in a.touched | b.touched:
        left = getattr(a, table)[key]
        right = getattr(b, table)[key]
        if str(to_hashable(left)) != str(to_hashable(right)):
            return False
    return True


# -- the tools -----------------------------------------------------------------------------------
# Each tool takes the database as the keyword ``data`` like upstream's ``Tool.invoke(data=..., **kwargs)``,
# so a malformed call fails with the same ``TypeError`` text (see ``invoke``). Checks run in upstream's
# order and the arithmetic follows upstream's (an integer 0 start for price differences, ``round(x, 2)``
# after each balance update) so outputs and the canonical DB hash match upstream's exactly.
def calculate(data: RetailDB, expression: str) -> str:
    if not all(char in "0123456789+-*/(). " for char in expression):
        return "Error: invalid characters in expression"
    try:
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
    except Exception as exc:
        return f"Error: {exc}"


def _add_to_gift_card(data: RetailDB, user_id: str, method_id: str, amount: float) -> None:
    method = data.user_w(user_id)["payment_methods"][method_id]
    method["balance"] = round(method["balance"] + amount, 2)


def _order(data: RetailDB, order_id: str, status: str, refused: str) -> Mapping[str, Any] | str:
    """The order (read-only) if it exists and has ``status``, else upstream's error text."""
    if order_id not in data.orders:
        return "Error: order not found"
    order = data.orders[order_id]
    if order["status"] != status:
        return f"Error: non-{status} order cannot be {refused}"
    return order


def cancel_pending_order(data: RetailDB, order_id: str, reason: str) -> str:
    found = _order(data, order_id, "pending", "cancelled")
    if isinstance(found, str):
        return found
    if reason not in ("no longer needed", "ordered by mistake"):
        return "Error: invalid reason"
    order = data.order_w(order_id)
    refunds = []
    for payment in order["payment_history"]:
        method_id = payment["payment_method_id"]
        refunds.append(
            {"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": method_id}
        )
        if "gift_card" in method_id:
            _add_to_gift_card(data, order["user_id"], method_id, payment["amount"])
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return json.dumps(order)


def _count_ok(order: Mapping[str, Any], item_ids: Sequence[str]) -> str | None:
    present = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > present.count(item_id):
            return f"Error: {item_id} not found"
    return None


def _price_difference(data: RetailDB, order: Mapping[str, Any], item_ids, new_item_ids) -> float | str:
    """What swapping ``item_ids`` for ``new_item_ids`` costs, or upstream's error text."""
    error = _count_ok(order, item_ids)
    if error:
        return error
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    diff = 0  # an int, as upstream: empty lists give 0, not 0.0, in outputs and in the DB
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variants = data.products[item["product_id"]]["variants"]
        if not (new_item_id in variants and variants[new_item_id]["available"]):
            return f"Error: new item {new_item_id} not found or available"
        diff += variants[new_item_id]["price"] - item["price"]
    return diff


def exchange_delivered_order_items(
    data: RetailDB, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    order = _order(data, order_id, "delivered", "exchanged")
    if isinstance(order, str):
        return order
    diff = _price_difference(data, order, item_ids, new_item_ids)
    if isinstance(diff, str):
        return diff
    diff = round(diff, 2)
    methods = data.users[order["user_id"]]["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff:
        return "Error: insufficient gift card balance to pay for the price difference"
    order = data.order_w(order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return json.dumps(order)


def find_user_id_by_email(data: RetailDB, email: str) -> str:
    for user_id, user in data.users.items():
        if user["email"].lower() == email.lower():
            return user_id
    return "Error: user not found"


def find_user_id_by_name_zip(data: RetailDB, first_name: str, last_name: str, zip: str) -> str:
    for user_id, user in data.users.items():
        name = user["name"]
        if (
            name["first_name"].lower() == first_name.lower()
            and name["last_name"].lower() == last_name.lower()
            and user["address"]["zip"] == zip
        ):
            return user_id
    return "Error: user not found"


def get_order_details(data: RetailDB, order_id: str) -> str:
    return json.dumps(data.orders[order_id]) if order_id in data.orders else "Error: order not found"


def get_product_details(data: RetailDB, product_id: str) -> str:
    products = data.products
    return json.dumps(products[product_id]) if product_id in products else "Error: product not found"


def get_user_details(data: RetailDB, user_id: str) -> str:
    return json.dumps(data.users[user_id]) if user_id in data.users else "Error: user not found"


def list_all_product_types(data: RetailDB) -> str:
    return json.dumps({p["name"]: p["product_id"] for p in data.products.values()}, sort_keys=True)


def _address(address1, address2, city, state, country, zip) -> dict[str, str]:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "state": state,
        "country": country,
        "zip": zip,
    }


def modify_pending_order_address(
    data: RetailDB, order_id, address1, address2, city, state, country, zip
) -> str:
    found = _order(data, order_id, "pending", "modified")
    if isinstance(found, str):
        return found
    order = data.order_w(order_id)
    order["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(order)


def modify_pending_order_items(
    data: RetailDB, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    order = _order(data, order_id, "pending", "modified")
    if isinstance(order, str):
        return order
    diff = _price_difference(data, order, item_ids, new_item_ids)
    if isinstance(diff, str):
        return diff
    user_id = order["user_id"]
    if payment_method_id not in data.users[user_id]["payment_methods"]:
        return "Error: payment method not found"
    method = data.users[user_id]["payment_methods"][payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff:
        return "Error: insufficient gift card balance to pay for the new item"
    order = data.order_w(order_id)
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff > 0 else "refund",
            "amount": abs(diff),
            "payment_method_id": payment_method_id,
        }
    )
    if method["source"] == "gift_card":
        _add_to_gift_card(data, user_id, payment_method_id, -diff)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variant = data.products[item["product_id"]]["variants"][new_item_id]
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = variant["options"]
    order["status"] = "pending (item modified)"
    return json.dumps(order)


def modify_pending_order_payment(data: RetailDB, order_id: str, payment_method_id: str) -> str:
    order = _order(data, order_id, "pending", "modified")
    if isinstance(order, str):
        return order
    user_id = order["user_id"]
    methods = data.users[user_id]["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) > 1 or history[0]["transaction_type"] != "payment":
        return "Error: there should be exactly one payment for a pending order"
    if history[0]["payment_method_id"] == payment_method_id:
        return "Error: the new payment method should be different from the current one"
    amount = history[0]["amount"]
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < amount:
        return "Error: insufficient gift card balance to pay for the order"
    order = data.order_w(order_id)
    old_id = order["payment_history"][0]["payment_method_id"]
    order["payment_history"].extend(
        [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
        ]
    )
    if method["source"] == "gift_card":
        _add_to_gift_card(data, user_id, payment_method_id, -amount)
    if "gift_card" in old_id:
        _add_to_gift_card(data, user_id, old_id, amount)
    return json.dumps(order)


def modify_user_address(data: RetailDB, user_id, address1, address2, city, state, country, zip) -> str:
    if user_id not in data.users:
        return "Error: user not found"
    user = data.user_w(user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(user)


def return_delivered_order_items(
    data: RetailDB, order_id: str, item_ids: list[str], payment_method_id: str
) -> str:
    order = _order(data, order_id, "delivered", "returned")
    if isinstance(order, str):
        return order
    methods = data.users[order["user_id"]]["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    if (
        "gift_card" not in payment_method_id
        and payment_method_id != order["payment_history"][0]["payment_method_id"]
    ):
        return "Error: payment method should be either the original payment method or a gift card"
    if _count_ok(order, item_ids):
        return "Error: some item not found"  # upstream names no item here, unlike modify and exchange
    order = data.order_w(order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return json.dumps(order)


def think(data: RetailDB, thought: str) -> str:
    return ""


def transfer_to_human_agents(data: RetailDB, summary: str) -> str:
    return "Transfer successful"


FUNCTIONS = {name: globals()[name] for name in TOOLS}
# Upstream's class per tool (tau_bench/envs/retail/tools/<name>.py): its ``invoke`` names TypeErrors.
UPSTREAM_CLASSES = {
    "calculate": "Calculate",
    "cancel_pending_order": "CancelPendingOrder",
    "exchange_delivered_order_items": "ExchangeDeliveredOrderItems",
    "find_user_id_by_email": "FindUserIdByEmail",
    "find_user_id_by_name_zip": "FindUserIdByNameZip",
    "get_order_details": "GetOrderDetails",
    "get_product_details": "GetProductDetails",
    "get_user_details": "GetUserDetails",
    "list_all_product_types": "ListAllProductTypes",
    "modify_pending_order_address": "ModifyPendingOrderAddress",
    "modify_pending_order_items": "ModifyPendingOrderItems",
    "modify_pending_order_payment": "ModifyPendingOrderPayment",
    "modify_user_address": "ModifyUserAddress",
    "return_delivered_order_items": "ReturnDeliveredOrderItems",
    "think": "Think",
    "transfer_to_human_agents": "TransferToHumanAgents",
}


def _upstream_message(name: str, exc: Exception) -> str:
    """``str(exc)`` with our function's name in a call-binding TypeError spelled as upstream's method."""
    message = str(exc)
    if isinstance(exc, TypeError):
        function = FUNCTIONS[name]
        ours = f"{function.__qualname__}()"
        theirs = f"{UPSTREAM_CLASSES[name]}.invoke()"
        long_ours = f"{function.__module__}.{ours}"
        if message.startswith(long_ours):  # duplicate keyword: Python adds the module
            message = f"tau_bench.envs.retail.tools.{name}.{theirs}" + message[len(long_ours) :]
        elif message.startswith(ours):
            message = theirs + message[len(ours) :]
    return message


def invoke(db: RetailDB, name: str, kwargs: Mapping[str, Any]) -> str:
    """One tool call as upstream's ``Env.step``: an exception becomes an ``Error: ...`` observation."""
    function = FUNCTIONS.get(name)
    if function is None:
        return f"Unknown action {name}"
    try:
        return function(data=db, **kwargs)
    except Exception as exc:
        return f"Error: {_upstream_message(name, exc)}"


def run_calls(base: Mapping[str, Any], calls: Sequence[Mapping[str, Any]], *, skip_terminate: bool = False):
    """Execute calls on a fresh view of ``base``; returns (view, observations). ``respond`` is a no-op."""
    db = RetailDB(base)
    observations = []
    for call in calls:
        if call["name"] == RESPOND or (skip_terminate and call["name"] in TERMINATE_TOOLS):
            observations.append("")
        else:
            observations.append(invoke(db, call["name"], call.get("kwargs", {})))
    return db, observations


def outputs_found(outputs: Sequence[str], calls: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Upstream output check: each required string, lowercased, in a respond content without commas."""
    contents = [
        str(call.get("kwargs", {}).get("content", "")).lower().replace(",", "")
        for call in calls
        if call["name"] == RESPOND
    ]
    return [any(output.lower() in content for content in contents) for output in outputs]


def native_score(base: Mapping[str, Any], gold: Sequence[Mapping[str, Any]], outputs, calls) -> float:
    """Upstream reward: 1 iff the DB after the calls equals the DB after replaying gold, and outputs found."""
    gold_db, _ = run_calls(base, gold, skip_terminate=True)
    plan_db, _ = run_calls(base, calls)
    return float(same_state(gold_db, plan_db) and all(outputs_found(outputs, calls)))
