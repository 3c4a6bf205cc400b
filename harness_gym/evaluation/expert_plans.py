"""How the expert's per-domain plans (``harness_gym.policies.scripted.EXPERT_PLANS``) are chosen.

A grid over the gathering amounts and the revision budget (``retrieve`` 0..6 where the domain retrieves,
``tools`` 0..4 where CALL_TOOL works before a draft, ``max_revisions`` 1..4), each plan played on the
first ``TASKS`` train tasks x seeds 0, 1, 2 x 3 rollouts (never the eval split); the best mean G wins,
ties to the smaller plan (fewer gathering steps, then fewer revisions). Rerun it whenever the simulator
changes and copy the winners into ``EXPERT_PLANS``:

    python -m harness_gym.evaluation.expert_plans
"""

from __future__ import annotations

import itertools
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes, run_episode
from harness_gym.policies.scripted import ExpertPlan, ExpertPolicy

TASKS = 20


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


def main() -> None:
    from harness_gym.envs.registry import ENV_IDS

    for env_id in ENV_IDS:
        plan, g = choose_plan(env_id)
        print(f"{env_id}: {plan} train G {g:.3f}", flush=True)


if __name__ == "__main__":
    main()
