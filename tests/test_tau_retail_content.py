"""tau_retail: tools and native score against upstream data, the rubric, the pool and the env."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from upstream import one_localised_rate, upstream_path

from harness_gym.core.actions import Action
from harness_gym.core.task import packaged_task_file
from harness_gym.domains.tau_retail import HarnessTauRetailEnv, TauRetailDomain
from harness_gym.domains.tau_retail.db import load_upstream_db
from harness_gym.domains.tau_retail.generate import generate_records
from harness_gym.domains.tau_retail.tools import (
    WRITE_TOOLS,
    RetailDB,
    data_hash,
    native_score,
    run_calls,
    same_state,
)
from harness_gym.domains.tau_retail.verifier import CRITERIA, artifact_scores

TOP = sum(CRITERIA.values())


def upstream_dir() -> Path:
    return upstream_path("tau_retail/users.json").parent


def upstream_tasks(*names: str) -> list[dict]:
    root = upstream_dir()
    return [json.loads(line) for n in names for line in (root / f"tasks_{n}.jsonl").read_text().splitlines()]


def test_regeneration_is_byte_identical() -> None:
    shipped = packaged_task_file("tau_retail-v0.jsonl").read_text(encoding="utf-8")
    regenerated = "".join(
        json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in generate_records()
    )
    assert regenerated == shipped


def test_gold_replay_scores_one_and_dropping_a_write_scores_zero() -> None:
    base = load_upstream_db(str(upstream_dir()))
    noop_writes = []
    for task in upstream_tasks("test", "dev"):
        gold, outputs = task["actions"], task["outputs"]
        respond = [{"name": "respond", "kwargs": {"content": " and ".join(outputs)}}]
        assert native_score(base, gold, outputs, gold + respond) == 1.0, task["task_id"]
        if outputs:
            assert native_score(base, gold, outputs, gold) == 0.0
        _, observations = run_calls(base, gold)
        for i, call in enumerate(gold):
            if call["name"] not in WRITE_TOOLS or observations[i].startswith("Error"):
                continue
            dropped = native_score(base, gold, outputs, gold[:i] + gold[i + 1 :] + respond)
            if dropped != 0.0:
                noop_writes.append((task["task_id"], call["name"]))
    # Two upstream test tasks have writes that leave no trace in the final DB: task 22 sets the user's
    # address and later sets it back; task 111 sets the user's address to the one already on file.
    assert noop_writes == [(22, "modify_user_address"), (111, "modify_user_address")]


def test_no_unexpected_errors_on_gold_actions() -> None:
    base = load_upstream_db(str(upstream_dir()))
    errors = {}
    for task in upstream_tasks("test", "dev"):
        _, observations = run_calls(base, task["actions"])
        for call, obs in zip(task["actions"], observations, strict=True):
            if obs.startswith("Error") and call["name"] in WRITE_TOOLS:
                errors.setdefault(call["name"], set()).add(obs)
            assert not obs.startswith("Unknown action")
    # The only failing gold writes are the precondition errors the tasks encode on purpose.
    assert set(errors) <= {"return_delivered_order_items", "exchange_delivered_order_items"}
    assert all(msg.startswith("Error: ") for msgs in errors.values() for msg in msgs)


def test_fast_state_comparison_equals_upstream_hash() -> None:
    base = load_upstream_db(str(upstream_dir()))
    for task in upstream_tasks("dev")[:5]:
        gold = task["actions"]
        a, _ = run_calls(base, gold)
        b, _ = run_calls(base, gold[:-1])
        assert (data_hash(a.data()) == data_hash(b.data())) == same_state(a, b)
        assert data_hash(a.data()) == data_hash(run_calls(base, gold)[0].data())
    assert data_hash(RetailDB(base).data()) == data_hash(base)


def test_tool_semantics() -> None:
    base = load_upstream_db(str(upstream_dir()))
    orders = base["orders"]
    pending = next(
        o
        for o in sorted(orders)
        if orders[o]["status"] == "pending"
        and "gift_card" in orders[o]["payment_history"][0]["payment_method_id"]
    )
    delivered = next(o for o in sorted(orders) if orders[o]["status"] == "delivered")
    db = RetailDB(base)
    from harness_gym.domains.tau_retail import tools

    user = orders[pending]["user_id"]
    gc = orders[pending]["payment_history"][0]["payment_method_id"]
    balance = base["users"][user]["payment_methods"][gc]["balance"]
    out = json.loads(tools.cancel_pending_order(db, pending, "no longer needed"))
    assert out["status"] == "cancelled" and out["payment_history"][-1]["transaction_type"] == "refund"
    amount = orders[pending]["payment_history"][0]["amount"]
    assert db.users[user]["payment_methods"][gc]["balance"] == round(balance + amount, 2)
    assert base["users"][user]["payment_methods"][gc]["balance"] == balance  # base untouched
    assert tools.cancel_pending_order(db, pending, "no longer needed").startswith("Error: non-pending")
    assert tools.cancel_pending_order(db, delivered, "no longer needed").startswith("Error")
    assert tools.cancel_pending_order(db, "#W0", "no longer needed") == "Error: order not found"
    item = orders[delivered]["items"][0]
    other = next(p for p in base["products"] if p != item["product_id"])
    cross = next(iter(base["products"][other]["variants"]))
    pm = orders[delivered]["payment_history"][0]["payment_method_id"]
    assert tools.exchange_delivered_order_items(db, delivered, [item["item_id"]], [cross], pm).startswith(
        "Error: new item"
    )
    assert tools.modify_pending_order_items(db, delivered, [item["item_id"]], [cross], pm).startswith(
        "Error: non-pending"
    )
    assert tools.calculate(db, "2 * (3 + 4.5)") == "15.0"


def test_references_max_pool_below_max() -> None:
    domain = TauRetailDomain()
    for task in domain.tasks():
        ref = artifact_scores(domain.db, task.payload, task.payload["reference"])
        assert sum(s for s, _ in ref.values()) == TOP
        assert task.payload["pool"]
        for item in task.payload["pool"]:
            got = artifact_scores(domain.db, task.payload, item["source"])
            assert sum(s for s, _ in got.values()) < TOP, (task.task_id, item["flaw"])


def test_verifier_criteria_by_hand() -> None:
    domain = TauRetailDomain()
    task = next(t for t in domain.tasks() if t.template == "return_refund_total")
    payload, db = task.payload, domain.db
    calls = json.loads(payload["reference"])["calls"]
    assert all(s == 0 for s, _ in artifact_scores(db, payload, "not json").values())
    no_output = json.dumps({"calls": calls[:-1]})
    scores = artifact_scores(db, payload, no_output)
    assert scores["outputs"][0] == 0 and scores["db_match"][0] == 3
    no_write = json.dumps({"calls": [c for c in calls if c["name"] not in WRITE_TOOLS]})
    scores = artifact_scores(db, payload, no_write)
    assert scores["db_match"][0] == 0 and scores["writes"][0] == 0
    foreign = next(
        o
        for o, v in sorted(db["orders"].items())
        if v["user_id"] != payload["user_id"] and v["status"] == "pending"
    )
    extra = json.dumps(
        {
            "calls": [
                *calls,
                {
                    "name": "cancel_pending_order",
                    "kwargs": {"order_id": foreign, "reason": "no longer needed"},
                },
            ]
        }
    )
    scores = artifact_scores(db, payload, extra)
    assert scores["policy"][0] == 0 and scores["writes"][0] == 1.0 and scores["db_match"][0] == 0


def test_upstream_tasks_load_and_pools() -> None:
    env = HarnessTauRetailEnv(split="eval", data_path=str(upstream_dir()))
    assert len(env.tasks) == 20
    assert len(HarnessTauRetailEnv(split="train", data_path=str(upstream_dir()), n_train=5).tasks) == 5
    for task in env.tasks:
        ref = artifact_scores(env.domain.db, task.payload, task.payload["reference"])
        assert sum(s for s, _ in ref.values()) == TOP


def test_missing_upstream_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "users.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"orders\.json"):
        HarnessTauRetailEnv(data_path=str(tmp_path))


def _run(actions: list[Action], seed: int, split: str = "all", profile=None) -> dict:
    env = HarnessTauRetailEnv(split=split, executor_profile=profile)
    _, info = env.reset(seed=seed)
    for a in actions:
        _obs, _, term, trunc, info = env.step(int(a))
        if term or trunc:
            break
    return info


def test_retrieval_raises_draft_quality() -> None:
    o, r, d, s = Action.OBSERVE, Action.RETRIEVE, Action.DRAFT, Action.SUBMIT
    informed = np.mean(
        [_run([o, r, r, r, d, s], k)["trajectory"]["signals"]["native_score"] for k in range(400)]
    )
    blind = np.mean([_run([o, d, s], k)["trajectory"]["signals"]["native_score"] for k in range(400)])
    assert informed > blind + 0.05


def test_informed_revise_beats_blind_revise() -> None:
    o, r, d, c, v, s = (
        Action.OBSERVE,
        Action.RETRIEVE,
        Action.DRAFT,
        Action.CHECK,
        Action.REVISE,
        Action.SUBMIT,
    )
    profile = one_localised_rate(TauRetailDomain)
    checked = np.mean([_run([o, r, r, r, d, c, v, s], k, profile=profile)["G"] for k in range(400)])
    blind = np.mean([_run([o, r, r, r, d, v, s], k, profile=profile)["G"] for k in range(400)])
    assert checked > blind + 0.05


def test_observation_hides_gold() -> None:
    domain = TauRetailDomain()
    env = HarnessTauRetailEnv(split="all")
    seen: dict[bool, np.ndarray] = {}
    for seed in range(200):
        env.reset(seed=seed, options={"task_id": domain.tasks()[0].task_id})
        env.step(int(Action.OBSERVE))
        obs, *_ = env.step(int(Action.DRAFT))
        correct = env.unwrapped._ep.draft == domain.tasks()[0].payload["reference"]
        seen.setdefault(correct, obs)
        if len(seen) == 2:
            break
    assert len(seen) == 2 and np.array_equal(seen[True], seen[False])


def test_check_env_and_random_loop() -> None:
    check_env(HarnessTauRetailEnv(), skip_render_check=True)
    check_env(HarnessTauRetailEnv(data_path=str(upstream_dir())), skip_render_check=True)


def test_random_legal_actions() -> None:
    env = HarnessTauRetailEnv(split="all")
    for seed in range(50):
        rng = np.random.default_rng(seed)
        _, info = env.reset(seed=seed)
        while True:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, reward, term, trunc, info = env.step(action)
            assert 0.0 <= reward <= 1.0
            if term or trunc:
                assert 0.0 <= info["trajectory"]["signals"].get("native_score", 0.0) <= 1.0
                break


# -- fidelity to upstream's tool implementations ------------------------------------------------------
# Upstream's behaviour (tau_bench/envs/retail/tools/*.py, Env.step in tau_bench/envs/base.py) encoded as
# explicit expectations: exact error strings, the record each write returns, the state changes.


def _mini_db() -> dict:
    """A hand-built DB in the upstream schema that reaches every error branch."""

    def variant(item_id: str, price: float, available: bool = True, color: str = "red") -> dict:
        return {"item_id": item_id, "options": {"color": color}, "available": available, "price": price}

    def order(order_id: str, status: str, items: list[tuple[str, str, float]], history: list) -> dict:
        return {
            "order_id": order_id,
            "user_id": "ann_lee_1",
            "address": {
                "address1": "1 Main St",
                "address2": "",
                "city": "Town",
                "country": "USA",
                "state": "CA",
                "zip": "12345",
            },
            "items": [
                {
                    "name": "Widget",
                    "product_id": pid,
                    "item_id": iid,
                    "price": price,
                    "options": {"color": "red"},
                }
                for pid, iid, price in items
            ],
            "fulfillments": [],
            "status": status,
            "payment_history": [
                {"transaction_type": kind, "amount": amount, "payment_method_id": pm}
                for kind, amount, pm in history
            ],
        }

    return {
        "products": {
            "p1": {
                "name": "Widget",
                "product_id": "p1",
                "variants": {
                    "i1": variant("i1", 10.0),
                    "i2": variant("i2", 25.5, color="blue"),
                    "i3": variant("i3", 5.0, available=False),
                    "i4": variant("i4", 7.25, color="green"),
                },
            },
            "p2": {"name": "Gadget", "product_id": "p2", "variants": {"j1": variant("j1", 100.0)}},
        },
        "users": {
            "ann_lee_1": {
                "name": {"first_name": "Ann", "last_name": "Lee"},
                "address": {
                    "address1": "1 Main St",
                    "address2": "",
                    "city": "Town",
                    "country": "USA",
                    "state": "CA",
                    "zip": "12345",
                },
                "email": "Ann.Lee@example.com",
                "payment_methods": {
                    "gift_card_1": {"source": "gift_card", "balance": 15, "id": "gift_card_1"},
                    "gift_card_2": {"source": "gift_card", "balance": 500.5, "id": "gift_card_2"},
                    "credit_card_1": {
                        "source": "credit_card",
                        "brand": "visa",
                        "last_four": "1111",
                        "id": "credit_card_1",
                    },
                    "paypal_1": {"source": "paypal", "id": "paypal_1"},
                },
                "orders": ["#W1", "#W2", "#W3", "#W4", "#W5"],
            }
        },
        "orders": {
            "#W1": order(
                "#W1", "pending", [("p1", "i1", 10.0), ("p1", "i1", 10.0)], [("payment", 20.0, "gift_card_2")]
            ),
            "#W2": order(
                "#W2",
                "delivered",
                [("p1", "i1", 10.0), ("p2", "j1", 100.0)],
                [("payment", 110.0, "credit_card_1")],
            ),
            "#W3": order("#W3", "processed", [("p1", "i1", 10.0)], [("payment", 10.0, "paypal_1")]),
            "#W4": order(
                "#W4",
                "pending",
                [("p1", "i2", 25.5)],
                [("payment", 25.5, "paypal_1"), ("refund", 25.5, "paypal_1")],
            ),
            "#W5": order("#W5", "pending", [("p1", "i4", 12.5)], [("payment", 12.5, "paypal_1")]),
        },
    }


def _call(db: RetailDB, name: str, **kwargs) -> str:
    from harness_gym.domains.tau_retail.tools import invoke

    return invoke(db, name, kwargs)


def test_error_branches_have_upstream_messages() -> None:
    base = _mini_db()
    db = RetailDB(base)
    addr = {"address1": "2 Elm", "address2": "", "city": "X", "state": "NY", "country": "USA", "zip": "10001"}
    cases = [
        ("calculate", {"expression": "2 + x"}, "Error: invalid characters in expression"),
        ("calculate", {"expression": "1 / 0"}, "Error: division by zero"),
        ("calculate", {"expression": "2 * (3 + 4.5)"}, "15.0"),
        ("calculate", {"expression": "10 / 3"}, "3.33"),
        ("find_user_id_by_email", {"email": "ann.lee@EXAMPLE.com"}, "ann_lee_1"),
        ("find_user_id_by_email", {"email": "nobody@example.com"}, "Error: user not found"),
        ("find_user_id_by_name_zip", {"first_name": "ANN", "last_name": "lee", "zip": "12345"}, "ann_lee_1"),
        (
            "find_user_id_by_name_zip",
            {"first_name": "Ann", "last_name": "Lee", "zip": "12346"},
            "Error: user not found",
        ),
        ("get_order_details", {"order_id": "W1"}, "Error: order not found"),
        ("get_product_details", {"product_id": "i1"}, "Error: product not found"),
        ("get_user_details", {"user_id": "ann"}, "Error: user not found"),
        ("think", {"thought": "hmm"}, ""),
        ("transfer_to_human_agents", {"summary": "help"}, "Transfer successful"),
        ("list_all_product_types", {}, '{"Gadget": "p2", "Widget": "p1"}'),
        ("cancel_pending_order", {"order_id": "#W9", "reason": "x"}, "Error: order not found"),
        # the status check comes before the reason check
        (
            "cancel_pending_order",
            {"order_id": "#W3", "reason": "x"},
            "Error: non-pending order cannot be cancelled",
        ),
        ("cancel_pending_order", {"order_id": "#W1", "reason": "changed my mind"}, "Error: invalid reason"),
        ("modify_pending_order_address", {"order_id": "#W9", **addr}, "Error: order not found"),
        (
            "modify_pending_order_address",
            {"order_id": "#W2", **addr},
            "Error: non-pending order cannot be modified",
        ),
        ("modify_user_address", {"user_id": "bob", **addr}, "Error: user not found"),
        (
            "modify_pending_order_payment",
            {"order_id": "#W9", "payment_method_id": "paypal_1"},
            "Error: order not found",
        ),
        (
            "modify_pending_order_payment",
            {"order_id": "#W3", "payment_method_id": "paypal_1"},
            "Error: non-pending order cannot be modified",
        ),
        (
            "modify_pending_order_payment",
            {"order_id": "#W1", "payment_method_id": "gift_card_9"},
            "Error: payment method not found",
        ),
        (
            "modify_pending_order_payment",
            {"order_id": "#W4", "payment_method_id": "credit_card_1"},
            "Error: there should be exactly one payment for a pending order",
        ),
        (
            "modify_pending_order_payment",
            {"order_id": "#W1", "payment_method_id": "gift_card_2"},
            "Error: the new payment method should be different from the current one",
        ),
        (
            "modify_pending_order_payment",
            {"order_id": "#W1", "payment_method_id": "gift_card_1"},
            "Error: insufficient gift card balance to pay for the order",
        ),
    ]
    items = "modify_pending_order_items"
    pm = {"payment_method_id": "paypal_1"}
    cases += [
        (items, {"order_id": "#W9", "item_ids": [], "new_item_ids": [], **pm}, "Error: order not found"),
        (
            items,
            {"order_id": "#W2", "item_ids": [], "new_item_ids": [], **pm},
            "Error: non-pending order cannot be modified",
        ),
        # more copies than the order holds; checked before the length check
        (
            items,
            {"order_id": "#W1", "item_ids": ["i1", "i1", "i1"], "new_item_ids": [], **pm},
            "Error: i1 not found",
        ),
        (items, {"order_id": "#W1", "item_ids": ["i2"], "new_item_ids": ["i1"], **pm}, "Error: i2 not found"),
        (
            items,
            {"order_id": "#W1", "item_ids": ["i1"], "new_item_ids": ["i2", "i2"], **pm},
            "Error: the number of items to be exchanged should match",
        ),
        (
            items,
            {"order_id": "#W1", "item_ids": ["i1"], "new_item_ids": ["i3"], **pm},
            "Error: new item i3 not found or available",
        ),
        (
            items,
            {"order_id": "#W1", "item_ids": ["i1"], "new_item_ids": ["j1"], **pm},
            "Error: new item j1 not found or available",
        ),
        (
            items,
            {"order_id": "#W1", "item_ids": ["i1"], "new_item_ids": ["i2"], "payment_method_id": "x"},
            "Error: payment method not found",
        ),
        (
            items,
            {
                "order_id": "#W1",
                "item_ids": ["i1", "i1"],
                "new_item_ids": ["i2", "i2"],
                "payment_method_id": "gift_card_1",
            },
            "Error: insufficient gift card balance to pay for the new item",
        ),
    ]
    exchange = "exchange_delivered_order_items"
    cases += [
        (exchange, {"order_id": "#W9", "item_ids": [], "new_item_ids": [], **pm}, "Error: order not found"),
        (
            exchange,
            {"order_id": "#W1", "item_ids": [], "new_item_ids": [], **pm},
            "Error: non-delivered order cannot be exchanged",
        ),
        (
            exchange,
            {"order_id": "#W2", "item_ids": ["i1", "i1"], "new_item_ids": [], **pm},
            "Error: i1 not found",
        ),
        (
            exchange,
            {"order_id": "#W2", "item_ids": ["i1"], "new_item_ids": [], **pm},
            "Error: the number of items to be exchanged should match",
        ),
        (
            exchange,
            {"order_id": "#W2", "item_ids": ["j1"], "new_item_ids": ["i2"], **pm},
            "Error: new item i2 not found or available",
        ),
        (
            exchange,
            {"order_id": "#W2", "item_ids": ["i1"], "new_item_ids": ["i2"], "payment_method_id": "x"},
            "Error: payment method not found",
        ),
        # 25.5 - 10.0 + 100.0 - 100.0 = 15.5 > 15
        (
            exchange,
            {
                "order_id": "#W2",
                "item_ids": ["i1", "j1"],
                "new_item_ids": ["i2", "j1"],
                "payment_method_id": "gift_card_1",
            },
            "Error: insufficient gift card balance to pay for the price difference",
        ),
    ]
    ret = "return_delivered_order_items"
    cases += [
        (ret, {"order_id": "#W9", "item_ids": ["i1"], **pm}, "Error: order not found"),
        (ret, {"order_id": "#W1", "item_ids": ["i1"], **pm}, "Error: non-delivered order cannot be returned"),
        (
            ret,
            {"order_id": "#W2", "item_ids": ["i1"], "payment_method_id": "x"},
            "Error: payment method not found",
        ),
        (
            ret,
            {"order_id": "#W2", "item_ids": ["i1"], **pm},
            "Error: payment method should be either the original payment method or a gift card",
        ),
        # the payment checks come before the item check, and upstream names no item
        (
            ret,
            {"order_id": "#W2", "item_ids": ["i1", "i1"], "payment_method_id": "credit_card_1"},
            "Error: some item not found",
        ),
        (
            ret,
            {"order_id": "#W2", "item_ids": ["i9"], "payment_method_id": "gift_card_1"},
            "Error: some item not found",
        ),
        # upstream Env.step: unknown names and exceptions become observations
        ("refund_everything", {}, "Unknown action refund_everything"),
        (
            "get_order_details",
            {"order": "#W1"},
            "Error: GetOrderDetails.invoke() got an unexpected keyword argument 'order'",
        ),
        (
            "cancel_pending_order",
            {"order_id": "#W1"},
            "Error: CancelPendingOrder.invoke() missing 1 required positional argument: 'reason'",
        ),
        (
            "modify_user_address",
            {"user_id": "ann_lee_1", "address1": "a", "address2": "", "city": "c", "state": "s"},
            "Error: ModifyUserAddress.invoke() missing 2 required positional arguments: 'country' and 'zip'",
        ),
        (
            "think",
            {"thought": "a", "data": 1},
            "Error: tau_bench.envs.retail.tools.think.Think.invoke() got multiple values for keyword"
            " argument 'data'",
        ),
        ("get_order_details", {"order_id": ["#W1"]}, "Error: unhashable type: 'list'"),
    ]
    for name, kwargs, expected in cases:
        out = _call(db, name, **kwargs)
        assert out == expected, (name, kwargs)
        if expected.startswith(("Error", "Unknown")):
            assert not db.touched, (name, kwargs)  # a failed call writes nothing
    assert base == _mini_db()  # the base is never written


def test_write_outputs_and_state_changes_match_upstream() -> None:
    base = _mini_db()

    # cancel: a refund per payment appended, gift card refunded at once, status and reason set
    db = RetailDB(base)
    out = _call(db, "cancel_pending_order", order_id="#W1", reason="ordered by mistake")
    record = json.loads(out)
    assert out == json.dumps(db.orders["#W1"])
    assert list(record) == [*base["orders"]["#W1"], "cancel_reason"]
    assert record["status"] == "cancelled" and record["cancel_reason"] == "ordered by mistake"
    assert record["payment_history"][1:] == [
        {"transaction_type": "refund", "amount": 20.0, "payment_method_id": "gift_card_2"}
    ]
    assert db.users["ann_lee_1"]["payment_methods"]["gift_card_2"]["balance"] == 520.5

    # modify items: one payment/refund entry of |difference| on the given method, items replaced in place,
    # gift card charged, status "pending (item modified)"
    db = RetailDB(base)
    out = _call(
        db,
        "modify_pending_order_items",
        order_id="#W1",
        item_ids=["i1", "i1"],
        new_item_ids=["i4", "i2"],
        payment_method_id="gift_card_1",
    )
    record = json.loads(out)
    assert record["status"] == "pending (item modified)"
    assert [(i["item_id"], i["price"], i["options"]) for i in record["items"]] == [
        ("i4", 7.25, {"color": "green"}),
        ("i2", 25.5, {"color": "blue"}),
    ]
    assert record["payment_history"][-1] == {
        "transaction_type": "payment",
        "amount": 12.75,
        "payment_method_id": "gift_card_1",
    }
    assert db.users["ann_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 2.25
    assert (
        _call(
            db,
            "modify_pending_order_items",
            order_id="#W1",
            item_ids=[],
            new_item_ids=[],
            payment_method_id="paypal_1",
        )
        == "Error: non-pending order cannot be modified"
    )
    db = RetailDB(base)
    record = json.loads(
        _call(
            db,
            "modify_pending_order_items",
            order_id="#W1",
            item_ids=["i1"],
            new_item_ids=["i4"],
            payment_method_id="gift_card_1",
        )
    )
    assert record["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 2.75,
        "payment_method_id": "gift_card_1",
    }
    assert db.users["ann_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 17.75
    # no items: upstream's integer 0 stays an int (amount 0, an int balance stays int): the hash sees it
    db = RetailDB(base)
    out = _call(
        db,
        "modify_pending_order_items",
        order_id="#W1",
        item_ids=[],
        new_item_ids=[],
        payment_method_id="gift_card_1",
    )
    assert json.loads(out)["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 0,
        "payment_method_id": "gift_card_1",
    }
    assert '"amount": 0,' in out
    assert repr(db.users["ann_lee_1"]["payment_methods"]["gift_card_1"]["balance"]) == "15"

    # modify payment: payment on the new method then refund to the old, both gift cards updated
    db = RetailDB(base)
    record = json.loads(
        _call(db, "modify_pending_order_payment", order_id="#W1", payment_method_id="paypal_1")
    )
    assert record["status"] == "pending"
    assert record["payment_history"] == [
        {"transaction_type": "payment", "amount": 20.0, "payment_method_id": "gift_card_2"},
        {"transaction_type": "payment", "amount": 20.0, "payment_method_id": "paypal_1"},
        {"transaction_type": "refund", "amount": 20.0, "payment_method_id": "gift_card_2"},
    ]
    assert db.users["ann_lee_1"]["payment_methods"]["gift_card_2"]["balance"] == 520.5
    db = RetailDB(base)
    _call(db, "modify_pending_order_payment", order_id="#W3", payment_method_id="paypal_1")
    assert not db.touched
    db = RetailDB(base)
    out = _call(db, "modify_pending_order_payment", order_id="#W5", payment_method_id="gift_card_1")
    assert json.loads(out)["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 12.5, "payment_method_id": "gift_card_1"},
        {"transaction_type": "refund", "amount": 12.5, "payment_method_id": "paypal_1"},
    ]
    assert db.users["ann_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 2.5

    # exchange: nothing paid yet; sorted id lists, the rounded difference, status "exchange requested"
    db = RetailDB(base)
    out = _call(
        db,
        "exchange_delivered_order_items",
        order_id="#W2",
        item_ids=["j1", "i1"],
        new_item_ids=["j1", "i4"],
        payment_method_id="gift_card_1",
    )
    record = json.loads(out)
    assert list(record)[-4:] == [
        "exchange_items",
        "exchange_new_items",
        "exchange_payment_method_id",
        "exchange_price_difference",
    ]
    assert record["status"] == "exchange requested"
    assert record["exchange_items"] == ["i1", "j1"] and record["exchange_new_items"] == ["i4", "j1"]
    assert (
        record["exchange_price_difference"] == -2.75 and record["exchange_payment_method_id"] == "gift_card_1"
    )
    assert record["payment_history"] == base["orders"]["#W2"]["payment_history"]
    assert record["items"] == base["orders"]["#W2"]["items"]
    assert ("users", "ann_lee_1") not in db.touched
    db = RetailDB(base)
    out = _call(
        db,
        "exchange_delivered_order_items",
        order_id="#W2",
        item_ids=[],
        new_item_ids=[],
        payment_method_id="paypal_1",
    )
    assert out.endswith('"exchange_price_difference": 0}')

    # return: sorted ids, status "return requested", refund method recorded, nothing refunded yet
    db = RetailDB(base)
    record = json.loads(
        _call(
            db,
            "return_delivered_order_items",
            order_id="#W2",
            item_ids=["j1", "i1"],
            payment_method_id="gift_card_1",
        )
    )
    assert record["status"] == "return requested"
    assert list(record)[-2:] == ["return_items", "return_payment_method_id"]
    assert record["return_items"] == ["i1", "j1"] and record["return_payment_method_id"] == "gift_card_1"
    assert record["payment_history"] == base["orders"]["#W2"]["payment_history"]
    assert ("users", "ann_lee_1") not in db.touched

    # addresses: the six fields in upstream's order; the whole record returned
    addr = {
        "address1": "2 Elm",
        "address2": "Apt 3",
        "city": "X",
        "state": "NY",
        "country": "USA",
        "zip": "10001",
    }
    db = RetailDB(base)
    record = json.loads(_call(db, "modify_pending_order_address", order_id="#W1", **addr))
    assert list(record["address"].items()) == list(addr.items()) and record["status"] == "pending"
    record = json.loads(_call(db, "modify_user_address", user_id="ann_lee_1", **addr))
    assert list(record["address"].items()) == list(addr.items())
    assert list(record) == list(base["users"]["ann_lee_1"])
    assert base == _mini_db()


# Every gold action of the upstream test and dev sets whose upstream result is an error:
# (split, task_id, action index) -> upstream's message.
GOLD_ERRORS = {
    ("test", 2, 1): "Error: product not found",
    ("test", 3, 1): "Error: product not found",
    ("test", 4, 1): "Error: product not found",
    ("test", 12, 4): "Error: payment method should be either the original payment method or a gift card",
    ("test", 13, 4): "Error: payment method should be either the original payment method or a gift card",
    ("test", 21, 5): "Error: product not found",
    ("test", 21, 6): "Error: product not found",
    ("test", 21, 8): "Error: product not found",
    ("test", 35, 0): "Error: user not found",
    ("test", 36, 0): "Error: user not found",
    ("test", 37, 0): "Error: user not found",
    ("test", 38, 0): "Error: user not found",
    ("test", 39, 0): "Error: user not found",
    ("test", 46, 1): "Error: order not found",
    ("test", 46, 2): "Error: order not found",
    ("test", 47, 1): "Error: order not found",
    ("test", 47, 2): "Error: order not found",
    ("test", 54, 0): "Error: user not found",
    ("test", 55, 0): "Error: user not found",
    ("test", 64, 6): "Error: non-delivered order cannot be exchanged",
    ("test", 67, 0): "Error: user not found",
    ("test", 67, 1): "Error: user not found",
    ("test", 68, 0): "Error: user not found",
    ("test", 106, 0): "Error: insufficient gift card balance to pay for the price difference",
}
WRITE_STATUS = {
    "cancel_pending_order": "cancelled",
    "exchange_delivered_order_items": "exchange requested",
    "modify_pending_order_items": "pending (item modified)",
    "return_delivered_order_items": "return requested",
}


def _hashable_str(value) -> str:
    from harness_gym.domains.tau_retail.tools import to_hashable

    return str(to_hashable(value))


def _upstream_expected(state: dict, name: str, kw: dict) -> str | None:
    """Upstream's result of one successful gold call on the plain-dict ``state`` (mutated in place, with
    the touched records copied first), or None for a tool whose output the caller checks otherwise."""
    import copy

    orders, users, products = state["orders"], state["users"], state["products"]

    def order_w(order_id: str) -> dict:
        orders[order_id] = copy.deepcopy(orders[order_id])
        return orders[order_id]

    def method_w(user_id: str, method_id: str) -> dict:
        users[user_id] = copy.deepcopy(users[user_id])
        return users[user_id]["payment_methods"][method_id]

    if name == "get_order_details":
        return json.dumps(orders[kw["order_id"]])
    if name == "get_user_details":
        return json.dumps(users[kw["user_id"]])
    if name == "get_product_details":
        return json.dumps(products[kw["product_id"]])
    if name == "find_user_id_by_email":
        return next(u for u, p in users.items() if p["email"].lower() == kw["email"].lower())
    if name == "find_user_id_by_name_zip":
        return next(
            u
            for u, p in users.items()
            if (p["name"]["first_name"].lower(), p["name"]["last_name"].lower(), p["address"]["zip"])
            == (kw["first_name"].lower(), kw["last_name"].lower(), kw["zip"])
        )
    if name == "list_all_product_types":
        return json.dumps(dict(sorted((p["name"], pid) for pid, p in products.items())))
    if name == "think":
        return ""
    if name == "transfer_to_human_agents":
        return "Transfer successful"
    if name == "calculate":
        return None
    address = {k: kw.get(k) for k in ("address1", "address2", "city", "state", "country", "zip")}
    if name == "modify_user_address":
        users[kw["user_id"]] = copy.deepcopy(users[kw["user_id"]])
        users[kw["user_id"]]["address"] = address
        return json.dumps(users[kw["user_id"]])
    order = order_w(kw["order_id"])
    if name == "modify_pending_order_address":
        order["address"] = address
    elif name == "cancel_pending_order":
        refunds = [dict(p, transaction_type="refund") for p in order["payment_history"]]
        for p in refunds:
            if "gift_card" in p["payment_method_id"]:
                gc = method_w(order["user_id"], p["payment_method_id"])
                gc["balance"] = round(gc["balance"] + p["amount"], 2)
        order.update(status="cancelled", cancel_reason=kw["reason"])
        order["payment_history"] += refunds
    elif name == "return_delivered_order_items":
        order.update(
            status="return requested",
            return_items=sorted(kw["item_ids"]),
            return_payment_method_id=kw["payment_method_id"],
        )
    elif name == "modify_pending_order_payment":
        (first,) = order["payment_history"]
        new, old, amount = kw["payment_method_id"], first["payment_method_id"], first["amount"]
        order["payment_history"] += [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": new},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old},
        ]
        for method_id, sign in ((new, -1), (old, 1)):
            if "gift_card" in method_id:
                gc = method_w(order["user_id"], method_id)
                gc["balance"] = round(gc["balance"] + sign * amount, 2)
    else:  # exchange / modify items
        diff = 0
        for old_id, new_id in zip(kw["item_ids"], kw["new_item_ids"], strict=True):
            item = next(i for i in order["items"] if i["item_id"] == old_id)
            new_variant = products[item["product_id"]]["variants"][new_id]
            diff += new_variant["price"] - item["price"]
            if name == "modify_pending_order_items":
                item.update(item_id=new_id, price=new_variant["price"], options=new_variant["options"])
        if name == "exchange_delivered_order_items":
            order.update(
                status="exchange requested",
                exchange_items=sorted(kw["item_ids"]),
                exchange_new_items=sorted(kw["new_item_ids"]),
                exchange_payment_method_id=kw["payment_method_id"],
                exchange_price_difference=round(diff, 2),
            )
        else:
            order["payment_history"].append(
                {
                    "transaction_type": "payment" if diff > 0 else "refund",
                    "amount": abs(diff),
                    "payment_method_id": kw["payment_method_id"],
                }
            )
            if users[order["user_id"]]["payment_methods"][kw["payment_method_id"]]["source"] == "gift_card":
                gc = method_w(order["user_id"], kw["payment_method_id"])
                gc["balance"] = round(gc["balance"] - diff, 2)
            order["status"] = "pending (item modified)"
    return json.dumps(order)


def test_gold_actions_return_upstream_results() -> None:
    base = load_upstream_db(str(upstream_dir()))
    errors = {}
    written = {name: 0 for name in WRITE_TOOLS}
    for split in ("test", "dev"):
        for task in upstream_tasks(split):
            db = RetailDB(base)
            state = {
                "users": dict(base["users"]),
                "orders": dict(base["orders"]),
                "products": base["products"],
            }
            for index, call in enumerate(task["actions"]):
                where = (split, task["task_id"], index)
                out = _call(db, call["name"], **call["kwargs"])
                if out.startswith("Error"):
                    errors[where] = out
                    continue
                expected = _upstream_expected(state, call["name"], call["kwargs"])
                if expected is not None:
                    assert out == expected, where
                if call["name"] == "calculate":
                    assert out == str(round(float(eval(call["kwargs"]["expression"])), 2)), where
                if call["name"] in WRITE_TOOLS:
                    written[call["name"]] += 1
                    record = json.loads(out)
                    if call["name"] == "modify_user_address":
                        assert record["address"]["zip"] == call["kwargs"]["zip"], where
                    else:
                        assert record["order_id"] == call["kwargs"]["order_id"], where
                        assert record["status"] == WRITE_STATUS.get(call["name"], "pending"), where
            # the final DB equals upstream's: the same records (the hash's canonical form) everywhere
            for table in ("users", "orders"):
                ours, theirs = getattr(db, table), state[table]
                assert ours.keys() == theirs.keys()
                for key, value in ours.items():
                    if value is base[table][key] and theirs[key] is base[table][key]:
                        continue
                    assert _hashable_str(value) == _hashable_str(theirs[key]), (split, task["task_id"], key)
    assert errors == GOLD_ERRORS
    # every write tool is exercised by a successful gold call
    assert all(written.values()), written


def _replies(*texts: str) -> list[dict[str, Any]]:
    return [{"name": "respond", "kwargs": {"content": t}} for t in texts] + [{"name": "get_user_details"}]


def test_numeric_outputs_need_a_standalone_number_and_no_rivals_of_the_same_form() -> None:
    """A numeric output counts when stated as a number of its own (commas ignored); a text output by
    upstream's check. Rivals are other stated numbers of the same form (decimal places, or digits of a
    whole number) that are no required output; more than four extra numbers, or glued figures, make a
    candidate listing. Only respond messages count, each read as a text of its own (a respond without
    arguments says nothing)."""
    from harness_gym.domains.tau_retail.verifier import (
        _form,
        candidate_listing,
        rival_figures,
        rubric_outputs_found,
    )

    assert _form("68.81") == (True, 2) and _form("007") == (False, 1) and _form("0") == (False, 1)
    assert _form("1200") == (False, 4) and _form("123.5") == (True, 1)
    outputs = ["55.44", "1,200"]
    calls = _replies("Refund is 55.44 and 1200 points", "order #W5544")
    assert rubric_outputs_found(outputs, calls) == [True, True]
    assert rubric_outputs_found(["55.44"], _replies("total 155.449")) == [False]
    assert rubric_outputs_found(["55.44"], _replies("the total is 55.44", "thanks")) == [True]
    assert rubric_outputs_found(["55.44"], [{"name": "respond"}, *_replies("55.44")]) == [True]
    assert rubric_outputs_found(["blue", "55.44"], _replies("the Blue one, 55.44")) == [True, True]
    assert rubric_outputs_found(
        ["55.44"], [{"name": "get_user_details", "kwargs": {"content": "55.44"}}]
    ) == [False]
    assert rival_figures("55.44", outputs, _replies("55.44 or 47.94 or 9.5 or 3")) == {"47.94"}
    assert rival_figures("1,200", outputs, _replies("1200 or 3400 or 120")) == {"3400"}
    assert rival_figures("blue", outputs, _replies("1.23")) == set()
    assert not candidate_listing(outputs, _replies("55.44 1200 1 2 3 4"))
    assert candidate_listing(outputs, _replies("55.44 1200 1 2 3 4 5"))
    assert candidate_listing([], _replies("1 2 3 4 5"))
    assert not candidate_listing([], _replies("1 2 3 4"))
    assert candidate_listing(outputs, _replies("55.44.1200"))  # two decimal points: glued
    assert candidate_listing(outputs, _replies("12345678901234567"))  # 17 digits
    assert not candidate_listing(outputs, _replies("1234567890123456"))


def _two_user_db() -> dict:
    """The hand-built DB plus a second user, bob_2, who owns the pending order #W9."""
    db = _mini_db()
    db["users"]["bob_2"] = {**json.loads(json.dumps(db["users"]["ann_lee_1"])), "orders": ["#W9"]}
    db["orders"]["#W9"] = {
        **json.loads(json.dumps(db["orders"]["#W5"])),
        "order_id": "#W9",
        "user_id": "bob_2",
    }
    return db


