"""tau-retail's chat protocol: the customer request in, one JSON plan ``{"calls": [...]}`` out.

The prompt names the tools but not their arguments nor the rules their writes enforce; OBSERVE ("read
the request and the policy") adds both. RETRIEVE leaves ids (``user:<id>``, ``order:<id>``,
``product:<id>``) in the context; they are rendered as the records the read tools would return. The
gold actions, outputs and reference plan are never shown.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any, Protocol

from harness_gym.core.task import Task
from harness_gym.domains.prompts import SettingPrompts
from harness_gym.domains.tau_retail.tools import FUNCTIONS
from harness_gym.domains.tau_retail.verifier import render_plan
from harness_gym.executors.prompts import STRING, ParseError, json_objects, object_schema

POLICY = """Store policy (the write tools enforce it; a write that breaks it fails):
- Act only for the customer making the request, on their own orders; look records up before writing.
- cancel_pending_order: only pending orders; reason is exactly "no longer needed" or "ordered by mistake".
- modify_pending_order_address / _items / _payment: only pending orders. Items are swapped for another
  available variant (item id) of the same product; a gift card must cover any price difference.
- return_delivered_order_items / exchange_delivered_order_items: only delivered orders. A refund goes to
  the original payment method or a gift card.
- Payment methods are named by their id in the user's payment_methods.
- respond: {"content": <message to the customer>}; state the outcome and any figure asked for."""

_TABLES = {"user": "users", "order": "orders", "product": "products"}


def tool_signatures() -> str:
    """``name(arg, ...)`` of every tool, read from the implementations so it cannot drift."""
    lines = []
    for name, function in sorted(FUNCTIONS.items()):
        args = [p for p in inspect.signature(function).parameters if p != "data"]
        lines.append(f"- {name}({', '.join(args)})")
    return "\n".join(lines)


class _RetailDomain(Protocol):
    """What the prompts read of ``TauRetailDomain``: its database, to show looked-up records."""

    env_id: str
    db: Mapping[str, Mapping[str, Any]]


class TauRetailPrompts(SettingPrompts):
    domain: _RetailDomain

    artifact_instruction = (
        'Reply with the plan as one JSON object {"calls": [{"name": ..., "kwargs": {...}}, ...]} '
        '(a ```json fence is fine), ending with a "respond" call.'
    )

    def artifact_form(self, task: Task) -> str:
        return (
            '{"calls": [{"name": "<tool>", "kwargs": {"<argument>": "<value>"}}, '
            '{"name": "respond", "kwargs": {"content": "<message to the customer>"}}]}'
        )

    def artifact_schema(self, task: Task) -> dict:
        """The plan: calls of a tool's name with its keyword arguments (keys depend on the tool)."""
        call = object_schema({"name": STRING, "kwargs": {"type": "object"}})
        return object_schema({"calls": {"type": "array", "items": call}})

    def artifact_text(self, task: Task, obj: dict) -> str:
        return json.dumps({"calls": obj["calls"]})

    def task_text(self, task: Task, observed: bool) -> str:
        if not observed:
            return task.prompt
        return f"{task.prompt}\n\nTool arguments (kwargs):\n{tool_signatures()}\n\n{POLICY}"

    def evidence_text(self, task: Task, item: str) -> str:
        """The record behind ``user:<id>``, ``order:<id>`` or ``product:<id>``, as its read tool gives it."""
        kind, _, key = item.partition(":")
        table = _TABLES.get(kind)
        record = self.domain.db.get(table, {}).get(key) if table else None
        return item if record is None else json.dumps(record)

    def artifact(self, task: Task, reply: str) -> str:
        plans: list[Any] = [
            obj for obj in json_objects(reply) if isinstance(obj, dict) and isinstance(obj.get("calls"), list)
        ]
        if not plans:
            raise ParseError('no JSON object {"calls": [{"name": ..., "kwargs": {...}}, ...]} in the reply')
        return render_plan(plans[-1]["calls"])
