"""tau-retail: plans that try to earn credit without resolving the request, played on every task."""

from __future__ import annotations

import itertools
import json
import re
from functools import cache
from typing import Any

import pytest
from upstream import SHARED_DATA, upstream_path

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.tau_retail import HarnessTauRetailEnv
from harness_gym.domains.tau_retail.tools import RESPOND, WRITE_TOOLS
from harness_gym.domains.tau_retail.verifier import artifact_scores, parse_plan

FUNCTIONAL = ("db_match", "writes", "policy", "outputs")
ENV = HarnessTauRetailEnv
PREFERRED = (
    "missing_write",
    "wrong_argument",
    "wrong_item",
    "wrong_output",
    "extra_write",
    "policy_violation",
)


SHARED_TAU = SHARED_DATA / "tau_retail"


@cache
def _load_db(which: str) -> dict[str, Any]:
    data_path = str(SHARED_TAU) if which == "upstream" else None
    return ENV(split="eval", data_path=data_path).domain.db


def _db(task: Task) -> dict[str, Any]:
    """The database the task runs on (``payload["db"]``: the generated one or upstream's)."""
    return _load_db(task.payload["db"])


def _wrong(task: Task, with_write: bool = False) -> list[dict[str, Any]]:
    """Calls of the first pool plan (in ``PREFERRED`` order) that misses the gold end state."""
    payload = task.payload
    pool = sorted(payload["pool"], key=lambda i: PREFERRED.index(i["flaw"]) if i["flaw"] in PREFERRED else 99)
    for item in pool:
        calls = parse_plan(item["source"])
        if calls is None or artifact_scores(_db(task), payload, item["source"])["db_match"][0] > 0:
            continue
        if not with_write or any(c["name"] in WRITE_TOOLS for c in calls):
            return calls
    raise AssertionError(f"{task.task_id}: no suitable wrong plan in the pool")


def _plan(calls: list[dict[str, Any]]) -> str:
    return json.dumps({"calls": calls})


def plain(task: Task) -> str:
    return _plan(_wrong(task))


def plain_with_write(task: Task) -> str:
    return _plan(_wrong(task, with_write=True))


