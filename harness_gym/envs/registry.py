"""Every environment id of the suite: one row each, registered with Gymnasium on import.

Each id is registered with ``max_episode_steps`` equal to the environment's own step budget
(``max_steps``), and with :class:`SyncBudget` as an additional wrapper, so the two are one number:
``gym.make(id, max_episode_steps=N)`` sets the environment's budget to N and ``gym.make(id, max_steps=N)``
moves the ``TimeLimit`` to N. Either way the environment itself truncates on the last step and scores
the current draft (G in the final info); ``TimeLimit`` never cuts an episode before it is scored. A SUBMIT
on the last step ends the episode as terminated only: ``TimeLimit`` would also flag it truncated, and
offline learners (d3rlpy's ``MDPDataset``) split episodes on exactly one of the two flags.
"""

from __future__ import annotations

import os
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec
from gymnasium.wrappers import TimeLimit

from harness_gym.envs.domain import Domain
from harness_gym.executors import profiles
from harness_gym.executors.profiles import DraftParams, ExecutorProfile

ENV_ENTRY_POINTS: dict[str, str] = {
    "HarnessKnowledgeWork-v0": "harness_gym.domains.knowledge_work:HarnessKnowledgeWorkEnv",
    "HarnessCoding-v0": "harness_gym.domains.coding:HarnessCodingEnv",
    "HarnessResearch-v0": "harness_gym.domains.research:HarnessResearchEnv",
    "HarnessMultiTool-v0": "harness_gym.domains.multi_tool:HarnessMultiToolEnv",
    "HarnessLongMemory-v0": "harness_gym.domains.long_memory:HarnessLongMemoryEnv",
    "HarnessPlanning-v0": "harness_gym.domains.planning:HarnessPlanningEnv",
    "HarnessTauRetail-v0": "harness_gym.domains.tau_retail:HarnessTauRetailEnv",
    "HarnessDBBench-v0": "harness_gym.domains.dbbench:HarnessDBBenchEnv",
}


EXTRA_ENV_ENTRY_POINTS: dict[str, str] = {
    "HarnessHumanEval-v0": "harness_gym.domains.humaneval:HarnessHumanEvalEnv",
}
"""Ids beyond the paper's eight settings (not in ``ENV_IDS``): other task sources for the same MDPs."""


ENV_IDS: tuple[str, ...] = tuple(ENV_ENTRY_POINTS)
"""The paper's eight settings (``--env all``)."""
ALL_ENV_IDS: tuple[str, ...] = ENV_IDS + tuple(EXTRA_ENV_ENTRY_POINTS)
"""Every registered id: the eight settings and other task sources (``HarnessHumanEval-v0``)."""


ADAPTERS = frozenset({"HarnessTauRetail-v0", "HarnessDBBench-v0"})
"""Public-benchmark adapters: 16 train / 20 eval tasks by default, upstream data via ``data_path``."""


class SyncBudget(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Makes the ``TimeLimit`` below it and the environment's ``max_steps`` budget one number.

    Applied by ``gym.make`` (it is in every id's registered ``additional_wrappers``). An explicit
    ``max_episode_steps`` sets the environment's budget; an explicit ``max_steps`` moves the
    registered ``TimeLimit``; both explicit and different is refused. An episode that SUBMITs on its last
    step is terminated, not truncated (``TimeLimit`` sets both; the terminal state is what it is).
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        limit = _find_time_limit(env)
        if limit is None:  # gym.make(..., max_episode_steps=-1): the environment's budget alone
            return
        inner = env.unwrapped
        registered = gym.registry[inner.spec.id].max_episode_steps if inner.spec.id in gym.registry else None
        steps = limit._max_episode_steps
        if not getattr(inner, "max_steps_given", False):
            inner.max_steps = steps
        elif steps == registered:
            limit._max_episode_steps = inner.max_steps
        elif steps != inner.max_steps:
            raise ValueError(
                f"{inner.spec.id}: max_steps={inner.max_steps} and max_episode_steps={steps} disagree; "
                "they are the same step budget, give one of them"
            )

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated and not terminated, info


def _find_time_limit(env: gym.Env) -> TimeLimit | None:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, TimeLimit):
            return env
        env = env.env
    return None


_SYNC = WrapperSpec("SyncBudget", "harness_gym.envs.registry:SyncBudget", {})


def register_all() -> None:
    for env_id, entry_point in {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=entry_point,
                max_episode_steps=Domain.max_steps,
                additional_wrappers=(_SYNC,),
            )


def env_class(env_id: str) -> type:
    """The environment class behind an id, without constructing it."""
    known = {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}
    if env_id not in known:
        raise ValueError(f"unknown environment id {env_id!r}; known ids: {', '.join(known)}")
    return gym.envs.registration.load_env_creator(known[env_id])


def domain_draft_params() -> dict[str, DraftParams]:
    """Every setting's domain name -> its simulated executor's ``draft_params`` (the eight settings)."""
    return {cls.name: cls.draft_params for cls in (env_class(env_id).domain_cls for env_id in ENV_IDS)}


def executor_profile(spec: ExecutorProfile | str | os.PathLike[str] | None = None) -> ExecutorProfile:
    """A whole executor profile (every setting's domain) from a profile, a shipped name, a JSON path or
    None (``$HARNESS_GYM_EXECUTOR_PROFILE``, else ``default``)."""
    return profiles.resolve(spec, domain_draft_params())