def _cancel(order_id: str) -> dict[str, Any]:
    return {"name": "cancel_pending_order", "kwargs": {"order_id": order_id, "reason": "no longer needed"}}


def _say(text: str) -> dict[str, Any]:
    return {"name": "respond", "kwargs": {"content": text}}


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ('{"calls": []}', []),
        ('{"calls": [{"name": "a"}]}', [{"name": "a"}]),
        ('{"calls": [{"name": "a", "kwargs": {"k": 1}}]}', [{"name": "a", "kwargs": {"k": 1}}]),
        ("not json", None),
        ("[1]", None),
        ('{"calls": {}}', None),
        ('{"calls": ["a"]}', None),
        ('{"calls": [{"kwargs": {}}]}', None),
        ('{"calls": [{"name": 3}]}', None),
        ('{"calls": [{"name": "a", "kwargs": []}]}', None),
    ],
)
def test_a_plan_is_an_object_with_a_list_of_named_calls(text: str, calls: list | None) -> None:
    """A plan is a JSON object whose ``calls`` is a list of objects, each with a string ``name`` and, if
    any, an object of ``kwargs``; anything else is no plan."""
    from harness_gym.domains.tau_retail.verifier import parse_plan

    assert parse_plan(text) == calls


def test_a_write_is_identified_by_its_tool_and_arguments() -> None:
    """Writes are matched by tool name and arguments (in any key order); no arguments are empty ones."""
    from harness_gym.domains.tau_retail.verifier import _key

    assert _key(_cancel("#W1")) == _key(
        {"name": "cancel_pending_order", "kwargs": {"reason": "no longer needed", "order_id": "#W1"}}
    )
    assert _key(_cancel("#W1")) != _key(_cancel("#W2"))
    assert _key({"name": "a", "kwargs": {"k": 1}}) != _key({"name": "b", "kwargs": {"k": 1}})
    assert (
        _key({"name": "a"}) == _key({"name": "a", "kwargs": {}}) != _key({"name": "a", "kwargs": {"k": None}})
    )


