"""Scripted harness policies: Base and its variants, the reference policies, and a random controller.

Every policy takes only legal actions and can report its action distribution (``action_probs``), which
the collector logs as ``behavior_logp`` so datasets support off-policy evaluation.

The reference policies bracket what a learned controller can reach on an environment:

- ``random``: uniform over the legal actions (the floor of every normalised score).
- ``base``: the domain's fixed script, which never CHECKs (the paper's Base harness).
- ``forced-check``: Base with a CHECK inserted before SUBMIT and nothing else (the paper's Forced-CHECK).
  It acts on no check result, so whatever the CHECK finds the same draft is submitted: its G equals
  Base's up to the extra step's cost. Its lift is structural (a process change, never an outcome one).
- ``check-revise``: Base, then one CHECK before SUBMIT; after a failing CHECK exactly one REVISE, then
  SUBMIT without a second CHECK (one round of the simplest outcome-aware rule).
- ``expert``: the best observation-only harness written per domain (``ExpertPolicy``): gather what the
  domain offers, DRAFT, CHECK, REVISE while the last check failed (up to a revision budget and the step
  budget), SUBMIT. It is the top of every normalised score (``harness_gym.evaluation.reference_scores``).
- ``hindsight-submit`` (formerly ``oracle``, still accepted for one release): the expert plus one bit of
  hidden state, whether the current draft scores as well as the task's reference under the hidden
  verifier (``HindsightSubmitPolicy``); it must be bound to the environment it acts in
  (``bind_policy``). Never a baseline, and no upper bound either: a fixed action string can beat it, since
  it gathers and revises like the expert. Its lead over the expert is the value of perfect stopping.

Every policy except the bound hindsight-submit is a pure function of (observation, mask) and the
``rng`` passed to ``act``: none keeps per-episode state, so one instance may serve any number of
concurrent episodes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.rubric import g_norm
from harness_gym.core.state import COUNT_CAPS, FEATURE_INDEX, N_FEATURES_V2
from harness_gym.envs.registry import env_class
from harness_gym.policies.expert_v2 import EXPERT_PLANS_V2, gather_targets, judge_only_failure, task_features

if TYPE_CHECKING:
    import gymnasium as gym

_F = FEATURE_INDEX
_CHECKED = _F["checked_draft"]
_HAS_DRAFT = _F["has_draft"]


@runtime_checkable
class Policy(Protocol):
    """One interface for every controller: scripted, learned or random. Only legal actions are taken."""

    name: str

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int: ...


def _one_hot(action: int) -> np.ndarray:
    probs = np.zeros(N_ACTIONS)
    probs[action] = 1.0
    return probs


def _count(obs: np.ndarray, feature: str) -> int:
    """A scaled count feature back as a count (saturates at its cap)."""
    return round(float(obs[_F[feature]]) * COUNT_CAPS[feature])


def steps_left(obs: np.ndarray, max_steps: int) -> int:
    """Steps remaining in the episode, read from the ``progress`` feature."""
    return max_steps - round(float(obs[_F["progress"]]) * max_steps)


def last_check_failed(obs: np.ndarray) -> bool:
    """The CHECK that ran on the current draft reported a problem (coverage below 1, a failing visible
    test, or a failure signal raised by that very CHECK). False when the current draft is unchecked."""
    if obs[_CHECKED] <= 0:
        return False
    tests_failed = obs[_F["tested_draft"]] > 0 and obs[_F["test_pass_rate"]] < 1.0
    signal = obs[_F["last_action_check"]] > 0 and obs[_F["unresolved_failure"]] > 0
    return bool(obs[_F["check_coverage"]] < 1.0 or tests_failed or signal)


class BasePolicy:
    """The domain's Base harness: its fixed script, which never CHECKs (a function of the observation)."""

    name = "base"

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self._domain = env_class(env_id).domain_cls

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        return self._domain.base_action(obs, mask)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)


