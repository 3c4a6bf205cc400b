"""Plan parsing, the plan-quality rubric, the dry-run policy check and the flawed-plan pool.

A plan is one JSON object ``{"calls": [{"name": <tool or "respond">, "kwargs": {...}}, ...]}``; a
``respond`` call carries ``{"content": <message to the user>}`` (where required outputs must appear).

What earns nothing on the rubric: writes that fail or touch another user's orders or address, unknown
tools (``policy`` 0); a failed write also costs ``db_match`` even when the end state is right (a plan that
tries every write on every order reaches the gold state whenever the wrong ones fail, so the end state
pays only for a plan whose writes all went through); writes beyond the gold ones (``writes`` divides by
the longer list, and a plan with more wrong writes than right ones is guessing and earns 0, so calling
every write tool on every order earns nothing); and responses that list candidates: when the respond
messages state more than ``MAX_EXTRA_NUMBERS`` numbers besides the required outputs' own, ``outputs`` is
0, a numeric output counts only when stated as a number of its own (upstream's native score keeps its
plain substring check), and a required figure stated among other candidates of its form earns nothing
(:func:`rival_figures`). Argument values of any JSON type are tolerated (an unhashable order id is an error
of that call, not of the verifier).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness_gym.domains.tau_retail.tools import (
    RESPOND,
    TOOLS,
    WRITE_TOOLS,
    native_score,
    outputs_found,
    run_calls,
    same_state,
)

CRITERIA: dict[str, float] = {"db_match": 3.0, "writes": 2.0, "policy": 1.0, "outputs": 1.0}
MAX_EXTRA_NUMBERS = 4
"""Numbers a reply may state besides the required outputs (item ids, a price breakdown) before it counts
as a list of candidates."""
MAX_NUMBER_CHARS = 16
"""Longer than any id or amount a reply needs (upstream tracking numbers have 12 digits)."""
_DIGIT_RUN = re.compile(r"\d[\d.]*\d")
_NUMBER = re.compile(r"(?<![\w.#])\d+(?:\.\d+)?(?!\w|\.\d)")


def parse_plan(text: str) -> list[dict[str, Any]] | None:
    """The calls of a plan, or None when the text is not a well-formed plan."""
    try:
        plan = json.loads(text)
    except (json.JSONDecodeError, TypeError, RecursionError):
        return None
    calls = plan.get("calls") if isinstance(plan, dict) else None
    if not isinstance(calls, list):
        return None
    for call in calls:
        if not (isinstance(call, dict) and isinstance(call.get("name"), str)):
            return None
        if not isinstance(call.get("kwargs", {}), dict):
            return None
    return calls


def render_plan(calls: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps({"calls": list(calls)}, sort_keys=True)


def _key(call: Mapping[str, Any]) -> str:
    return json.dumps([call["name"], call.get("kwargs", {})], sort_keys=True)


def stated_numbers(text: str) -> set[str]:
    """Standalone numbers in a text (commas removed, as upstream's output check does)."""
    return set(_NUMBER.findall(text.replace(",", "")))


def candidate_listing(outputs: Sequence[str], calls: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the respond messages state more than ``MAX_EXTRA_NUMBERS`` numbers beyond the outputs', or
    figures glued together (a digit run longer than ``MAX_NUMBER_CHARS`` or with two decimal points)."""
    said = _said(calls)
    required = set().union(*(stated_numbers(o) for o in outputs)) if outputs else set()
    glued = any(len(run) > MAX_NUMBER_CHARS or run.count(".") > 1 for run in _DIGIT_RUN.findall(said))
    return glued or len(stated_numbers(said) - required) > MAX_EXTRA_NUMBERS


def _form(number: str) -> tuple[bool, int]:
    """A number's form: decimal or whole, and its decimal places (or, if whole, its digits)."""
    whole, _, fraction = number.partition(".")
    return (bool(fraction), len(fraction) if fraction else len(whole.lstrip("0") or "0"))


def rival_figures(output: str, outputs: Sequence[str], calls: Sequence[Mapping[str, Any]]) -> set[str]:
    """Other candidates for a required numeric figure: stated numbers of the same form (as many decimal
    places; for a whole number, as many digits) that are not a required output. A reply with any earns no
    credit for that figure ("one of 68.81, 47.94, 55.44" names three candidates for one amount)."""
    value = output.replace(",", "")
    if not _NUMBER.fullmatch(value):
        return set()
    required = {float(x) for o in outputs for x in stated_numbers(o)}
    return {x for x in stated_numbers(_said(calls)) if _form(x) == _form(value) and float(x) not in required}


def _said(calls: Sequence[Mapping[str, Any]]) -> str:
    return " ".join(str(c.get("kwargs", {}).get("content", "")) for c in calls if c["name"] == RESPOND)


def rubric_outputs_found(outputs: Sequence[str], calls: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Upstream's output check, except that a numeric output must be stated as a number of its own:
    ``55.44`` is not found inside ``155.449`` (upstream's substring test would find it, so one long
    number could carry every candidate)."""
    found = outputs_found(outputs, calls)
    numbers = {float(x) for x in stated_numbers(_said(calls))}
    return [
        (float(o.replace(",", "")) in numbers) if _NUMBER.fullmatch(o.replace(",", "")) else hit
        for o, hit in zip(outputs, found, strict=True)
    ]


def _order_id(call: Mapping[str, Any]) -> str | None:
    order_id = call.get("kwargs", {}).get("order_id")
    return order_id if isinstance(order_id, str) else None


def policy_issues(base, user_id: str, calls, allowed_errors: frozenset[str] = frozenset()) -> list[str]:
    """What a dry run on a copy of the DB shows: failed writes, foreign orders, unknown tools, no respond."""
    _db, observations = run_calls(base, calls)
    issues = []
    for call, obs in zip(calls, observations, strict=True):
        name = call["name"]
        if name != RESPOND and name not in TOOLS:
            issues.append(f"unknown tool {name!r}")
        elif name in WRITE_TOOLS and obs.startswith("Error") and _key(call) not in allowed_errors:
            issues.append(f"{name} failed: {obs}")
        order_id = _order_id(call)
        if (
            name in WRITE_TOOLS
            and order_id in base["orders"]
            and base["orders"][order_id]["user_id"] != user_id
        ):
            issues.append(f"{name} writes to order {order_id}, which belongs to another user")
        if name == "modify_user_address" and call.get("kwargs", {}).get("user_id") != user_id:
            issues.append("modify_user_address changes another user's address")
    return issues


def artifact_scores(base, payload: Mapping[str, Any], text: str) -> dict[str, tuple[float, float]]:
    calls = parse_plan(text)
    if calls is None:
        return {name: (0.0, top) for name, top in CRITERIA.items()}
    gold = payload["actions"]
    gold_db, gold_obs = run_calls(base, gold, skip_terminate=True)
    plan_db, plan_obs = run_calls(base, calls)
    gold_writes = [_key(c) for c in gold if c["name"] in WRITE_TOOLS]
    plan_writes = [_key(c) for c in calls if c["name"] in WRITE_TOOLS]
    guessing = False
    if gold_writes or plan_writes:
        remaining = list(plan_writes)
        for key in gold_writes:
            if key in remaining:
                remaining.remove(key)
        matched = len(plan_writes) - len(remaining)
        guessing = len(remaining) > matched
        writes = 0.0 if guessing else matched / max(len(gold_writes), len(plan_writes))
    else:
        writes = 1.0
    allowed = frozenset(
        _key(c)
        for c, o in zip(gold, gold_obs, strict=True)
        if c["name"] in WRITE_TOOLS and o.startswith("Error")
    )
    policy = 0.0 if policy_issues(base, payload["user_id"], calls, allowed) else 1.0
    failed = any(
        c["name"] in WRITE_TOOLS and o.startswith("Error") and _key(c) not in allowed
        for c, o in zip(calls, plan_obs, strict=True)
    )
    outputs = payload["outputs"]
    found = rubric_outputs_found(outputs, calls)
    if candidate_listing(outputs, calls):
        found = [False] * len(found)
    found = [hit and not rival_figures(o, outputs, calls) for o, hit in zip(outputs, found, strict=True)]
    return {
        "db_match": (3.0 * (same_state(gold_db, plan_db) and not failed and not guessing), 3.0),
        "writes": (2.0 * writes, 2.0),
        "policy": (policy, 1.0),
        "outputs": (sum(found) / len(found) if found else 1.0, 1.0),
    }


def native(base, payload: Mapping[str, Any], text: str) -> float:
    calls = parse_plan(text)
    if calls is None:
        return 0.0
    return native_score(base, payload["actions"], payload["outputs"], calls)
