"""tau-retail: plan the tool calls that resolve a retail customer request, scored against a gold replay."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from harness_gym.core.task import Task, task_from_record
from harness_gym.domains.base import (
    GROUNDING_WEIGHT,
    EvidenceSetting,
    UpstreamAdapter,
    check_outcome,
    content,
    form,
)
from harness_gym.domains.generation import MDP2_VERSION
from harness_gym.domains.tau_retail import features as task_features
from harness_gym.domains.tau_retail.db import build_db, load_upstream_db
from harness_gym.domains.tau_retail.prompts import TauRetailPrompts
from harness_gym.domains.tau_retail.records import load_upstream_records
from harness_gym.domains.tau_retail.tools import WRITE_TOOLS
from harness_gym.domains.tau_retail.verifier import (
    CRITERIA,
    artifact_scores,
    candidate_listing,
    native,
    parse_plan,
    policy_issues,
)
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Context, Finding
from harness_gym.executors.profiles import DraftParams

RETRIEVE_ROUNDS = 3


DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.04, "standard": 0.02, "hard": 0.01},
    informed_gain=0.12,
    flaw_weights={
        "wrong_argument": 2.0,
        "policy_violation": 1.5,
        "missing_write": 1.0,
        "extra_write": 1.0,
        "wrong_item": 1.0,
        "wrong_output": 1.0,
        "malformed": 0.5,
    },
)
"""Simulated LLM agent drafting retail tool-call plans (defaults calibrated on the Base harness only).

Calibration (Base, eval, protocol seeds (0,1,2) x 3): G = 0.334 (paper 0.337); upstream data 0.357.
Flawed plans keep partial rubric credit (~0.3 mean), so p_correct is low and the gain modest.
Informedness is the fraction of the task's relevant records (the user, the orders and products the
gold writes touch) gathered by RETRIEVE; Base retrieves once (the user record only). Wrong plans lean
towards wrong arguments and policy violations, the common tau-bench agent failures.
"""


FLAWS = {
    "wrong_argument": content("write_failed"),
    "wrong_item": content("write_failed"),
    "policy_violation": content("write_failed", "foreign_order", "foreign_address", "order_not_looked_up"),
    "extra_write": content("repeated_write"),
    "missing_write": content(),
    "wrong_output": content("listing"),
    "malformed": form("format", "unknown_tool"),
}
"""Which findings name each flaw kind, its class and what its fix needs: arguments, items, order status
and ownership, and the figures to report come from the user, order and product records (informedness);
no check can name a missing write; a malformed plan needs nothing."""


def written_orders(calls: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The orders the plan writes to, sorted, each as (id, its evidence item ``order:<id>``)."""
    named = {
        str(c["kwargs"]["order_id"]): f"order:{c['kwargs']['order_id']}"
        for c in calls
        if c["name"] in WRITE_TOOLS and "order_id" in c.get("kwargs", {})
    }
    return tuple(sorted(named.items()))


def unlooked_orders(writes: tuple[tuple[str, str], ...], evidence: Iterable[str]) -> list[str]:
    """The orders of ``written_orders`` the plan writes to without having looked them up (their
    ``order:<id>`` not in evidence)."""
    seen = set(evidence)
    return [order for order, item in writes if item not in seen]


def _read_order(task: Task):
    """Sort key: an evidence id's first mention in the gold actions (the user first)."""
    names = [f"user:{task.payload['user_id']}"]
    for call in task.payload["actions"]:
        kwargs = call.get("kwargs", {})
        names += [f"order:{kwargs['order_id']}"] if "order_id" in kwargs else []
        names += [f"product:{kwargs['product_id']}"] if "product_id" in kwargs else []
    return lambda item: names.index(item)


def _relevant(task: Task) -> frozenset[str]:
    """Records a plan needs: the user, every order the gold actions name, the products of named items."""
    payload = task.payload
    ids = {f"user:{payload['user_id']}"}
    for call in payload["actions"]:
        kwargs = call.get("kwargs", {})
        if "order_id" in kwargs:
            ids.add(f"order:{kwargs['order_id']}")
        if "product_id" in kwargs:
            ids.add(f"product:{kwargs['product_id']}")
    return frozenset(ids)