def test_policy_issues_in_words() -> None:
    """The dry run's findings, word for word and tagged: a tool that does not exist, a write that fails
    (unless the same call fails in the gold replay too), a write to another user's order and an address
    change for another user (or for no user named). An order id that is not a string names no order."""
    from harness_gym.domains.tau_retail.verifier import _key, policy_issues

    db = _two_user_db()
    address = {"address1": "2 Side St", "address2": "", "city": "Town", "country": "USA"}
    calls = [
        {"name": "refund_everything"},
        _cancel("#W2"),
        _cancel("#W9"),
        {"name": "modify_user_address", "kwargs": {"user_id": "bob_2", **address, "state": "CA", "zip": "1"}},
    ]
    issues = policy_issues(db, "ann_lee_1", calls)
    assert [(i.component, str(i)) for i in issues] == [
        ("unknown_tool", "unknown tool 'refund_everything'"),
        ("write_failed", "cancel_pending_order failed: Error: non-pending order cannot be cancelled"),
        ("foreign_order", "cancel_pending_order writes to order #W9, which belongs to another user"),
        ("foreign_address", "modify_user_address changes another user's address"),
    ]
    assert policy_issues(db, "ann_lee_1", [_cancel("#W2")], frozenset({_key(_cancel("#W2"))})) == []
    no_arguments = policy_issues(db, "ann_lee_1", [{"name": "modify_user_address"}])
    assert [i.component for i in no_arguments] == ["write_failed", "foreign_address"]
    listed = {"name": "cancel_pending_order", "kwargs": {"order_id": ["#W9"], "reason": "no longer needed"}}
    assert [i.component for i in policy_issues(db, "ann_lee_1", [listed])] == [
        "write_failed"
    ]  # no order named


