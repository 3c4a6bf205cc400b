"""Coding: implement a Python function from a spec and starter code; judged by real unit tests."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.domains.base import (
    DRAFTED,
    OBSERVED,
    SUBMITTED,
    TEST_EVENTS,
    ToolSetting,
    check_outcome,
    content,
    form,
    with_judge,
)
from harness_gym.domains.coding import features as task_features
from harness_gym.domains.coding.prompts import CodingPrompts
from harness_gym.domains.coding.verifier import CRITERIA, artifact_scores, run_tests, structural_check
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Feedback, Finding
from harness_gym.executors.profiles import DraftParams

DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.3, "standard": 0.15, "hard": 0.05},
    informed_gain=0.15,
    flaw_weights={
        "unsafe_import": 0.5,
        "missing_edge_case": 8.0,
        "syntax_error": 1.0,
        "off_by_one": 0.2,
        "flip_comparison": 0.2,
        "negate_condition": 0.05,
        "swap_arithmetic": 0.05,
        "wrong_return": 0.05,
        "swap_boolean": 0.05,
    },
)
"""Simulated LLM writing Python functions (first-draft parameters, fitted to the Base harness only).

Fitted to the paper's Base G (0.712); its Base TestBeforeSubmit rate (76.7%: Base runs the visible tests
once and submits, so the event fires when the draft passes all of them) is out of reach together with
that G. Code that fails the safety scan is not run (its tests all fail), so the only wrong drafts that
pass the visible tests are the mutants only hidden tests catch, such as a missing edge case (G about
0.9); a Base G of 0.712 with 76.7% of drafts passing the visible tests would need those to score below
what they do. The weights favour the missing edge case (the commonest slip that passes visible tests)
and keep syntax errors and forbidden imports rare. Protocol (eval, seeds 0-2, 3 rollouts): G 0.692,
TestBeforeSubmit 54.4%, EarlySubmit 38.9% (paper 0%); 0.710 before ``unit_tests`` counted only hidden
tests with unseen inputs, still within 0.05 of the paper, so these were not refitted.
"""


_BEHAVIOURAL = content("test_failed", "tests_error", "signature", needs="observed")
FLAWS = {
    "syntax_error": form("syntax"),
    "unsafe_import": form("unsafe", "tests_error"),
    **dict.fromkeys(
        (
            "off_by_one",
            "flip_comparison",
            "negate_condition",
            "swap_arithmetic",
            "wrong_return",
            "swap_boolean",
            "missing_edge_case",
        ),
        _BEHAVIOURAL,
    ),
}
"""Which findings name each flaw kind, its class and what its fix needs: a behavioural mutant is named
by failing visible tests (CHECK or CALL_TOOL) and fixed from the spec and tests OBSERVE reads; a syntax
error or an unsafe import needs nothing gathered."""


def cost_compliance(cost: float, budget: float) -> float:
    """1 within budget, falling linearly to 0 at twice the budget."""
    return 1.0 if cost <= budget else max(0.0, 1.0 - (cost - budget) / budget)


class CodingDomain(ToolSetting):
    """The tool runs the visible tests, so it needs a draft and Base runs it after drafting."""

    name = "coding"
    features = declare(name, task_features)
    mdp2_task_file = "coding-v1.jsonl"
    draft_params = DRAFT_PARAMS
    prompts_cls = CodingPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = CRITERIA
    tool_needs_draft = True
    runs_code = True
    events = TEST_EVENTS
    base_script = (OBSERVED, DRAFTED, (Action.CALL_TOOL, "tested_draft"), SUBMITTED)

    def action_mask(self, ep: Episode) -> np.ndarray:
        """The generic rule, but a judged task has no visible test for CALL_TOOL to run."""
        mask = super().action_mask(ep)
        if mask[Action.CALL_TOOL] and ep.task.payload.get("judged"):
            mask = mask.copy()
            mask[Action.CALL_TOOL] = 0
        return mask

    def observe(self, ep: Episode) -> Outcome:
        n = len(ep.task.payload["visible_tests"])
        return Outcome(text=f"read the spec, the starter code and {n} visible tests")

    def call_tool(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        name, tests = ep.task.payload["function_name"], ep.task.payload["visible_tests"]
        report = VERIFIER_CACHE.get(
            "visible_tests", ep.task, ep.draft, lambda: run_tests(ep.draft, name, tests)
        )
        issues = ((Finding("tests_error", report.error),) if report.error else ()) + tuple(
            Finding("test_failed", failure) for failure in report.failures
        )
        ok = report.passed == report.total
        return Outcome(
            text=f"ran the visible tests: {report.passed}/{report.total} passed",
            tool={"name": "run_tests", "valid": True, "ok": ok},
            tests={"passed": report.passed, "total": report.total},
            issues=issues,
            failure=not ok,
            feedback=Feedback("tests", ep.draft_hash, issues),
        )

    def check(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        payload = ep.task.payload
        report = VERIFIER_CACHE.get(
            "structure", ep.task, ep.draft, lambda: structural_check(payload, ep.draft)
        )
        visible = report.visible
        if payload.get("judged"):
            # No test to run (MDP v2's tasks whose prompt shows no example): an LLM judge reviews the code.
            items = (report.parses, report.safe, report.signature_ok)
            passed, total, issues = with_judge(ep, items, report.issues)
            return check_outcome(
                ep,
                f"structural check and review: {passed}/{total} passed, {len(issues)} issue(s)",
                passed / total,
                issues,
                tests={"passed": visible.passed, "total": visible.total},
            )
        return check_outcome(
            ep,
            f"structural check: coverage {report.coverage:.2f}, {len(report.issues)} issue(s)",
            report.coverage,
            report.issues,
            tests={"passed": visible.passed, "total": visible.total},
        )

    def score(self, ep: Episode, artifact: str) -> Verdict:
        payload = ep.task.payload
        rubric = dict(
            VERIFIER_CACHE.get("score", ep.task, artifact, lambda: artifact_scores(payload, artifact))
        )
        top = CRITERIA["cost_compliance"]
        rubric["cost_compliance"] = (top * cost_compliance(ep.state.cost, self.cost_budget), top)
        passed, total = rubric["unit_tests"]
        return Verdict(rubric=rubric, signals={"pass_rate": passed / total})


class HarnessCodingEnv(HarnessEnv):
    """Coding: implement a Python function so that hidden unit tests pass.

    ## Description

    Each task gives a spec, starter code and three visible tests; hidden tests (never shown to the
    harness) decide the score. The executor writes the function; the harness decides when to read
    the spec, run the visible tests, check, revise and submit. The code runs in the sandbox
    (``harness_gym.sandbox``), which only reports the values it returns; pass/fail is decided outside
    it (``domains.coding.verifier``). Results are cached by (task, artifact hash).

    - OBSERVE: read the spec, starter code and visible tests (raises the executor's P(correct draft)).
    - CALL_TOOL: run the visible tests on the current draft (needs a draft and a visible test).
    - CHECK: structural verifier: parses, safety scan, signature, visible tests; never hidden tests.
      A task of MDP v2 with no visible test (``judged``) has the LLM judge review the draft instead.
    - RETRIEVE: not available (always masked).

    MDP v2 (``obs_layout="v2"``) plays ``coding-v1.jsonl``: the same problems, hidden tests and split,
    but the visible tests are the ``>>>`` examples the prompt shows, as in HumanEval: 47 tasks show 1 to
    3 (HumanEval: 76 of 164 prompts show examples, 18 / 33 / 25 of them one / two / three or more), 53
    show none, so their CHECK can only ask the judge (false alarms). The share with examples follows
    HumanEval's by difficulty (easy 23/33, standard 45/98, hard 8/33); see
    ``harness_gym.domains.coding.generate``.

    Rubric: ``unit_tests`` (3 x pass rate over the hidden tests; 0 for code that fails the safety
    scan, which is never run), ``parseability``, ``safety`` (no forbidden imports or calls),
    ``cost_compliance`` (harness cost within the budget of 14 units,
    linearly to 0 at 28). Default ``max_steps`` 12. Base harness: OBSERVE, DRAFT, CALL_TOOL, SUBMIT.
    """

    domain_cls = CodingDomain
