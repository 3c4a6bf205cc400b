"""AWR learns state-dependent CHECKs from terminal returns; BC copies the mix; every policy stays legal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

import d3rlpy
import torch
from d3rlpy.dataset import BasicTransitionPicker, TransitionMiniBatch

from baselines.awr import (
    DiscreteAWR,
    DiscreteAWRConfig,
    advantage_dataset,
    awr_as_bc,
    awr_weights,
    per_task_advantage,
)
from baselines.budgets import Schedule
from baselines.train import ALGOS, make_config, train
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import with_mask
from harness_gym.datasets.d3rlpy_bridge import OfflineData, episodes_to_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy

# Synthetic features: [state X, state Y, checked, revised].
X0 = np.array([1, 0, 0, 0], dtype=np.float32)
Y0 = np.array([0, 1, 0, 0], dtype=np.float32)
ALL_LEGAL = np.ones(N_ACTIONS, dtype=bool)


@dataclass
class _Episode:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any] = field(default_factory=dict)


def _episode(
    start: np.ndarray, actions: list[Action], g: float, task: int, truncated: bool = False
) -> _Episode:
    """Observations follow the actions (CHECK sets 'checked', REVISE sets 'revised'); G on the last step."""
    obs = [start.copy()]
    for a in actions:
        nxt = obs[-1].copy()
        if a == Action.CHECK:
            nxt[2] = 1.0
        if a == Action.REVISE:
            nxt[3] = 1.0
        obs.append(nxt)
    t = len(actions)
    rewards = np.zeros(t)
    rewards[-1] = g
    last = np.arange(t) == t - 1
    return _Episode(
        observations=np.stack(obs),
        actions=np.array([int(a) for a in actions], dtype=np.int64),
        rewards=rewards,
        terminations=last & (not truncated),
        truncations=last & truncated,
        infos={
            "action_mask": np.ones((t + 1, N_ACTIONS), dtype=np.int8),
            "behavior_logp": np.append(np.full(t, np.log(0.5)), np.nan),
            "task_index": np.full(t + 1, task, dtype=np.int64),
        },
    )


CHECK_PATH = [Action.CHECK, Action.REVISE, Action.SUBMIT]
SUBMIT_PATH = [Action.SUBMIT]


def _bandit(n_per_arm: int = 50, seed: int = 0) -> OfflineData:
    """State X (task 0): check-then-revise earns ~1.0, submitting ~0.2. State Y (task 1): submitting
    earns ~0.8, checking ~0.3. The behaviour policy is 50/50 at the first decision in both."""
    rng = np.random.default_rng(seed)
    eps = []
    for start, task, g_check, g_submit in ((X0, 0, 1.0, 0.2), (Y0, 1, 0.3, 0.8)):
        for _ in range(n_per_arm):
            eps.append(_episode(start, CHECK_PATH, g_check + 0.02 * rng.standard_normal(), task))
            eps.append(_episode(start, SUBMIT_PATH, g_submit + 0.02 * rng.standard_normal(), task))
    return episodes_to_d3rlpy(eps)


@pytest.fixture(scope="module")
def bandit() -> OfflineData:
    return _bandit()


def _probs(algo: Any, obs: np.ndarray) -> np.ndarray:
    return MaskedPolicy(algo, "p", sample=True).action_probs(obs, ALL_LEGAL)


# ---- learning behaviour ------------------------------------------------------------------------


@pytest.mark.parametrize("advantage", ["per_task", "value"])
def test_awr_checks_only_where_checking_pays(bandit: OfflineData, advantage: str) -> None:
    algo = train(
        "awr", bandit, seed=0, n_steps=420, config=DiscreteAWRConfig(batch_size=64, advantage=advantage)
    )
    greedy = MaskedPolicy(algo, "awr")
    rng = np.random.default_rng(0)
    assert greedy.act(X0, ALL_LEGAL, rng) == Action.CHECK
    assert greedy.act(Y0, ALL_LEGAL, rng) == Action.SUBMIT
    px, py = _probs(algo, X0), _probs(algo, Y0)
    assert px[Action.CHECK] > 0.75, px
    # Not Forced-CHECK: in Y, where checking lowers G, AWR moves mass away from CHECK.
    assert py[Action.CHECK] < 0.25, py
    assert py[Action.SUBMIT] > 0.6, py


@pytest.mark.parametrize("algo", ["bc", "bc-d3rlpy"])
def test_bc_reproduces_the_behaviour_mix(bandit: OfflineData, algo: str) -> None:
    cfg = awr_as_bc(batch_size=64) if algo == "bc" else make_config(algo, Schedule(batch_size=64))
    learner = train(algo, bandit, seed=0, n_steps=280, config=cfg)
    for obs in (X0, Y0):
        p = _probs(learner, obs)
        # d3rlpy's DiscreteBC adds an L2 penalty on the logits (beta=0.5) that spreads mass over all 7
        # actions, so compare the behaviour's two actions with each other.
        share = p[Action.CHECK] / (p[Action.CHECK] + p[Action.SUBMIT])
        assert abs(share - 0.5) < 0.1, p
        if algo == "bc":
            assert p[Action.CHECK] + p[Action.SUBMIT] > 0.8, p


# ---- advantages and weights ----------------------------------------------------------------------


def test_weights_are_clipped() -> None:
    a = torch.tensor([-100.0, -1.0, 0.0, 0.1, 100.0, float("inf")])
    w = awr_weights(a, beta=0.2, clip=(0.1, 10.0))
    expected = torch.tensor([0.1, 0.1, 1.0, float(np.exp(0.5)), 10.0, 10.0])
    torch.testing.assert_close(w, expected)


def test_update_uses_clipped_weights(bandit: OfflineData) -> None:
    """Advantages of +-100 (far outside the clip) still give a mean weight inside [0.1, 10]."""
    algo = DiscreteAWRConfig(batch_size=8, masked=False).create()
    algo.create_impl((4,), N_ACTIONS)
    picker = BasicTransitionPicker()
    ds = advantage_dataset(bandit)
    transitions = [picker(ds.episodes[i], 0) for i in range(8)]
    for big in (100.0, -100.0):
        scaled = [
            type(t)(
                **{**t.__dict__, "rewards_to_go": np.full_like(t.rewards_to_go, big / len(t.rewards_to_go))}
            )
            for t in transitions
        ]
        metrics = algo.update(TransitionMiniBatch.from_transitions(scaled))
        assert metrics["mean_weight"] == pytest.approx(10.0 if big > 0 else 0.1)


def test_per_task_advantage_uses_each_tasks_own_mean() -> None:
    eps = [
        _episode(X0, CHECK_PATH, 1.0, task=7),
        _episode(X0, SUBMIT_PATH, 0.8, task=7),
        _episode(Y0, CHECK_PATH, 0.1, task=3, truncated=True),  # d3rlpy drops its last transition
        _episode(Y0, SUBMIT_PATH, 0.3, task=3),
        _episode(Y0, SUBMIT_PATH, 0.2, task=3),
    ]
    want = np.array([0.1, -0.1, -0.1, 0.1, 0.0])  # task 7 mean 0.9, task 3 mean 0.2
    np.testing.assert_allclose(
        per_task_advantage(np.array([1.0, 0.8, 0.1, 0.3, 0.2]), np.array([7, 7, 3, 3, 3])), want, atol=1e-12
    )

    data = episodes_to_d3rlpy(eps)
    ds = advantage_dataset(data, "per_task")
    picker = BasicTransitionPicker()
    rtg = [[float(picker(e, i).rewards_to_go.sum()) for i in range(e.transition_count)] for e in ds.episodes]
    assert [len(r) for r in rtg] == [3, 1, 2, 1, 1]
    for r, a in zip(rtg, want, strict=True):
        np.testing.assert_allclose(r, a, atol=1e-6)
    # The value option keeps G itself as every transition's target.
    ds_value = advantage_dataset(data, "value")
    assert float(picker(ds_value.episodes[2], 0).rewards_to_go.sum()) == pytest.approx(0.1)


# ---- persistence ---------------------------------------------------------------------------------


@pytest.mark.parametrize("advantage", ["per_task", "value"])
def test_save_and_load_learnable(bandit: OfflineData, tmp_path, advantage: str) -> None:
    cfg = DiscreteAWRConfig(batch_size=64, advantage=advantage, weight_clip=(0.2, 5.0))
    algo = train("awr", bandit, seed=1, n_steps=14, config=cfg)
    path = tmp_path / "awr.d3"
    algo.save(str(path))
    loaded = d3rlpy.load_learnable(str(path))
    assert isinstance(loaded, DiscreteAWR)
    assert loaded.config.weight_clip == (0.2, 5.0) and loaded.config.advantage == advantage
    obs = np.random.default_rng(0).random((32, 4), dtype=np.float32)
    x_all = with_mask(obs, np.ones((32, N_ACTIONS)))  # masked learnables read the mask from their input
    np.testing.assert_array_equal(loaded.predict(x_all), algo.predict(x_all))
    for x in obs[:4]:
        np.testing.assert_allclose(_probs(loaded, x), _probs(algo, x))


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError):
        DiscreteAWRConfig(advantage="global")
    with pytest.raises(ValueError):
        DiscreteAWRConfig(weight_clip=(0.0, 10.0))
    with pytest.raises(ValueError):
        DiscreteAWRConfig(gamma=0.99)


# ---- masking -------------------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ALGOS)
def test_masked_policy_never_takes_an_illegal_action(bandit: OfflineData, algo: str) -> None:
    cfg = make_config(algo, Schedule(hidden_units=8, batch_size=64))
    learner = train(algo, bandit, seed=0, n_steps=5, config=cfg)
    policies = [MaskedPolicy(learner, algo)]
    if policies[0].stochastic:
        policies.append(MaskedPolicy(learner, algo, sample=True))
    rng = np.random.default_rng(0)
    obs = rng.random((200, 4), dtype=np.float32) * 2.0
    masks = rng.random((200, N_ACTIONS)) < 0.4
    masks[:, Action.SUBMIT] = True
    all_legal = np.ones((200, N_ACTIONS))
    unmasked = learner.predict(with_mask(obs, all_legal) if policies[0].masked_input else obs)
    # The test must exercise the mask: the raw greedy action is often illegal here.
    assert (~masks[np.arange(200), unmasked]).sum() > 10
    for policy in policies:
        for x, m in zip(obs, masks, strict=True):
            a = policy.act(x, m, rng)
            assert m[a], (algo, a, m)
            p = policy.action_probs(x, m)
            assert p.sum() == pytest.approx(1.0) and not p[~m].any()
