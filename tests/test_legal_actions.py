"""Every registered learner acts legally: its acting policies always, and ``predict`` whenever its input
carries the legal-action mask.

The masked learners (AWR, BC, IQL, SAC, BCQ; ``baselines.legal``) read the mask from their input, so a
d3rlpy user calling ``predict`` or ``sample_action`` on masked observations gets legal actions, as the
bench's ``MaskedPolicy`` does. d3rlpy's own learners (DQN, DoubleDQN, CQL, d3rlpy's BC) are trained on
the features alone: their input has no mask, so their ``predict`` is d3rlpy's and the legal way to act
with them is the ``Trained`` policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

from test_sampler import _data

from baselines.algorithms import D3rlpyLearner
from baselines.budgets import Schedule
from baselines.catalog import ALGORITHMS, ALGOS
from baselines.train import make_config, train
from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import with_mask
from harness_gym.datasets.d3rlpy_bridge import OfflineData, quiet_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy

N_ROWS = 200


@pytest.fixture(scope="module")
def data() -> OfflineData:
    quiet_d3rlpy()
    return _data(40, seed=5)


@pytest.fixture(scope="module")
def inputs(data: OfflineData) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks with about two legal actions of seven: a network that ignores the mask
    picks an illegal action in most rows."""
    rng = np.random.default_rng(0)
    n_features = data.dataset.episodes[0].observations.shape[1]
    obs = rng.normal(size=(N_ROWS, n_features)).astype(np.float32)
    masks = (rng.random((N_ROWS, N_ACTIONS)) < 0.2).astype(np.int8)
    masks[np.arange(N_ROWS), rng.integers(0, N_ACTIONS, N_ROWS)] = 1
    return obs, masks


@pytest.mark.parametrize("algo", ALGOS)
def test_no_registered_learner_takes_a_masked_action(
    data: OfflineData, inputs: tuple[np.ndarray, np.ndarray], algo: str
) -> None:
    obs, masks = inputs
    model = train(
        algo, data, seed=1, n_steps=30, config=make_config(algo, Schedule(hidden_units=8, batch_size=32))
    )
    trained = D3rlpyLearner(algo).trained(model)
    assert ALGORITHMS[algo].stochastic == MaskedPolicy(model, algo).stochastic, "the table's flag is wrong"
    rng = np.random.default_rng(1)
    for mode, policy in trained.policies.items():
        acts = [policy.act(o, m, rng) for o, m in zip(obs, masks, strict=True)]
        assert masks[np.arange(N_ROWS), acts].all(), f"{mode} policy took a masked action"
    if getattr(model.config, "masked", False):
        x = with_mask(obs, masks)
        for name, chosen in (("predict", model.predict(x)), ("sample_action", model.sample_action(x))):
            illegal = int((masks[np.arange(N_ROWS), chosen] == 0).sum())
            assert illegal == 0, f"{algo}.{name} returned {illegal} masked actions in {N_ROWS} rows"
    else:
        assert model.impl.observation_shape == (obs.shape[1],), "an unmasked learner's input is the features"
