"""Episodes that end at the step limit: a SUBMIT on the last step is terminated, not truncated, and every
dataset any behaviour writes there trains and converts (d3rlpy splits episodes on exactly one flag)."""

from __future__ import annotations

import gymnasium as gym
import minari
import numpy as np
import pytest

from harness_gym import Action
from harness_gym.datasets.collect import BEHAVIORS, CollectConfig, collect
from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
from harness_gym.policies.algorithms import TrainingData, get

PLANNING = "HarnessPlanning-v0"
BUDGETS = (3, 4)
"""Planning's Base takes 3 steps (OBSERVE, DRAFT, SUBMIT) and Forced-CHECK 4: with these budgets both SUBMIT
on the last step, and random and the schedules over them do so in some episodes."""


def test_submit_on_the_last_step_is_terminated_only():
    env = gym.make(PLANNING, max_steps=3)
    env.reset(seed=0)
    flags = [env.step(int(a))[2:4] for a in (Action.OBSERVE, Action.DRAFT, Action.SUBMIT)]
    assert flags == [(False, False), (False, False), (True, False)]
    env.reset(seed=0)
    flags = [env.step(int(a))[2:4] for a in (Action.OBSERVE, Action.DRAFT, Action.OBSERVE)]
    assert flags[-1] == (False, True)  # the budget ran out: truncated, the draft scored


@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_every_behaviour_at_the_step_limit_trains_and_converts(tmp_path, behavior):
    quiet_d3rlpy()
    submitted_last = 0
    for budget in BUDGETS:
        dataset_id = f"harness/planning/limit{budget}-v0"
        config = CollectConfig(
            PLANNING, behavior, 24, dataset_id, max_steps=budget, root=str(tmp_path), show_progress=False
        )
        collect(config)
        dataset = minari.load_dataset(str(tmp_path / dataset_id))
        assert dataset.recover_environment().unwrapped.max_steps == budget
        for ep in dataset.iterate_episodes():
            assert not (ep.terminations & ep.truncations).any(), f"episode {ep.id} has both flags"
            assert ep.terminations[-1] != ep.truncations[-1]
            assert ep.terminations[-1] == (ep.actions[-1] == Action.SUBMIT)
            submitted_last += len(ep.actions) == budget and bool(ep.terminations[-1])
        data = to_d3rlpy(dataset)
        assert data.n_steps == dataset.total_steps
        trained = get("bc").train(TrainingData(PLANNING, dataset, data), seed=0, n_steps=5)
        obs, info = gym.make(PLANNING).reset(seed=0)
        assert info["action_mask"][
            trained.policies["greedy"].act(obs, info["action_mask"], np.random.default_rng(0))
        ]
    assert submitted_last > 0, f"{behavior}: no episode SUBMITs on its last step; the case is not exercised"
