"""The learners' own ``predict``, ``sample_action`` and ``predict_value`` (not the bench's re-masking): a
masked learner never returns an illegal action, even where its network prefers one; an unmasked learner
returns what its network prefers; IQL's value is the pessimistic (minimum) critic at the given action."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

import torch
from test_offline_mdp import _final_bias

import baselines  # noqa: F401  (registers the learnables)
from baselines.awr import DiscreteAWRConfig
from baselines.budgets import Schedule
from baselines.iql import DiscreteIQLConfig
from baselines.legal import with_mask
from baselines.train import make_config
from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import N_FEATURES

FAVOURED = 2
"""The action the untrained networks are pushed to prefer, illegal in every test state."""
N = 32


def _learner(algo: str, masked: bool = True) -> Any:
    if algo == "iql":
        config: Any = DiscreteIQLConfig(hidden_units=8, masked=masked)
    elif algo == "awr":
        config = DiscreteAWRConfig(hidden_units=8, masked=masked)
    else:
        config = make_config(algo, Schedule(hidden_units=8))
    learner = config.create(device=False)
    learner.create_impl((N_FEATURES + N_ACTIONS,), N_ACTIONS)
    return learner


def _prefer(learner: Any, algo: str, action: int) -> None:
    """Push every output layer that picks the action towards ``action``."""
    modules = learner.impl.modules
    heads = [modules.policy] if algo in ("iql", "awr", "sac") else []
    if algo in ("bcq", "sac"):
        heads += list(modules.q_funcs)
    if algo == "bcq":
        heads.append(modules.imitator)
    with torch.no_grad():
        for head in heads:
            bias = _final_bias(head)
            bias.zero_()
            bias[action] = 50.0


def _states(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """N observations whose masks forbid ``FAVOURED`` and allow at least one other action."""
    rng = np.random.default_rng(seed)
    masks = rng.random((N, N_ACTIONS)) < 0.5
    masks[np.arange(N), (FAVOURED + 1 + rng.integers(0, N_ACTIONS - 1, N)) % N_ACTIONS] = True
    masks[:, FAVOURED] = False
    return rng.random((N, N_FEATURES), dtype=np.float32), masks


@pytest.mark.parametrize("algo", ("iql", "awr", "sac", "bcq"))
def test_a_masked_learner_predicts_and_samples_legal_actions_only(algo: str) -> None:
    learner = _learner(algo)
    _prefer(learner, algo, FAVOURED)
    obs, masks = _states()
    x = with_mask(obs, masks)
    greedy = learner.predict(x)
    assert masks[np.arange(N), greedy].all(), f"{algo} predicted an illegal action"
    if algo != "bcq":  # d3rlpy's BCQ samples through predict
        torch.manual_seed(0)
        for _ in range(5):
            sampled = learner.sample_action(x)
            assert masks[np.arange(N), sampled].all(), f"{algo} sampled an illegal action"


@pytest.mark.parametrize("algo", ("iql", "awr"))
def test_an_unmasked_learner_follows_its_network(algo: str) -> None:
    learner = _learner(algo, masked=False)
    _prefer(learner, algo, FAVOURED)
    obs, masks = _states()
    x = with_mask(obs, masks)
    assert (learner.predict(x) == FAVOURED).all()
    torch.manual_seed(0)
    assert (learner.sample_action(x) == FAVOURED).all()


@pytest.mark.parametrize("algo", ("iql", "awr", "sac"))
def test_the_greedy_action_is_the_best_legal_one(algo: str) -> None:
    """Among legal actions the greedy one is the policy's most probable, not merely some legal action."""
    learner = _learner(algo)
    _prefer(learner, algo, FAVOURED)
    with torch.no_grad():
        _final_bias(learner.impl.modules.policy)[FAVOURED + 1] = 40.0
    obs, masks = _states(1)
    masks[:, FAVOURED + 1] = True
    assert (learner.predict(with_mask(obs, masks)) == FAVOURED + 1).all()


def test_iql_values_are_the_minimum_critic_at_the_given_action() -> None:
    learner = _learner("iql")
    with torch.no_grad():
        for i, q in enumerate(learner.impl.modules.q_funcs):
            bias = _final_bias(q)
            bias.copy_(torch.arange(N_ACTIONS, dtype=bias.dtype) * (i + 1))
            for name, p in q.named_parameters():
                if name.endswith("_fc.weight"):
                    p.zero_()
    obs, masks = _states()
    actions = np.arange(N) % N_ACTIONS
    values = learner.predict_value(with_mask(obs, masks), actions)
    np.testing.assert_allclose(values, actions.astype(float))  # min over critics i of a * (i + 1)


def test_awr_refuses_to_predict_values() -> None:
    learner = _learner("awr")
    obs, masks = _states()
    with pytest.raises(NotImplementedError, match=r"^AWR learns no action values; use the policy's logits$"):
        learner.predict_value(with_mask(obs, masks), np.zeros(N, dtype=int))


def test_iql_values_pair_each_state_with_its_own_action() -> None:
    learner = _learner("iql")  # random critics: values differ from state to state
    obs, masks = _states(2)
    x = with_mask(obs, masks)
    actions = (np.arange(N) * 5) % N_ACTIONS
    with torch.no_grad():
        q = learner.impl._q_func.compute_expected_q(torch.as_tensor(x), reduction="min").numpy()
    np.testing.assert_allclose(learner.predict_value(x, actions), q[np.arange(N), actions], rtol=1e-5)