class ExploratoryPolicy:
    """Base with epsilon-perturbations: with probability ``epsilon`` a uniformly random legal action."""

    name = "exploratory"

    def __init__(self, env_id: str, epsilon: float = 0.3) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.base = BasePolicy(env_id)
        self.epsilon = epsilon

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = np.asarray(mask, dtype=float)
        return (1.0 - self.epsilon) * self.base.action_probs(obs, mask) + self.epsilon * legal / legal.sum()

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if rng.random() < self.epsilon:
            return int(rng.choice(np.flatnonzero(mask)))
        return self.base.act(obs, mask, rng)


class _Deterministic:
    """Shared plumbing of the deterministic scripted policies: ``choose`` is the whole policy."""

    name: str

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        raise NotImplementedError

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)


class ForcedCheckPolicy(_Deterministic):
    """Base with a CHECK inserted before SUBMIT whenever the current draft has not been checked.

    The check's result is never acted on (the paper's Forced-CHECK): the outcome is Base's, only the
    process (CheckBeforeSubmit) changes.
    """

    name = "forced-check"

    def __init__(self, env_id: str) -> None:
        self.base = BasePolicy(env_id)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        action = self.base.choose(obs, mask)
        needs_check = obs[_HAS_DRAFT] > 0 and obs[_CHECKED] <= 0
        if action == Action.SUBMIT and needs_check and mask[Action.CHECK]:
            return int(Action.CHECK)
        return action


class CheckRevisePolicy(_Deterministic):
    """Base, one CHECK before SUBMIT, and exactly one REVISE after a failing CHECK; then SUBMIT.

    The revised draft is submitted at once, neither checked nor tested again: the rule spends one check
    and at most one revision per episode, so it isolates the value of acting once on a check's result.
    Read from the observation alone: after a REVISE (``revisions`` > 0) -> SUBMIT; where Base would
    SUBMIT an unchecked draft -> CHECK; checked and failing -> REVISE; otherwise Base's action.
    """

    name = "check-revise"

    def __init__(self, env_id: str) -> None:
        self.base = BasePolicy(env_id)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        if obs[_HAS_DRAFT] > 0 and _count(obs, "revisions") > 0:
            return int(Action.SUBMIT)  # the one revision was made: submit it as it is
        action = self.base.choose(obs, mask)
        if action != Action.SUBMIT or obs[_HAS_DRAFT] <= 0:
            return action
        if obs[_CHECKED] <= 0 and mask[Action.CHECK]:
            return int(Action.CHECK)
        if last_check_failed(obs) and mask[Action.REVISE]:
            return int(Action.REVISE)
        return action


@dataclass(frozen=True)
class ExpertPlan:
    """What the expert gathers before its first draft in one domain, and how often it may revise."""

    retrieve: int = 0
    """RETRIEVE until this many evidence items are held (or RETRIEVE is masked); 0: never."""
    tools: int = 0
    """Then CALL_TOOL until this many tool calls were made (or CALL_TOOL is masked); 0: never before the
    draft."""
    max_revisions: int = 3
    """REVISEs per episode after failing checks (repeated revisions pay less and less)."""


EXPERT_PLANS: dict[str, ExpertPlan] = {
    # open four sources (the gold memo, e-mail and table rank high) and run table_calc twice; one revision
    "knowledge_work": ExpertPlan(retrieve=4, tools=2, max_revisions=1),
    # nothing to gather before a draft: the spec comes with OBSERVE; CHECK runs structure + visible tests
    "coding": ExpertPlan(max_revisions=2),
    # search until six documents are held: a revision is only as good as the documents read
    "research": ExpertPlan(retrieve=6, max_revisions=2),
    # run the tool chain (two to four tools) before drafting: the draft is only as good as the chain run
    "multi_tool": ExpertPlan(tools=3),
    # search the sessions for the introduction and the later updates of the asked fact
    "long_memory": ExpertPlan(retrieve=6, max_revisions=2),
    # nothing to gather: OBSERVE reads the whole problem; CHECK runs the plan validator
    "planning": ExpertPlan(),
    # the user's record and their orders: the orders a plan writes to must have been looked up
    "tau_retail": ExpertPlan(retrieve=4),
    # one exploratory query (sample rows) before writing the statement
    "dbbench": ExpertPlan(tools=1, max_revisions=2),
}
"""Per domain, the expert's gathering and revision budget (documented in ``ExpertPolicy``), chosen by the
grid of ``harness_gym.evaluation.expert_plans`` (mean G on the first 20 train tasks, never the eval
split; rerun after the simulator changes)."""


