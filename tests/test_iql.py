"""Discrete IQL: its expectile loss, config checks and the d3rlpy save / load round trip."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

import d3rlpy
import torch
from test_offline_mdp import M1, S1, two_step_data

import baselines  # noqa: F401  (registers the learnables, as a user of load_learnable would)
from baselines.budgets import Schedule
from baselines.iql import DiscreteIQL, DiscreteIQLConfig, expectile_loss
from baselines.train import make_config, train
from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import with_mask
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy


def test_expectile_loss_minimiser_is_the_expectile() -> None:
    values = torch.tensor([0.0, 0.0, 0.0, 1.0])
    grid = torch.linspace(0.0, 1.0, 1001)
    losses = torch.stack([expectile_loss(values - v, 0.9) for v in grid])
    best = float(grid[losses.argmin()])
    # tau-expectile of {0 x3, 1}: 0.9 * 1 * (1 - v) = 0.1 * 3 * v  ->  v = 0.75
    assert best == pytest.approx(0.75, abs=2e-3)
    assert expectile_loss(values - 0.25, 0.5) == pytest.approx(float(((values - 0.25) ** 2).mean()) / 2)


def test_config_rejects_bad_values() -> None:
    for bad in ({"expectile": 1.0}, {"beta": 0.0}, {"tau": 0.0}, {"gamma": 1.5}, {"n_critics": 0}):
        with pytest.raises(ValueError):
            DiscreteIQLConfig(**bad)


def test_save_and_load_round_trip(tmp_path) -> None:
    cfg = make_config("iql", Schedule(hidden_units=8, batch_size=32))
    model = train("iql", two_step_data(20), seed=0, n_steps=20, config=cfg)
    path = tmp_path / "iql.d3"
    model.save(str(path))
    loaded = d3rlpy.load_learnable(str(path))
    assert isinstance(loaded, DiscreteIQL)
    assert loaded.config.expectile == cfg.expectile and loaded.config.masked
    obs = np.random.default_rng(0).random((16, 4), dtype=np.float32)
    x = with_mask(obs, np.ones((16, N_ACTIONS)))
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    np.testing.assert_allclose(
        loaded.predict_value(x, np.zeros(16, dtype=int)), model.predict_value(x, np.zeros(16, dtype=int))
    )
    p_loaded = MaskedPolicy(loaded, "iql", sample=True).action_probs(S1, M1)
    np.testing.assert_allclose(p_loaded, MaskedPolicy(model, "iql", sample=True).action_probs(S1, M1))
    assert not p_loaded[M1 == 0].any()
