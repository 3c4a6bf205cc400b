"""``MaskedPolicy`` scores each distinct input once: the same actions, probabilities and generator states
as the uncached path (``rng.choice`` over freshly computed probabilities), and nothing stale after the
model's parameters change."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("d3rlpy")

import torch
from test_sampler import _data

from baselines.train import train
from harness_gym.core.actions import N_ACTIONS
from harness_gym.datasets.d3rlpy_bridge import OfflineData, quiet_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy


class Reference(MaskedPolicy):
    """Without the cache: ``Categorical``'s logits, probabilities computed per call, ``rng.choice``."""

    def _cached(self, kind: str, obs: np.ndarray, mask: np.ndarray, compute: Any) -> Any:
        return compute()

    def _logits(self, module: torch.nn.Module, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(self._torch_obs(obs, mask)).logits[0].cpu().numpy().astype(np.float64)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if self.sample:
            return int(rng.choice(self.n_actions, p=self.action_probs(obs, mask)))
        return self._argmax(self.scores(obs, mask), mask)


@pytest.fixture(scope="module")
def data() -> OfflineData:
    quiet_d3rlpy()
    return _data(30, seed=2)


def _inputs(n_states: int = 9, visits: int = 150) -> list[tuple[np.ndarray, np.ndarray]]:
    """Visits to a few distinct (observation, mask) inputs, as an evaluation makes them."""
    rng = np.random.default_rng(7)
    states = []
    for _ in range(n_states):
        mask = rng.integers(0, 2, size=N_ACTIONS).astype(np.int8)
        mask[rng.integers(N_ACTIONS)] = 1
        states.append((rng.normal(size=5).astype(np.float32), mask))
    return [states[i] for i in rng.integers(n_states, size=visits)]


def _play(policy: MaskedPolicy, inputs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[list[int], Any]:
    rng = np.random.default_rng(11)
    actions = [policy.act(obs, mask, rng) for obs, mask in inputs]
    return actions, rng.bit_generator.state


@pytest.mark.parametrize(
    ("algo", "sample"),
    [("awr", True), ("awr", False), ("sac", True), ("bc-d3rlpy", True), ("dqn", False), ("bcq", False)],
)
def test_cached_policy_acts_as_the_uncached_one(data: OfflineData, algo: str, sample: bool) -> None:
    model = train(algo, data, seed=1, n_steps=5)
    cached, reference = MaskedPolicy(model, algo, sample=sample), Reference(model, algo, sample=sample)
    inputs = _inputs()
    assert _play(cached, inputs) == _play(reference, inputs)
    assert len(cached._cache) == 9  # one entry per distinct input
    for obs, mask in inputs[:20]:
        probs = cached.action_probs(obs, mask)
        assert np.array_equal(probs, reference.action_probs(obs, mask))
        probs[:] = -1.0  # a caller's copy: the kept probabilities are untouched
        assert np.array_equal(cached.action_probs(obs, mask), reference.action_probs(obs, mask))


@pytest.mark.parametrize("change", ["in_place", "load_state_dict"])
def test_cached_scores_are_dropped_when_the_model_changes(data: OfflineData, change: str) -> None:
    model = train("awr", data, seed=1, n_steps=5)
    other = train("awr", data, seed=2, n_steps=5)
    cached, reference = MaskedPolicy(model, "awr", sample=True), Reference(model, "awr", sample=True)
    inputs = _inputs()
    before = _play(cached, inputs)
    assert before == _play(reference, inputs)
    policy = model.impl.modules.policy
    if change == "in_place":  # what an optimizer step does
        with torch.no_grad():
            for p in policy.parameters():
                p.mul_(-3.0)
    else:
        policy.load_state_dict(other.impl.modules.policy.state_dict())
    after = _play(cached, inputs)
    assert after == _play(reference, inputs)
    assert after[0] != before[0]  # the model did change its actions
    obs, mask = inputs[0]
    assert np.array_equal(cached.action_probs(obs, mask), reference.action_probs(obs, mask))