class ExpertPolicy(_Deterministic):
    """The best observation-only harness we could write, per domain; a function of (obs, mask) only.

    The same loop everywhere, with a per-domain gathering plan (``EXPERT_PLANS``):

    1. OBSERVE (read the task).
    2. Gather before drafting: knowledge work opens the four best-ranked sources, then runs
       ``table_calc`` twice; research runs searches until six documents are held; long memory
       retrieves sessions until six are held; tau-retail runs read-only rounds until four records are
       held (the user's and their orders); multi-tool runs three executor-chosen tool calls; DB-Bench
       runs one exploratory query; coding and planning have nothing to gather (OBSERVE reads the spec
       and visible tests, or the whole problem).
    3. DRAFT.
    4. CHECK the current draft (coding: the structural check, which also runs the visible tests;
       planning: the plan validator; elsewhere the domain's observable checks plus an LLM judge).
    5. If the last check failed and fewer than ``max_revisions`` REVISEs were made, REVISE and go back
       to 4 (re-CHECK only when the draft is unchecked: a REVISE whose draft is still marked checked is
       repeated directly). A REVISE is made while at least two steps remain (it and SUBMIT); a CHECK
       while at least two remain (it and SUBMIT).
    6. SUBMIT once the last check passed, the revision budget is spent or the step budget is nearly
       spent. (Coding's rubric charges cost over the budget, but a further fix is worth more than the
       cost criterion loses, so the expert does not stop for cost.)

    On a v2-width observation (``obs_layout="v2"``) steps 2 and 5 follow the v2 rules of
    ``harness_gym.policies.expert_v2``: the gathering plan is a function of the task features and a
    failure only the LLM judge reported may be left unrevised (``EXPERT_PLANS_V2``).

    It reads only the observation and the action mask, holds no episode state and never looks at the
    environment, the task's reference, hidden tests or the draft's score.
    """

    name = "expert"
    version = 1
    """Bumped with any change of the expert's choices on layout v1 (``EXPERT_PLANS`` or this loop); datasets
    built from it (the ``expert`` and ``medium-expert`` tiers) record it."""
    version_v2 = 1
    """Version of the v2 rules (``expert_v2``: ``EXPERT_PLANS_V2``, ``NEEDS`` and the judge-only rule), kept
    apart so that a change of them leaves ``version`` and the v1 datasets as they are."""

    def __init__(self, env_id: str) -> None:
        domain = env_class(env_id).domain_cls
        self.env_id = env_id
        self.domain = domain.name
        self.plan = EXPERT_PLANS[domain.name]
        self.plan_v2 = EXPERT_PLANS_V2[domain.name]
        self.feature_names = tuple(name for name, _ in domain.features.names) if domain.features else ()
        self.max_steps = int(domain.max_steps)

    def _targets(self, obs: np.ndarray) -> tuple[int, int]:
        """(evidence items, tool calls) to hold before the first draft."""
        if len(obs) != N_FEATURES_V2:
            return self.plan.retrieve, self.plan.tools
        return gather_targets(self.plan_v2, self.domain, task_features(obs, self.feature_names))

    def _gather(self, obs: np.ndarray, mask: np.ndarray) -> int | None:
        retrieve, tools = self._targets(obs)
        if retrieve and mask[Action.RETRIEVE] and self._retrieved(obs) < retrieve:
            return int(Action.RETRIEVE)
        if tools and mask[Action.CALL_TOOL] and _count(obs, "tool_calls") < tools:
            return int(Action.CALL_TOOL)
        return None

    def _retrieved(self, obs: np.ndarray) -> int:
        """v1: evidence items held. v2: RETRIEVEs made (one per search, source or record the task names,
        however many items each returns): before the first draft the expert's steps are its OBSERVE, its
        RETRIEVEs and its tool calls, so the steps taken tell them apart."""
        if len(obs) != N_FEATURES_V2:
            return _count(obs, "evidence")
        taken = self.max_steps - steps_left(obs, self.max_steps)
        return max(taken - int(obs[_F["observed"]] > 0) - _count(obs, "tool_calls"), 0)

    def max_revisions(self, obs: np.ndarray) -> int:
        """The revision budget of the plan for ``obs``'s layout (v1's or v2's)."""
        return self.plan_v2.max_revisions if len(obs) == N_FEATURES_V2 else self.plan.max_revisions

    def _revise(self, obs: np.ndarray) -> bool:
        """The last check failed, and (v2) its failure is one this plan revises."""
        if not last_check_failed(obs):
            return False
        if len(obs) == N_FEATURES_V2 and not self.plan_v2.revise_judge_only and judge_only_failure(obs):
            return False
        return _count(obs, "revisions") < self.max_revisions(obs)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        if mask[Action.OBSERVE] and obs[_F["observed"]] <= 0:
            return int(Action.OBSERVE)
        if obs[_HAS_DRAFT] <= 0:
            gather = self._gather(obs, mask)
            if gather is not None:
                return gather
            return int(Action.DRAFT) if mask[Action.DRAFT] else int(Action.SUBMIT)
        left = steps_left(obs, self.max_steps)
        if obs[_CHECKED] <= 0:
            if left >= 2 and mask[Action.CHECK]:
                return int(Action.CHECK)
            return int(Action.SUBMIT)
        if self._revise(obs) and left >= 2 and mask[Action.REVISE]:
            return int(Action.REVISE)
        return int(Action.SUBMIT)