class TauRetailDomain(UpstreamAdapter, EvidenceSetting):
    """RETRIEVE runs the read-only tools; upstream tau-bench files are read (and checked) at construction."""

    name = "tau_retail"
    features = declare(name, task_features)
    draft_params = DRAFT_PARAMS
    prompts_cls = TauRetailPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = {**CRITERIA, "grounding": GROUNDING_WEIGHT}
    """The verifier's criteria, plus ``grounding``: every order the plan writes to was looked up."""
    cost_budget = 16.0
    mdp2_task_file = f"{name}-{MDP2_VERSION}.jsonl"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        data_path = self.data_path
        if data_path is None:
            self.db = build_db()
        else:
            self.db = load_upstream_db(str(data_path))
            records = load_upstream_records(str(data_path), self.n_train, self.n_eval)
            self._upstream = [task_from_record(r, f"{data_path}:{r['task_id']}") for r in records]

    def upstream_tasks(self) -> list[Task]:
        return list(self._upstream)

    def informedness(self, task: Task, context: Context) -> float:
        relevant = self.per_task("relevant", task, lambda: _relevant(task))
        return len(relevant.intersection(context.evidence)) / len(relevant)

    def can_retrieve(self, ep: Episode) -> bool:
        if ep.task.version == MDP2_VERSION:
            return self._next_lookup(ep) is not None
        return self._rounds(ep) < RETRIEVE_ROUNDS

    def _lookups(self, task: Task) -> tuple[str, ...]:
        """MDP v2's lookup order for a task: the records the request needs first (in the order its gold
        plan reads them: the user, the orders it names, the products of the items it swaps), then the
        user's other orders and the products of all their orders."""

        def build() -> tuple[str, ...]:
            needed = sorted(_relevant(task), key=_read_order(task))
            user = self.db["users"].get(task.payload["user_id"], {"orders": []})
            rest = [f"order:{o}" for o in user["orders"]]
            rest += [
                f"product:{i['product_id']}" for o in user["orders"] for i in self.db["orders"][o]["items"]
            ]
            return tuple(dict.fromkeys([*needed, *rest]))

        return self.per_task("lookups", task, build)

    def _next_lookup(self, ep: Episode) -> str | None:
        seen = set(ep.context.evidence)
        return next((item for item in self._lookups(ep.task) if item not in seen), None)

    @staticmethod
    def _rounds(ep: Episode) -> int:
        return sum(1 for s in ep.steps if s.get("action") == "RETRIEVE" and s.get("valid", True))

    def observe(self, ep: Episode) -> Outcome:
        return Outcome(text="read the customer request and the store policy")

    def retrieve(self, ep: Episode) -> Outcome:
        """Round 1: get_user_details; round 2: get_order_details of the user's orders; 3: their products.
        MDP v2 (its tasks): one read call per round, the next of ``_lookups``."""
        item = self._next_lookup(ep) if ep.task.version == MDP2_VERSION else None
        if item is not None:
            kind, _, key = item.partition(":")
            return Outcome(text=f"get_{kind}_details({key})", evidence=(item,))
        user_id = ep.task.payload["user_id"]
        user = self.db["users"].get(user_id)
        done = {e for e in ep.context.evidence}
        if f"user:{user_id}" not in done or user is None:
            return Outcome(text=f"get_user_details({user_id})", evidence=(f"user:{user_id}",))
        orders = [o for o in user["orders"] if f"order:{o}" not in done]
        if orders:
            return Outcome(
                text=f"get_order_details for {len(orders)} order(s)",
                evidence=tuple(f"order:{o}" for o in orders),
            )
        pids = sorted({i["product_id"] for o in user["orders"] for i in self.db["orders"][o]["items"]})
        new = tuple(f"product:{p}" for p in pids if f"product:{p}" not in done)
        return Outcome(text=f"get_product_details for {len(new)} product(s)", evidence=new)

    @staticmethod
    def writes(task: Task, plan: str, calls: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
        """``written_orders`` of a parsed plan, kept per plan (a CHECK and the final score ask again)."""
        return VERIFIER_CACHE.get("writes", task, plan, lambda: written_orders(calls))

    def check(self, ep: Episode) -> Outcome:
        """Dry-run the plan on a copy of the DB: format, failed writes, ownership, grounding, an LLM judge."""
        assert ep.draft is not None and ep.draft_hash is not None
        task, draft = ep.task, ep.draft
        calls = VERIFIER_CACHE.get("parse", task, draft, lambda: parse_plan(draft))
        issues: list[Finding] = []
        failed = 0
        if calls is None:
            issues.append(
                Finding("format", 'format: expected one JSON object {"calls": [{"name", "kwargs"}, ...]}')
            )
            failed += 2
        else:
            found = VERIFIER_CACHE.get(
                "policy", task, draft, lambda: tuple(policy_issues(self.db, task.payload["user_id"], calls))
            )
            issues.extend(found)
            failed += bool(found)
            unverified = unlooked_orders(self.writes(task, draft, calls), ep.context.evidence)
            if unverified:
                issues.append(
                    Finding(
                        "order_not_looked_up",
                        f"grounding: order(s) {', '.join(unverified)} written without being looked up",
                    )
                )
                failed += 1
            repeated, listing = VERIFIER_CACHE.get("shape", task, draft, lambda: _plan_shape(calls))
            if repeated:
                issues.append(
                    Finding(
                        "repeated_write", f"plan: the same {', '.join(repeated)} call is made more than once"
                    )
                )
                failed += 1
            if listing:
                issues.append(
                    Finding(
                        "listing",
                        "reply: the respond messages list many numbers; state the outcome and the figures "
                        "asked",
                    )
                )
                failed += 1
        _, judge_issue = ep.judge()
        if judge_issue is not None:
            issues.append(judge_issue)
            failed += 1
        coverage = 1.0 - min(failed, 4) / 4
        return check_outcome(ep, f"dry-ran the plan: {len(issues)} issue(s)", coverage, issues)

    def score(self, ep: Episode, artifact: str) -> Verdict:
        task = ep.task
        rubric = VERIFIER_CACHE.get(
            "score", task, artifact, lambda: artifact_scores(self.db, task.payload, artifact)
        )
        native_score = VERIFIER_CACHE.get(
            "native", task, artifact, lambda: native(self.db, task.payload, artifact)
        )
        calls = VERIFIER_CACHE.get("parse", task, artifact, lambda: parse_plan(artifact))
        grounded = calls is None or not unlooked_orders(
            self.writes(task, artifact, calls), ep.context.evidence
        )
        rubric = {**rubric, "grounding": (GROUNDING_WEIGHT * grounded, GROUNDING_WEIGHT)}
        seen = set(ep.context.evidence)
        named = VERIFIER_CACHE.get(  # the orders any call of the plan names
            "named",
            task,
            artifact,
            lambda: [
                f"order:{c['kwargs']['order_id']}" for c in calls or () if "order_id" in c.get("kwargs", {})
            ],
        )
        support = sum(n in seen for n in named) / len(named) if named else float(bool(seen))
        return Verdict(rubric=dict(rubric), signals={"native_score": native_score, "claim_support": support})


def _plan_shape(calls: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """What a CHECK sees of a parsed plan by itself: the write tools called twice with the same arguments,
    and whether its respond messages list many numbers (kept per draft in ``VERIFIER_CACHE``)."""
    keys = [json.dumps([c["name"], c.get("kwargs", {})], sort_keys=True) for c in calls]
    repeated = sorted(
        {
            c["name"]
            for c, k in zip(calls, keys, strict=True)
            if c["name"] in WRITE_TOOLS and keys.count(k) > 1
        }
    )
    return repeated, candidate_listing((), calls)


class HarnessTauRetailEnv(HarnessEnv):
    """tau-retail: plan the tool calls that resolve a retail customer request under the store policy.

    ## Description

    Each task is a customer request over a retail database in the tau-bench schema (users, orders,
    products) with the 16 retail tools (7 writes: cancel / modify pending orders, return / exchange
    delivered orders, change the user's address). The artifact is a plan, one JSON object
    ``{"calls": [{"name": <tool or "respond">, "kwargs": {...}}, ...]}``; ``respond`` carries the message
    to the customer. By default a generated offline DB (60 users, 150 orders, 20 products) with 16
    train / 20 eval tasks; ``data_path=`` loads upstream files (users.json, orders.json, products.json,
    tasks_train.jsonl -> train, tasks_test.jsonl -> eval; ``n_train``/``n_eval`` tasks picked evenly).

    - OBSERVE: read the request and the policy.
    - RETRIEVE: run read-only tools for the task's user: round 1 ``get_user_details``, round 2
      ``get_order_details`` of the user's orders, round 3 ``get_product_details`` of their products; each
      record is an evidence item. Drafts are more often right when the records the request touches were
      gathered. Masked after three rounds. MDP v2 (``obs_layout="v2"``, task set ``tau_retail-v1``): one
      read call per round, the records the request needs first (the user, each order it names, the
      product of each variant it asks for), then the user's other records; masked once all are read. So
      the rounds a plan needs differ by request, and every extra one is a step not spent checking or
      revising.
    - CHECK: dry-run the plan on a copy of the DB: format, failed writes (status preconditions, items,
      payment methods), writes to other users' orders, writes on orders not looked up, plus an LLM judge.
    - CALL_TOOL: not available (always masked).

    Rubric: ``db_match`` (3; the DB after the plan equals the DB after replaying the gold actions),
    ``writes`` (2; gold write calls reproduced, over max(gold writes, plan writes)), ``policy`` (1; no
    failed write, no foreign order), ``outputs`` (1; required outputs in respond messages). The final
    ``info["trajectory"]["signals"]["native_score"]`` is upstream's reward (DB hash and outputs).
    Base harness: OBSERVE, RETRIEVE, DRAFT, SUBMIT.
    """

    domain_cls = TauRetailDomain
