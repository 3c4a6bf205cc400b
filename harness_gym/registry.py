"""Every environment id of the suite: one row each, registered with Gymnasium on import."""

from __future__ import annotations

import gymnasium as gym

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


ADAPTERS = frozenset({"HarnessTauRetail-v0", "HarnessDBBench-v0"})
"""Public-benchmark adapters: 16 train / 20 eval tasks by default, upstream data via ``data_path``."""


def register_all() -> None:
    for env_id, entry_point in {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)


def env_class(env_id: str) -> type:
    """The environment class behind an id, without constructing it."""
    known = {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}
    if env_id not in known:
        raise ValueError(f"unknown environment id {env_id!r}; known ids: {', '.join(known)}")
    return gym.envs.registration.load_env_creator(known[env_id])