class RandomPolicy:
    """Uniform over the legal actions."""

    name = "random"

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = np.asarray(mask, dtype=float)
        return legal / legal.sum()

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.choice(np.flatnonzero(mask)))


class HindsightSubmitPolicy:
    """HINDSIGHT-SUBMIT (formerly ORACLE), never a baseline: it reads hidden state. Not an upper bound.

    It gathers like ``ExpertPolicy`` and then knows what no harness can: the current draft's G relative
    to the task's reference artifact under the hidden verifier. A draft as good as the reference is
    submitted at once (no check, no risk of a revision breaking it). Any other draft is handled like the
    expert (CHECK it; REVISE after a failing check, within the expert's revision and step budgets),
    except that a flaw the checks cannot see (the check passed) is also REVISEd when the draft keeps
    less than ``revise_unseen_below`` (0.5) of the reference's G: a revision without localising
    feedback can return a worse flaw, so a nearly right draft is kept. 0.5 keeps it at or above the
    expert on every setting we measured (with 0 it is the expert with a perfect stop rule). Other action
    sequences can score more on the same episode (e.g. the ``open-loop`` reference in some settings).

    Unbound it cannot act: ``bind_env(env)`` (or ``bind_policy(policy, env)``) returns a copy bound to one
    environment instance, whose current episode it reads. Bind one copy per environment; a bound copy
    follows whatever episode its environment is running, so it is safe wherever that environment is.
    """

    name = "hindsight-submit"
    reads_hidden_state = True
    is_oracle = True
    """Deprecated spelling of ``reads_hidden_state``."""

    def __init__(self, env_id: str, env: gym.Env | None = None, revise_unseen_below: float = 0.5) -> None:
        self.env_id = env_id
        self.revise_unseen_below = revise_unseen_below
        self.expert = ExpertPolicy(env_id)
        self._env = None if env is None else env.unwrapped
        if self._env is not None and self._env.domain.env_id != env_id:
            raise ValueError(
                f"hindsight-submit for {env_id} bound to an environment of {self._env.domain.env_id}"
            )

    def bind_env(self, env: gym.Env) -> HindsightSubmitPolicy:
        """A copy that reads ``env``'s hidden state."""
        return HindsightSubmitPolicy(self.env_id, env, self.revise_unseen_below)

    def draft_score(self) -> float:
        """Hidden: the current draft's G over the task's reference G (same episode, same cost); 0 without
        a draft."""
        if self._env is None:
            raise RuntimeError(
                "hindsight-submit reads hidden state: bind it to its environment first (bind_env(env))"
            )
        ep, domain = self._env._ep, self._env.domain
        if ep is None or ep.draft is None:
            return 0.0
        reference = domain.pool(ep.task).reference
        if ep.draft == reference:
            return 1.0
        best = g_norm(domain.verdict(ep, reference).rubric)
        return g_norm(domain.verdict(ep, ep.draft).rubric) / best if best > 0 else 1.0

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        score = self.draft_score()  # raises while unbound
        if obs[_HAS_DRAFT] <= 0:
            return self.expert.choose(obs, mask)
        if score >= 1.0 - 1e-9:
            return int(Action.SUBMIT)  # as good as the reference: no check, no revision to break it
        if obs[_CHECKED] > 0 and not last_check_failed(obs):  # a flaw the checks cannot see
            revise = score < self.revise_unseen_below and _count(
                obs, "revisions"
            ) < self.expert.max_revisions(obs)
            if revise and steps_left(obs, self.expert.max_steps) >= 2 and mask[Action.REVISE]:
                return int(Action.REVISE)
            return int(Action.SUBMIT)
        return self.expert.choose(obs, mask)  # CHECK it, or REVISE after the failing check

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)


