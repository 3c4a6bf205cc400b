"""The vectorised sampler draws exactly d3rlpy's mini-batches, so training on it changes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from conftest import require

from harness_gym.core.actions import N_ACTIONS

require("d3rlpy")

import d3rlpy
import torch
from d3rlpy.torch_utility import TorchMiniBatch

import baselines.train as train_module
from baselines.awr import advantage_dataset
from baselines.legal import masked_dataset
from baselines.sampler import FlatReplayBuffer, flat_buffer
from baselines.train import train
from harness_gym.datasets.d3rlpy_bridge import OfflineData, episodes_to_d3rlpy, quiet_d3rlpy

FIELDS = ("observations", "actions", "rewards", "next_observations", "next_actions", "terminals", "intervals")


@dataclass
class _Episode:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]


def _data(n: int = 60, seed: int = 0) -> OfflineData:
    """Random episodes of 1-6 steps, a third of them timed out (2-6 steps: d3rlpy drops their last)."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        timeout = i % 3 == 0
        t = int(rng.integers(2 if timeout else 1, 7))
        masks = rng.integers(0, 2, size=(t + 1, N_ACTIONS)).astype(np.int8)
        masks[np.arange(t + 1), rng.integers(0, N_ACTIONS, size=t + 1)] = 1
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks[:-1]], dtype=np.int64)
        rewards = np.zeros(t)
        rewards[-1] = rng.random()
        episodes.append(
            _Episode(
                observations=rng.normal(size=(t + 1, 5)).astype(np.float32),
                actions=actions,
                rewards=rewards,
                terminations=(np.arange(t) == t - 1) & (not timeout),
                truncations=(np.arange(t) == t - 1) & timeout,
                infos={
                    "action_mask": masks,
                    "behavior_logp": np.zeros(t + 1),
                    "task_index": np.full(t + 1, i % 4, dtype=np.int64),
                },
            )
        )
    return episodes_to_d3rlpy(episodes)


@pytest.fixture(scope="module")
def data() -> OfflineData:
    return _data()


def _sources(data: OfflineData) -> dict[str, Any]:
    return {
        "raw": data.dataset,
        "masked": masked_dataset(data),
        "advantage": advantage_dataset(data, masked=True),
    }


@pytest.mark.parametrize("kind", ["raw", "masked", "advantage"])
def test_batches_equal_d3rlpys_for_the_same_seed(data: OfflineData, kind: str) -> None:
    source = _sources(data)[kind]
    flat = FlatReplayBuffer(source, gamma=1.0)
    n = source.transition_count
    terminal_rows = 0
    for seed in range(5):
        np.random.seed(seed)
        want = source.sample_transition_batch(4 * n)  # large enough to hold every terminal row
        np.random.seed(seed)
        got = flat.sample_transition_batch(4 * n)
        for name in FIELDS:
            a, b = getattr(want, name), getattr(got, name)
            assert a.dtype == b.dtype and a.shape == b.shape, name
            np.testing.assert_array_equal(a, b, err_msg=name)
        terminal = got.terminals[:, 0] == 1.0
        terminal_rows += int(terminal.sum())
        assert not got.next_observations[terminal].any()  # d3rlpy's zero next observation
        # returns-to-go as d3rlpy computes them from the per-row transitions
        torch_want = TorchMiniBatch.from_batch(want, gamma=1.0, compute_returns_to_go=True, device="cpu:0")
        np.testing.assert_array_equal(torch_want.returns_to_go.numpy(), got.returns_to_go)
        assert [t.rewards_to_go.tolist() for t in got.transitions] == [
            t.rewards_to_go.tolist() for t in want.transitions
        ]
    assert terminal_rows > 0
    if kind != "raw":  # the mask columns ride on the observations
        assert got.observations.shape[1] == 5 + N_ACTIONS


def test_building_leaves_the_global_random_state_alone(data: OfflineData) -> None:
    np.random.seed(7)
    expected = np.random.random()
    np.random.seed(7)
    FlatReplayBuffer(data.dataset)
    assert np.random.random() == expected


def test_flat_buffer_is_read_only_and_cached(data: OfflineData) -> None:
    a = flat_buffer(data.dataset)
    assert flat_buffer(data.dataset) is a
    assert flat_buffer(data.dataset, 1.0) is not a
    assert a.transition_count == data.dataset.transition_count
    with pytest.raises(TypeError, match="read-only"):
        a.append_episode(data.dataset.episodes[0])


def _parameters(model: Any) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": tensor.detach().clone()
        for name, module in sorted(vars(model.impl.modules).items())
        if isinstance(module, torch.nn.Module)
        for key, tensor in module.state_dict().items()
    }


@pytest.mark.parametrize("algo", ["awr", "bc", "iql", "dqn", "sac"])
def test_training_on_it_gives_the_very_same_model(
    data: OfflineData, algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet_d3rlpy()
    fast = _parameters(train(algo, data, seed=3, n_steps=12))
    monkeypatch.setattr(train_module, "flat_buffer", lambda source, gamma=None: source)  # d3rlpy's sampler
    slow = _parameters(train(algo, data, seed=3, n_steps=12))
    assert fast.keys() == slow.keys()
    for key in fast:
        assert torch.equal(fast[key], slow[key]), key


def test_seeded_draws_match_d3rlpys_scalar_draws() -> None:
    """The fact the sampler rests on: one vector draw equals d3rlpy's scalar draws, state included."""
    d3rlpy.seed(11)
    scalar = [np.random.randint(1234) for _ in range(300)]
    after_scalar = np.random.random()
    d3rlpy.seed(11)
    vector = np.random.randint(1234, size=300)
    assert vector.tolist() == scalar
    assert np.random.random() == after_scalar
