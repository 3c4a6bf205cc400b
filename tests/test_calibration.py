"""Calibration: the Base harness reproduces the paper's Base G on the eval split (protocol size)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import harness_gym
from baselines.scripted import BasePolicy
from harness_gym.paper import BASE_G, CALIBRATION_TOLERANCE, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.rollout import run_protocol, summarize


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_base_harness_matches_the_paper(env_id):
    env = gym.make(env_id, split="eval")
    finals = run_protocol(env, BasePolicy(env_id), EVAL_SEEDS, EVAL_ROLLOUTS)
    assert len(finals) == 180
    summary = summarize(finals)
    assert summary["G"] == pytest.approx(BASE_G[env_id], abs=CALIBRATION_TOLERANCE)
    assert summary["events"]["CheckBeforeSubmit"]["fired"] == 0.0  # Base never checks
