"""How the expert's per-domain plans (``harness_gym.policies.scripted.EXPERT_PLANS``) are chosen.

A grid over the gathering amounts and the revision budget (``retrieve`` 0..6 where the domain retrieves,
``tools`` 0..4 where CALL_TOOL works before a draft, ``max_revisions`` 1..4), each plan played on the
first ``TASKS`` train tasks x seeds 0, 1, 2 x 3 rollouts (never the eval split); the best mean G wins,
ties to the smaller plan (fewer gathering steps, then fewer revisions). Rerun it whenever the simulator
changes and copy the winners into ``EXPERT_PLANS``:

    python -m harness_gym.evaluation.expert_plans

On MDP v2 (``--obs-layout v2``) the grid is over the numbers of ``ExpertPlanV2``
(``harness_gym.policies.expert_v2``): gather ``base + per * need`` items, ``retrieve_base`` 0..3 and
``retrieve_per`` 1..2 where some train task's features name evidence to retrieve, ``tools_base`` 0..1 and
``tools_per`` 1..2 where they name tool calls (before a draft), ``max_revisions`` 1..3 and
``revise_judge_only`` true / false; each plan played on every v2 train task x seeds 0, 1, 2 x one
rollout (three below ``SMALL_SPLIT`` train tasks); best mean G wins, ties to the smaller plan (fewer
gathering steps, fewer revisions, then not revising a judge-only failure). Copy the winners into
``EXPERT_PLANS_V2``.
"""

from __future__ import annotations

import itertools
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes, run_episode
from harness_gym.policies.expert_v2 import NEEDS, ExpertPlanV2, task_features
from harness_gym.policies.scripted import ExpertPlan, ExpertPolicy

TASKS = 20
SMALL_SPLIT = 40
"""Below this many v2 train tasks each is played with ``EVAL_ROLLOUTS`` rollouts, else with one."""


def choose_plan(env_id: str) -> tuple[ExpertPlan, float]:
    env = gym.make(env_id, split="train")
    domain = env.unwrapped.domain
    task_ids = [task.task_id for task in env.unwrapped.tasks][:TASKS]
    episodes = protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
    retrieves = range(7) if Action.RETRIEVE in domain.supported else (0,)
    tools = range(5) if Action.CALL_TOOL in domain.supported and not domain.tool_needs_draft else (0,)
    best: tuple[Any, ExpertPlan, float] | None = None
    for r, t, m in itertools.product(retrieves, tools, range(1, 5)):
        policy = ExpertPolicy(env_id)
        policy.plan = ExpertPlan(retrieve=r, tools=t, max_revisions=m)
        g = float(
            np.mean([run_episode(env, policy, seed=seed, task_id=tid)["G"] for _, tid, _, seed in episodes])
        )
        key = (-round(g, 12), r + t, m)
        if best is None or key < best[0]:
            best = (key, policy.plan, g)
    assert best is not None
    return best[1], best[2]


def v2_grid(env: gym.Env) -> list[ExpertPlanV2]:
    """The v2 plans worth playing in ``env``'s domain (module docstring): a gathering number is varied
    only where some train task needs that kind of item."""
    domain = env.unwrapped.domain
    names = tuple(name for name, _ in domain.features.names)
    needs = []
    for task in env.unwrapped.tasks:
        obs, _ = env.reset(seed=0, options={"task_id": task.task_id})
        needs.append(NEEDS[domain.name](task_features(obs, names)))
    retrieves = Action.RETRIEVE in domain.supported and any(r for r, _ in needs)
    tools = Action.CALL_TOOL in domain.supported and not domain.tool_needs_draft and any(t for _, t in needs)
    return [
        ExpertPlanV2(rb, rp, tb, tp, m, j)
        for rb, rp, tb, tp, m, j in itertools.product(
            range(4) if retrieves else (0,),
            (1, 2) if retrieves else (1,),
            range(2) if tools else (0,),
            (1, 2) if tools else (1,),
            range(1, 4),
            (True, False),
        )
    ]


def choose_plan_v2(env_id: str) -> tuple[ExpertPlanV2, float]:
    """The best ``ExpertPlanV2`` of ``env_id`` on its v2 train split, and its mean G there."""
    env = gym.make(env_id, split="train", obs_layout="v2")
    task_ids = [task.task_id for task in env.unwrapped.tasks]
    rollouts = EVAL_ROLLOUTS if len(task_ids) < SMALL_SPLIT else 1
    episodes = protocol_episodes(task_ids, EVAL_SEEDS, rollouts)
    best: tuple[Any, ExpertPlanV2, float] | None = None
    for plan in v2_grid(env):
        policy = ExpertPolicy(env_id)
        policy.plan_v2 = plan
        g = float(
            np.mean([run_episode(env, policy, seed=seed, task_id=tid)["G"] for _, tid, _, seed in episodes])
        )
        size = plan.retrieve_base + plan.retrieve_per + plan.tools_base + plan.tools_per
        key = (-round(g, 12), size, plan.max_revisions, plan.revise_judge_only)
        if best is None or key < best[0]:
            best = (key, plan, g)
    assert best is not None
    return best[1], best[2]


def main(argv: list[str] | None = None) -> None:
    import argparse

    from harness_gym.envs.registry import ENV_IDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--obs-layout", default="v1", choices=("v1", "v2"))
    parser.add_argument("--env", nargs="*", default=None, help="env ids (default: all eight)")
    args = parser.parse_args(argv)
    choose = choose_plan_v2 if args.obs_layout == "v2" else choose_plan
    for env_id in args.env or ENV_IDS:
        plan, g = choose(env_id)
        print(f"{env_id}: {plan} train G {g:.3f}", flush=True)


if __name__ == "__main__":
    main()