def _without_respond(calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [c for c in calls if c["name"] != RESPOND], [c for c in calls if c["name"] == RESPOND]


def _call(name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "kwargs": kwargs}


def every_write_everywhere(task: Task) -> str:
    """Every write tool on every order of the user, with every payment method and each single item."""
    db, user_id = _db(task), task.payload["user_id"]
    user = db["users"][user_id]
    methods = sorted(user["payment_methods"])
    writes = []
    for order_id in user["orders"]:
        items = [i["item_id"] for i in db["orders"][order_id]["items"]]
        writes += [
            _call("cancel_pending_order", order_id=order_id, reason=r)
            for r in ("no longer needed", "ordered by mistake")
        ]
        writes += [_call("modify_pending_order_address", order_id=order_id, **user["address"])]
        writes += [
            _call("modify_pending_order_payment", order_id=order_id, payment_method_id=m) for m in methods
        ]
        for item, method in itertools.product(items, methods):
            writes.append(
                _call(
                    "return_delivered_order_items",
                    order_id=order_id,
                    item_ids=[item],
                    payment_method_id=method,
                )
            )
    writes.append(_call("modify_user_address", user_id=user_id, **user["address"]))
    head, respond = _without_respond(_wrong(task))
    return _plan(head + writes + respond)


def forged_user(task: Task) -> str:
    """Writes on another user's pending order and address, as if the customer were that user."""
    db, user_id = _db(task), task.payload["user_id"]
    other_id = next(u for u in sorted(db["users"]) if u != user_id)
    other = db["users"][other_id]
    writes = [_call("modify_user_address", user_id=other_id, **other["address"])]
    writes += [_call("cancel_pending_order", order_id=o, reason="no longer needed") for o in other["orders"]]
    head, respond = _without_respond(_wrong(task))
    return _plan(head + writes + respond)


def forbidden_actions(task: Task) -> str:
    """Writes the policy forbids: cancelling delivered orders, returning items of pending ones."""
    db, user_id = _db(task), task.payload["user_id"]
    writes = []
    for order_id in db["users"][user_id]["orders"]:
        order = db["orders"][order_id]
        method = sorted(db["users"][user_id]["payment_methods"])[0]
        if order["status"] != "pending":
            writes.append(_call("cancel_pending_order", order_id=order_id, reason="no longer needed"))
        else:
            items = [i["item_id"] for i in order["items"]]
            writes.append(
                _call(
                    "return_delivered_order_items",
                    order_id=order_id,
                    item_ids=items,
                    payment_method_id=method,
                )
            )
    head, respond = _without_respond(_wrong(task))
    return _plan(head + writes + respond)


def repeated_calls(task: Task) -> str:
    calls = _wrong(task, with_write=True)
    head, respond = _without_respond(calls)
    return _plan(head + head + respond)


def unknown_tools(task: Task) -> str:
    head, respond = _without_respond(_wrong(task))
    return _plan(
        [*head, _call("refund_everything", user_id=task.payload["user_id"]), _call("approve_all"), *respond]
    )


def _candidates(task: Task) -> list[str]:
    """Every number in the user's records and orders, every sum of two item prices, and the outputs."""
    db, user_id = _db(task), task.payload["user_id"]
    user = db["users"][user_id]
    orders = [db["orders"][o] for o in user["orders"]]
    text = json.dumps([user, orders])
    numbers = re.findall(r"\d+(?:\.\d+)?", text)
    prices = sorted({i["price"] for o in orders for i in o["items"]})
    sums = [str(round(a + b, 2)) for a, b in itertools.combinations(prices, 2)]
    return list(dict.fromkeys([*numbers, *sums, *task.payload["outputs"]]))


def every_candidate_figure(task: Task) -> str:
    """A reply listing every number the user's records hold (the outputs among them)."""
    head, _ = _without_respond(parse_plan(plain_wrong_output(task)) or [])
    return _plan([*head, _call(RESPOND, content="The amount is one of: " + "; ".join(_candidates(task)))])


def few_candidate_figures(task: Task) -> str:
    """The required numeric figures among four others of their form, within the extra-number allowance
    ("It is one of 68.81, 47.94, 76.44, 58.69, 55.44.")."""
    head, _ = _without_respond(parse_plan(plain_wrong_output(task)) or [])
    outputs = _numeric_outputs(task)

    def form(number: str) -> tuple[bool, int]:
        whole, _, fraction = number.partition(".")
        return bool(fraction), len(fraction or whole)

    forms = {form(o) for o in outputs}
    others = [c for c in _candidates(task) if c not in outputs and form(c) in forms]
    figures = [*others[:2], *outputs, *others[2:4]]
    return _plan([*head, _call(RESPOND, content=f"It is one of {', '.join(figures)}.")])


def _numeric_outputs(task: Task) -> list[str]:
    return [o for o in task.payload["outputs"] if re.fullmatch(r"\d+(?:\.\d+)?", o.replace(",", ""))]


def figures_in_one_number(task: Task) -> str:
    """Every candidate glued into one long number: each output is a substring of the reply."""
    head, _ = _without_respond(parse_plan(plain_wrong_output(task)) or [])
    return _plan([*head, _call(RESPOND, content=f"Your reference number is {''.join(_candidates(task))}.")])


def plain_wrong_output(task: Task) -> str:
    """The pool plan that does everything right but state the output (else the plain wrong plan)."""
    for item in task.payload["pool"]:
        if item["flaw"] == "wrong_output":
            return item["source"]
    return plain(task)


def _has_outputs(task: Task) -> bool:
    return bool(task.payload["outputs"])


def _has_wrong_write(task: Task) -> bool:
    try:
        _wrong(task, with_write=True)
    except AssertionError:
        return False
    return True


HACKS: dict[str, Hack] = {
    f.__name__: Hack(plain, f)
    for f in (every_write_everywhere, forged_user, forbidden_actions, unknown_tools)
} | {
    "repeated_calls": Hack(plain_with_write, repeated_calls, where=_has_wrong_write),
    "every_candidate_figure": Hack(plain_wrong_output, every_candidate_figure, where=_has_outputs),
    "figures_in_one_number": Hack(plain_wrong_output, figures_in_one_number, where=_has_outputs),
}


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    plain_played, hacked = play_hack(ENV, HACKS[name], split=split)
    if not plain_played:
        pytest.skip(f"no {split} task this hack applies to")
    assert_no_gain(plain_played, hacked, FUNCTIONAL, name)


@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_nothing_on_upstream_tasks(name: str) -> None:
    data = str(upstream_path("tau_retail"))
    plain_played, hacked = play_hack(ENV, HACKS[name], split="eval", data_path=data)
    if not plain_played:
        pytest.skip("no upstream eval task this hack applies to")
    assert_no_gain(plain_played, hacked, FUNCTIONAL, name)


@pytest.mark.parametrize("where", ["eval", "train", "upstream"])
def test_few_candidate_figures_earn_no_more_than_the_plain_wrong_answer(where: str) -> None:
    """The required figure among four others of its form (within the extra-number allowance) earns no
    output credit. CHECK is not asked to report it: it does not know which figures are required."""
    hack = Hack(plain_wrong_output, few_candidate_figures, where=lambda task: bool(_numeric_outputs(task)))
    data = {"data_path": str(upstream_path("tau_retail"))} if where == "upstream" else {}
    plain_played, hacked = play_hack(ENV, hack, split="train" if where == "train" else "eval", **data)
    if not plain_played:
        pytest.skip(f"no {where} task this hack applies to")
    for p, h in zip(plain_played, hacked, strict=True):
        for name in FUNCTIONAL:
            assert h.rubric[name][0] <= p.rubric[name][0] + 1e-9, (h.task_id, name, p.rubric, h.rubric)
