"""Task features of a tau-retail request, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import flag, scaled

_WRITES = re.compile(
    r"\b(cancel|return|exchange|change the|pay for|ship|send order|update your default address)\b",
    re.IGNORECASE,
)
_FIGURE = re.compile(r"\b(learn the total|how much|total refund|what .* costs?)\b", re.IGNORECASE)
_DESCRIBED = re.compile(r"\byour (order with the|pending order)\b|\byou received\b")
_PAYMENT = re.compile(r"\b(credit_card|gift_card|paypal)_\d+")

TASK_FEATURES = (
    (
        "writes",
        "write actions the request implies (cancel, return, exchange, change, pay, ship; scaled, cap 4)",
    ),
    ("orders", "orders it names, each a record to look up (scaled, cap 3)"),
    ("asks_figure", "1 if the customer asks for a figure (a total, a refund amount)"),
    ("payment_methods", "payment methods it names (scaled, cap 2)"),
    ("variants", "item variants it asks for, each a product to look up (scaled, cap 3)"),
    (
        "described",
        "orders it describes by an item instead of naming them: finding one means reading the customer's "
        "orders (scaled, cap 2)",
    ),
)

COMPONENTS = {
    "format": "form",
    "unknown_tool": "form",
    "listing": "content",
    "write_failed": "content",
    "foreign_order": "content",
    "foreign_address": "content",
    "repeated_write": "content",
    "order_not_looked_up": "evidence",
}


def task_features(text: str) -> tuple[float, ...]:
    request = text.split("Customer request:", 1)[-1].split("Write the plan", 1)[0]
    return (
        scaled(len(_WRITES.findall(request)), 4),
        scaled(len(set(re.findall(r"#W\d+", request))), 3),
        flag(_FIGURE.search(request)),
        scaled(len(set(_PAYMENT.findall(request))), 2),
        scaled(request.count("{"), 3),
        scaled(len(_DESCRIBED.findall(request)), 2),
    )
