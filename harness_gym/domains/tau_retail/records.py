"""tau-retail task records: a gold plan's prompt, reference, difficulty and flawed pool, and upstream's tasks.

:func:`make_record` turns a request with its gold tool calls into a task record (the generator's default
tasks and upstream's alike); :func:`load_upstream_records` reads tau-bench's ``tasks_train.jsonl`` /
``tasks_test.jsonl`` into records at run time (``data_path``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_gym.core.task import TaskFileError
from harness_gym.domains.base import N_EVAL, N_TRAIN
from harness_gym.domains.generation import VERSION, task_record
from harness_gym.domains.tau_retail.db import load_upstream_db
from harness_gym.domains.tau_retail.tools import RESPOND, TOOLS, WRITE_TOOLS
from harness_gym.domains.tau_retail.verifier import CRITERIA, artifact_scores, render_plan
from harness_gym.domains.upstream_files import read_jsonl

DOMAIN = "tau_retail"
REASONS = ("no longer needed", "ordered by mistake")
"""The cancellation reasons tau-bench's policy accepts."""


def alt_variant(db, pid: str, current: str, exclude: tuple[str, ...] = ()) -> str | None:
    """The first available variant of product ``pid`` (by item id) other than ``current`` and ``exclude``."""
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
                alt_variant(db, item["product_id"], kw["new_item_ids"][0], (item["item_id"],))
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
    db,
    task_id: str,
    split: str,
    template: str,
    user_id: str,
    instruction: str,
    actions,
    outputs,
    source: str,
    version: str = VERSION,
) -> dict[str, Any]:
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
    return task_record(
        DOMAIN, task_id, difficulty_of(actions, outputs), split, template, prompt, payload, version
    )


TASK_FIELDS = ("task_id", "user_id", "instruction", "actions", "outputs")
"""Fields every upstream task line must have."""


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