OraclePolicy = HindsightSubmitPolicy
"""Deprecated name of :class:`HindsightSubmitPolicy` (kept for one release)."""
DEPRECATED_NAMES = {"oracle": "hindsight-submit"}
"""Old command-line names still accepted for one release, with a warning."""


def bind_policy(policy: Any, env: gym.Env) -> Any:
    """``policy`` ready to act in ``env``: a policy that reads hidden state (it has ``bind_env``) gets
    bound to it; every other policy is returned unchanged. Call it once per environment instance."""
    bind = getattr(policy, "bind_env", None)
    return bind(env) if callable(bind) else policy


SCRIPTED = ("base", "exploratory", "forced-check", "check-revise", "expert", "hindsight-submit", "random")
"""Every scripted policy by its command-line name."""
BEHAVIORS = ("base", "exploratory", "forced-check", "check-revise", "expert", "random")
"""Scripted policies that act on the observation alone (usable as behaviour policies for datasets)."""
REFERENCE_POLICIES = ("random", "base", "forced-check", "check-revise", "expert", "hindsight-submit")
"""The reference policies of the headroom table (``open-loop`` is added where its data is shipped)."""


def make_policy(name: str, env_id: str, epsilon: float = 0.3, env: gym.Env | None = None) -> Policy:
    """A scripted policy by its command-line name (``hindsight-submit`` is bound to ``env`` when one is
    given; the deprecated ``oracle`` names it too, with a warning)."""
    if name in DEPRECATED_NAMES:
        warnings.warn(
            f"policy name {name!r} is deprecated; use {DEPRECATED_NAMES[name]!r}",
            DeprecationWarning,
            stacklevel=2,
        )
        name = DEPRECATED_NAMES[name]
    if name == "base":
        return BasePolicy(env_id)
    if name == "exploratory":
        return ExploratoryPolicy(env_id, epsilon)
    if name == "forced-check":
        return ForcedCheckPolicy(env_id)
    if name == "check-revise":
        return CheckRevisePolicy(env_id)
    if name == "expert":
        return ExpertPolicy(env_id)
    if name == "hindsight-submit":
        return HindsightSubmitPolicy(env_id, env)
    if name == "random":
        return RandomPolicy()
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(SCRIPTED)}")