@pytest.mark.parametrize(
    ("gold", "outputs", "plan", "scores", "upstream"),
    [
        ([_say("hi")], [], [_say("hello")], (3.0, 2.0, 1.0, 1.0), 1.0),
        ([_cancel("#W1")], [], [_cancel("#W1"), _cancel("#W2")], (0.0, 1.0, 0.0, 1.0), 1.0),
        ([_cancel("#W1")], [], [_cancel("#W1"), _cancel("#W1")], (0.0, 1.0, 0.0, 1.0), 1.0),
        (
            [_cancel("#W1")],
            [],
            [{"name": "get_order_details", "kwargs": {"order_id": "#W77"}}, _cancel("#W1")],
            (3.0, 2.0, 1.0, 1.0),
            1.0,
        ),
        ([_cancel("#W2"), _cancel("#W1")], [], [_cancel("#W2"), _cancel("#W1")], (3.0, 2.0, 1.0, 1.0), 1.0),
        ([_cancel("#W1")], [], [_cancel("#W1"), _cancel("#W4"), _cancel("#W5")], (0.0, 0.0, 1.0, 1.0), 0.0),
        ([_cancel("#W1"), _cancel("#W4")], [], [_cancel("#W1")], (0.0, 1.0, 1.0, 1.0), 0.0),
        ([_say("x")], ["10.5", "blue"], [_say("it is blue")], (3.0, 2.0, 1.0, 0.5), 0.0),
        ([_say("x")], ["10.5"], [_say("10.5 or 1 2 3 4")], (3.0, 2.0, 1.0, 1.0), 1.0),
        ([_say("x")], ["10.5"], [_say("10.5 or 1 2 3 4 5")], (3.0, 2.0, 1.0, 0.0), 1.0),
    ],
    ids=[
        "no-writes",
        "extra-failed-write",
        "repeated-write-fails",
        "failed-read",
        "gold-failure-repeated",
        "guessing",
        "half-the-writes",
        "one-of-two-outputs",
        "four-extra-numbers",
        "five-extra-numbers",
    ],
)
def test_rubric_criteria_and_native_score_on_hand_built_plans(
    gold: list, outputs: list[str], plan: list, scores: tuple[float, ...], upstream: float
) -> None:
    """The rubric on the hand-built DB, criterion by criterion out of (3, 2, 1, 1): db_match needs the gold
    state with no failed write (a read that fails is harmless; a write that failed in the gold replay
    too is allowed) and no guessing (more unmatched writes than matched); writes is the matched share
    of the longer write list, 0 when guessing, full with no writes at all; policy is lost to any dry-run
    finding; outputs is the share found, none when a reply lists candidates (more than four extra
    numbers). ``native`` is upstream's 0/1 reward (gold state and every output found), 0 for a text that
    is no plan."""
    from harness_gym.domains.tau_retail.verifier import native

    db = _two_user_db()
    payload = {"actions": gold, "user_id": "ann_lee_1", "outputs": outputs}
    text = json.dumps({"calls": plan})
    db_match, writes, policy, found = scores
    assert artifact_scores(db, payload, text) == {
        "db_match": (db_match, 3.0),
        "writes": (writes, 2.0),
        "policy": (policy, 1.0),
        "outputs": (found, 1.0),
    }
    assert native(db, payload, text) == upstream
    assert native(db, payload, "not a plan") == 0.0
