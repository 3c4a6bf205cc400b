"""Two scripted references for the check/revise question: a state-dependent one and a fixed loop.

``ProfilePolicy`` reads the observation and the executor profile's own probabilities: after Base's
gathering and first draft it keeps a belief P(the current draft is correct) and CHECKs only when that
belief is below a threshold, REVISEs after a failing check only while a revision is expected to help
(P(fix) x P(flawed) > P(break) x P(correct)), and SUBMITs otherwise. It knows the simulator's mechanism
(that is what makes it a reference), never the hidden draft, and no parameter is ever set from its
outcome.

``CheckReviseLoopPolicy`` is the fixed rule the suite must not be trivially won by: Base's gathering
and draft, then CHECK, REVISE while the last check failed, SUBMIT.

Both follow the ``Policy`` protocol of ``harness_gym.policies.scripted`` (``name``, ``act``,
``action_probs``).
"""

from __future__ import annotations

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import COUNT_CAPS, FEATURE_INDEX
from harness_gym.envs.registry import env_class
from harness_gym.executors.profiles import DIFFICULTIES, DomainProfile, ExecutorProfile, for_domain
from harness_gym.policies.scripted import BasePolicy

DIFFICULTY_MIX = {"easy": 0.2, "standard": 0.6, "hard": 0.2}
"""Share of each difficulty in the controlled domains' task sets (20 / 60 / 20): the policy's prior,
since the observation does not show a task's difficulty."""
UNSEEN_BY_CHECKS = 0.5
"""The policy's guess of the share of flaws a domain's structural checks cannot see (only the judge
can): the observation does not say which kind of problem a failed check found."""

_F = FEATURE_INDEX


def _one_hot(action: int) -> np.ndarray:
    probs = np.zeros(N_ACTIONS)
    probs[action] = 1.0
    return probs


def _failed(obs: np.ndarray) -> bool:
    """The last check or test run on the current draft reported a problem."""
    checked_bad = obs[_F["checked_draft"]] > 0 and obs[_F["check_coverage"]] < 1.0
    tested_bad = obs[_F["tested_draft"]] > 0 and obs[_F["test_pass_rate"]] < 1.0
    return bool(checked_bad or tested_bad or obs[_F["unresolved_failure"]] > 0)


def _verified(obs: np.ndarray) -> bool:
    return bool(obs[_F["checked_draft"]] > 0 or obs[_F["tested_draft"]] > 0)


class ProfilePolicy:
    """CHECK only when P(correct draft) is low; REVISE after a failing check while it is expected to pay."""

    name = "profile"

    def __init__(
        self,
        env_id: str,
        executor_profile: ExecutorProfile | str | None = None,
        threshold: float = 0.5,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
        domain_cls = env_class(env_id).domain_cls
        self.base = BasePolicy(env_id)
        self.profile: DomainProfile = for_domain(executor_profile, domain_cls)
        self.threshold = threshold
        self.max_steps = domain_cls.max_steps
        draft = self.profile.draft
        self._prior = sum(DIFFICULTY_MIX[d] * draft.p_correct[d] for d in DIFFICULTIES)
        m = self.profile.mechanism
        self._p_fail_if_flawed = 1.0 - (1.0 - m.judge_tpr) * UNSEEN_BY_CHECKS
        self._p_fix = 0.5 * (0.5 * (m.p_fix["localised"] + m.p_fix_form) + m.p_fix["verdict"])

    # -- beliefs ------------------------------------------------------------------------------------
    def first_draft_belief(self, obs: np.ndarray) -> float:
        """P(correct first draft): the profile's accuracy at the informedness the observation suggests
        (half for having read the task, half for what was gathered, a rough reading of the counters)."""
        gathered = max(obs[_F["evidence"]], obs[_F["tool_calls"]])
        informed = 0.5 * float(obs[_F["observed"]]) + 0.5 * float(min(1.0, gathered))
        return min(1.0, self._prior + self.profile.draft.informed_gain * informed)

    def _after_check(self, q: float, failed: bool) -> float:
        fpr = self.profile.mechanism.judge_fpr
        if failed:
            return q * fpr / (q * fpr + (1 - q) * self._p_fail_if_flawed)
        return q * (1 - fpr) / (q * (1 - fpr) + (1 - q) * (1 - self._p_fail_if_flawed))

    def _fix_chance(self, earlier_revisions: int) -> float:
        return self._p_fix * self.profile.mechanism.fix_decay**earlier_revisions

    def belief(self, obs: np.ndarray) -> float:
        """P(the current draft is correct), replaying this policy's own CHECK / REVISE history."""
        q = self.first_draft_belief(obs)
        revisions = round(float(obs[_F["revisions"]]) * COUNT_CAPS["revisions"])
        p_break = self.profile.mechanism.p_break
        for k in range(revisions):  # every REVISE of this policy followed a failing check
            q_bad = self._after_check(q, failed=True)
            q = (1 - q_bad) * self._fix_chance(k) + q_bad * (1 - p_break)
        if _verified(obs):
            q = self._after_check(q, failed=_failed(obs))
        return q

    # -- policy -------------------------------------------------------------------------------------
    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        action = self.base.choose(obs, mask)
        if action != Action.SUBMIT or obs[_F["has_draft"]] <= 0:
            return action  # Base's gathering, first draft (and, in coding, its test run)
        steps_left = round((1.0 - float(obs[_F["progress"]])) * self.max_steps)
        q = self.belief(obs)
        if not _verified(obs):
            if q < self.threshold and steps_left >= 2 and mask[Action.CHECK]:
                return int(Action.CHECK)
            return int(Action.SUBMIT)
        revisions = round(float(obs[_F["revisions"]]) * COUNT_CAPS["revisions"])
        gain = (1 - q) * self._fix_chance(revisions) - q * self.profile.mechanism.p_break
        if _failed(obs) and gain > 0 and steps_left >= 2 and mask[Action.REVISE]:
            return int(Action.REVISE)
        return int(Action.SUBMIT)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)


class CheckReviseLoopPolicy:
    """Base's gathering and draft, then CHECK, REVISE while the last check failed, SUBMIT."""

    name = "check-revise-loop"

    def __init__(self, env_id: str) -> None:
        self.base = BasePolicy(env_id)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        action = self.base.choose(obs, mask)
        if action != Action.SUBMIT or obs[_F["has_draft"]] <= 0:
            return action
        if obs[_F["checked_draft"]] <= 0 and mask[Action.CHECK]:
            return int(Action.CHECK)
        if _failed(obs) and mask[Action.REVISE]:
            return int(Action.REVISE)
        return int(Action.SUBMIT)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)
