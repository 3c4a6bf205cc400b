"""The expert on MDP v2: a gathering plan read off the task features, a revise rule that reads which check
group failed; on layout v1 it is the expert it was."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURES_V2
from harness_gym.evaluation.rollout import run_episode
from harness_gym.policies.expert_v2 import EXPERT_PLANS_V2, NEEDS, judge_only_failure, task_features
from harness_gym.policies.scripted import EXPERT_PLANS, ExpertPolicy

RESEARCH, MULTI_TOOL, CODING = "HarnessResearch-v0", "HarnessMultiTool-v0", "HarnessCoding-v0"


def play(env: gym.Env, policy: ExpertPolicy, task_id: str, seed: int = 0) -> list[tuple[int, np.ndarray]]:
    """(action, the observation it was chosen on) of one episode."""
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    steps = []
    while True:
        action = policy.act(obs, info["action_mask"], np.random.default_rng(seed))
        steps.append((action, obs))
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return steps


def before_draft(steps: list[tuple[int, np.ndarray]], action: Action) -> int:
    actions = [a for a, _ in steps]
    return actions[: actions.index(Action.DRAFT)].count(action)


def features(env: gym.Env, task_id: str) -> dict[str, float]:
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    return task_features(obs, tuple(name for name, _ in env.unwrapped.domain.features.names))


def test_a_research_question_gets_at_least_one_search_per_hop_it_names() -> None:
    env = gym.make(RESEARCH, split="eval", obs_layout="v2")
    shipped, one_per_hop = ExpertPolicy(RESEARCH), ExpertPolicy(RESEARCH)
    one_per_hop.plan_v2 = replace(EXPERT_PLANS_V2["research"], retrieve_base=0, retrieve_per=1)
    seen = set()
    for task in env.unwrapped.tasks:
        hops, _ = NEEDS["research"](features(env, task.task_id))
        # 3 hops named: 3+ searches before the draft (the shipped plan searches 1 + 2 per hop, which
        # the domain's search limit caps)
        assert before_draft(play(env, shipped, task.task_id), Action.RETRIEVE) >= hops
        # the plan is a function of the task: one search per hop makes exactly that many
        assert before_draft(play(env, one_per_hop, task.task_id), Action.RETRIEVE) == hops
        seen.add(hops)
    assert len(seen) > 1


def test_a_multi_tool_question_gets_the_tool_calls_its_chain_names() -> None:
    env = gym.make(MULTI_TOOL, split="eval", obs_layout="v2")
    expert, plan = ExpertPolicy(MULTI_TOOL), EXPERT_PLANS_V2["multi_tool"]
    seen = set()
    for task in env.unwrapped.tasks[:20]:
        _, chain = NEEDS["multi_tool"](features(env, task.task_id))
        calls = before_draft(play(env, expert, task.task_id), Action.CALL_TOOL)
        assert calls == min(plan.tools_base + plan.tools_per * chain, env.unwrapped.max_steps)
        seen.add(chain)
    assert len(seen) > 1


def test_a_judge_only_failure_is_not_revised_where_the_plan_says_so() -> None:
    # coding's MDP v2 tasks without a visible test are checked by the LLM judge (and the syntax and
    # signature checks): a bare FAIL from the judge alone is left unrevised by a wary plan
    env = gym.make(CODING, split="eval", obs_layout="v2")
    tests_slot = FEATURES_V2.index("task_2")  # visible_tests, shown once OBSERVE has read them
    expert = ExpertPolicy(CODING)
    judge_only = {True: [], False: []}  # the actions taken on a judge-only failure, per plan
    for task in env.unwrapped.tasks:
        for flag in (True, False):
            expert.plan_v2 = replace(EXPERT_PLANS_V2["coding"], revise_judge_only=flag, max_revisions=3)
            for seed in range(3):
                steps = play(env, expert, task.task_id, seed)
                assert steps[-1][1][tests_slot] <= 0 or not any(judge_only_failure(o) for _, o in steps)
                judge_only[flag] += [a for a, o in steps if judge_only_failure(o)]
    assert Action.REVISE in judge_only[True]
    assert judge_only[False] and Action.REVISE not in judge_only[False]


def test_judge_only_reads_the_check_groups() -> None:
    obs = np.zeros(len(FEATURES_V2), dtype=np.float32)
    slot = {
        g: FEATURES_V2.index(f"check_failed_{g}") for g in ("form", "content", "evidence", "tests", "judge")
    }
    obs[slot["judge"]] = 1.0
    assert judge_only_failure(obs)
    obs[slot["tests"]] = 1.0
    assert not judge_only_failure(obs)
    obs[:] = 0.0
    obs[[slot[g] for g in slot]] = -1.0  # no check yet
    assert not judge_only_failure(obs)


def test_on_layout_v1_the_expert_gathers_its_fixed_v1_plan() -> None:
    env = gym.make(MULTI_TOOL, split="eval")
    expert = ExpertPolicy(MULTI_TOOL)
    counts = {
        before_draft(play(env, expert, task.task_id), Action.CALL_TOOL) for task in env.unwrapped.tasks[:8]
    }
    assert counts == {EXPERT_PLANS["multi_tool"].tools}
    assert ExpertPolicy.version == 1


def test_v2_episodes_leave_v1_episodes_as_they_were() -> None:
    # MDP v2's coding tasks reuse v1's task ids for other tasks: verifier results must not cross over
    from harness_gym.envs.domain import VERIFIER_CACHE
    from harness_gym.policies.scripted import CheckRevisePolicy

    def v1_episodes() -> list:
        env = gym.make(CODING, split="eval")
        policy = CheckRevisePolicy(CODING)
        return [run_episode(env, policy, seed=0, task_id=t.task_id)["G"] for t in env.unwrapped.tasks[:20]]

    VERIFIER_CACHE._store.clear()
    alone = v1_episodes()
    VERIFIER_CACHE._store.clear()
    env = gym.make(CODING, split="eval", obs_layout="v2")
    for task in env.unwrapped.tasks[:20]:
        run_episode(env, ExpertPolicy(CODING), seed=0, task_id=task.task_id)
    assert v1_episodes() == alone


def test_hindsight_submit_revises_within_the_budget_of_the_layouts_plan(monkeypatch) -> None:
    """Planning's v2 plan allows 2 revisions, v1's 3: hindsight-submit, which revises a draft its checks
    pass when the draft keeps under half the reference's G, stops at the budget of the layout it plays."""
    from harness_gym.policies.scripted import HindsightSubmitPolicy

    planning = "HarnessPlanning-v0"
    monkeypatch.setattr(HindsightSubmitPolicy, "draft_score", lambda self: 0.1)  # never good enough
    most = {}
    for layout in ("v1", "v2"):
        env = gym.make(planning, split="eval", obs_layout=layout)
        policy = HindsightSubmitPolicy(planning).bind_env(env)
        revisions = [
            [a for a, _ in play(env, policy, task.task_id)].count(Action.REVISE)
            for task in env.unwrapped.tasks
        ]
        most[layout] = max(revisions)
    plans = EXPERT_PLANS["planning"].max_revisions, EXPERT_PLANS_V2["planning"].max_revisions
    assert (most["v1"], most["v2"]) == plans == (3, 2)
