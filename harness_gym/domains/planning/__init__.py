"""Planning: write a plan for a state-transition problem; a real validator simulates it."""

from __future__ import annotations

from collections.abc import Mapping

from harness_gym.domains.base import SettingDomain, check_outcome, content, form
from harness_gym.domains.planning import features as task_features
from harness_gym.domains.planning.prompts import PlanningPrompts
from harness_gym.domains.planning.world import CRITERIA, artifact_scores, validate
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.profiles import DraftParams

DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.08, "standard": 0.0, "hard": 0.0},
    informed_gain=0.1,
    flaw_weights={
        "malformed": 4.0,
        "wrong_goal": 1.75,
        "constraint_violation": 1.75,
        "missing_steps": 1.0,
        "illegal_move": 0.75,
    },
)
"""Simulated LLM writing plans (first-draft parameters, fitted to the Base harness only).

Fitted to two Base quantities of the paper at once: its Base G (0.385) and its Base EarlySubmit rate
(51.1%; Base submits at step 3, so the event fires for every draft with G < 0.5). On the eval split the
flaw kinds score on average: malformed 0.0, illegal_move 0.25, missing_steps 0.50 (58% below 0.5),
wrong_goal 0.72 and constraint_violation 0.75 (never below 0.5). Most wrong plans are therefore
unusable (inexecutable or unparsable), a third are executable but miss a goal or break a constraint.
Protocol (eval, seeds 0-2, 3 rollouts): G 0.419, EarlySubmit 52.8% (the previous mix, led by
illegal moves, gave G 0.402 but EarlySubmit 70.6%). With greedy (temperature 0) draws the same
parameters gave G 0.453, outside the paper's +-0.05; ``p_correct`` was refitted from 0.15 / 0.05 / 0.02
to 0.08 / 0 / 0 (G 0.418); a plan is then right only when the task was read (``informed_gain``).
"""


FLAWS = {
    "illegal_move": content("illegal_step", "goal_unmet", needs="observed"),
    "missing_steps": content("goal_unmet", "illegal_step", needs="observed"),
    "wrong_goal": content("goal_unmet", needs="observed"),
    "constraint_violation": content("constraint", needs="observed"),
    "malformed": form("format", "empty", "illegal_step"),
}
"""Which findings name each flaw kind, its class and what its fix needs: every content flaw is fixed
from the problem OBSERVE reads (initial state, goal, constraints); a malformed plan needs nothing."""


class PlanningDomain(SettingDomain):
    """The plain setting: neither RETRIEVE nor CALL_TOOL, the whole problem is in the task."""

    name = "planning"
    features = declare(name, task_features)
    draft_params = DRAFT_PARAMS
    prompts_cls = PlanningPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = CRITERIA

    def observe(self, ep: Episode) -> Outcome:
        n = len(ep.task.payload["constraints"])
        return Outcome(text=f"read the initial state, the goal and {n} constraint(s)")

    def check(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        report = VERIFIER_CACHE.get(
            "validate", ep.task, ep.draft, lambda: validate(ep.task.payload, ep.draft)
        )
        items = (
            not report.format_errors and report.parsed_steps > 0,
            report.illegal_step is None,
            not report.constraint_violations,
            report.goals_met == report.goals_total,
        )
        coverage = sum(items) / len(items)
        issues = report.issues
        return check_outcome(
            ep,
            f"validated the plan: {report.goals_met}/{report.goals_total} goals, {len(issues)} issue(s)",
            coverage,
            issues,
        )

    def score(self, ep: Episode, artifact: str) -> Verdict:
        rubric = VERIFIER_CACHE.get(
            "score", ep.task, artifact, lambda: artifact_scores(ep.task.payload, artifact)
        )
        return Verdict(rubric=dict(rubric))


class HarnessPlanningEnv(HarnessEnv):
    """Planning: produce a valid plan for a blocks-world or logistics problem with extra constraints.

    ## Description

    Each task states an initial state, a goal and extra constraints (forbidden placements, ordering,
    capacity, step limits). The executor writes a plan, one action per line; a validator simulates it
    step by step (preconditions, constraints, goal).

    - OBSERVE: read the full problem (raises the executor's P(correct draft)).
    - CHECK: run the plan validator on the current draft; its issues localise the fault.
    - RETRIEVE, CALL_TOOL: not available (always masked).

    Rubric: ``constraints`` (legal steps, no constraint violated), ``goal_coverage`` (fraction of goal
    atoms reached), ``plan_format`` (every line parses). Default ``max_steps`` 12.
    Base harness: OBSERVE, DRAFT, SUBMIT.
    """

    domain_cls = PlanningDomain
