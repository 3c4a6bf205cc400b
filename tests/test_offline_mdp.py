"""Tiny offline MDPs built here: every learner, at its budget from ``baselines.budgets``, must read the
best action from the returns and must not submit where the data show that submitting pays 0.

The task (4 features: at s0, at s1, done, bias):

- s0, legal {DRAFT, SUBMIT}: SUBMIT ends with G = 0; DRAFT moves to s1.
- s1, legal {CHECK, SUBMIT}: CHECK ends with G = 1; SUBMIT ends with G = 0.5.

The behaviour takes DRAFT at s0 70% of the time and CHECK at s1 only 30% of the time, so CHECK is the
minority action: it is best only through the returns. BC is the control: it copies the majority.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from harness_gym.actions import N_ACTIONS, Action

pytest.importorskip("d3rlpy")

from baselines.d3rlpy_bridge import episodes_to_d3rlpy
from baselines.masked import MaskedPolicy
from baselines.train import quiet_d3rlpy, train

S0 = np.array([1, 0, 0, 1], dtype=np.float32)
S1 = np.array([0, 1, 0, 1], dtype=np.float32)
DONE = np.array([0, 0, 1, 1], dtype=np.float32)


def _mask(*actions: Action) -> np.ndarray:
    m = np.zeros(N_ACTIONS, dtype=np.int8)
    m[list(actions)] = 1
    return m


M0 = _mask(Action.DRAFT, Action.SUBMIT)
M1 = _mask(Action.CHECK, Action.SUBMIT)
M_DONE = _mask(Action.SUBMIT)


@dataclass
class _Episode:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]


def _episode(obs: list[np.ndarray], masks: list[np.ndarray], actions: list[Action], g: float) -> _Episode:
    t = len(actions)
    rewards = np.zeros(t)
    rewards[-1] = g
    return _Episode(
        observations=np.stack(obs),
        actions=np.array([int(a) for a in actions], dtype=np.int64),
        rewards=rewards,
        terminations=np.arange(t) == t - 1,
        truncations=np.zeros(t, dtype=bool),
        infos={
            "action_mask": np.stack(masks),
            "behavior_logp": np.zeros(t + 1),
            "task_index": np.zeros(t + 1, dtype=np.int64),
        },
    )


def two_step_data(n: int = 100):
    """30% SUBMIT at s0 (G = 0); of the rest, 30% CHECK (G = 1) and 70% SUBMIT at s1 (G = 0.5)."""
    episodes = []
    for i in range(n):
        if i % 10 < 3:
            episodes.append(_episode([S0, DONE], [M0, M_DONE], [Action.SUBMIT], 0.0))
        elif i % 10 < 3 + 2:  # 2 of the 7 drafting episodes in 10 check: ~29% CHECK at s1
            episodes.append(_episode([S0, S1, DONE], [M0, M1, M_DONE], [Action.DRAFT, Action.CHECK], 1.0))
        else:
            episodes.append(_episode([S0, S1, DONE], [M0, M1, M_DONE], [Action.DRAFT, Action.SUBMIT], 0.5))
    return episodes_to_d3rlpy(episodes)


RL_ALGOS = ("awr-converged", "iql", "cql", "bcq", "dqn", "double-dqn", "sac")


@pytest.fixture(scope="module")
def policies() -> dict[str, MaskedPolicy]:
    import torch

    torch.set_num_threads(1)  # 64-unit networks: extra threads only add synchronisation
    quiet_d3rlpy()
    data = two_step_data()
    return {algo: MaskedPolicy(train(algo, data, seed=0), algo) for algo in (*RL_ALGOS, "bc-converged")}


def _greedy(policy: MaskedPolicy, obs: np.ndarray, mask: np.ndarray) -> Action:
    return Action(int(np.argmax(policy.action_probs(obs, mask))))


@pytest.mark.parametrize("algo", RL_ALGOS)
def test_recovers_the_minority_best_action(policies: dict[str, MaskedPolicy], algo: str) -> None:
    assert _greedy(policies[algo], S1, M1) is Action.CHECK


@pytest.mark.parametrize("algo", (*RL_ALGOS, "bc-converged"))
def test_does_not_submit_where_submitting_pays_zero(policies: dict[str, MaskedPolicy], algo: str) -> None:
    assert _greedy(policies[algo], S0, M0) is Action.DRAFT


def test_bc_copies_the_majority(policies: dict[str, MaskedPolicy]) -> None:
    """The control: the best action at s1 is invisible without returns."""
    assert _greedy(policies["bc-converged"], S1, M1) is Action.SUBMIT
