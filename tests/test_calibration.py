"""Calibration: the Base harness reproduces the paper's Base G on the eval split (protocol size)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.evaluation.paper import BASE_G, CALIBRATION_TOLERANCE, EVAL_ROLLOUTS, EVAL_SEEDS, PAPER
from harness_gym.evaluation.rollout import run_protocol, summarize
from harness_gym.policies.scripted import BasePolicy


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_base_harness_matches_the_paper(env_id):
    env = gym.make(env_id, split="eval")
    finals = run_protocol(env, BasePolicy(env_id), EVAL_SEEDS, EVAL_ROLLOUTS)
    assert len(finals) == 180
    summary = summarize(finals)
    assert summary["G"] == pytest.approx(BASE_G[env_id], abs=CALIBRATION_TOLERANCE)
    assert summary["events"]["CheckBeforeSubmit"]["fired"] == 0.0  # Base never checks


EVENT_TOLERANCE = 0.05
FITTED_EVENTS = [
    ("HarnessPlanning-v0", "EarlySubmit"),
    ("HarnessMultiTool-v0", "ValidToolUse"),
    ("HarnessMultiTool-v0", "EarlySubmit"),
]
"""Base event rates of the paper's Table 7 that the first-draft parameters were fitted to (the others
are reported, not fitted: see the README section on the simulated executor). Coding's TestBeforeSubmit
(paper 76.7%) is not among them: it cannot be reached together with coding's Base G once unsafe code
earns no test credit (``harness_gym.domains.coding.DRAFT_PARAMS``)."""


@pytest.mark.parametrize(("env_id", "event"), FITTED_EVENTS)
def test_base_event_rates_match_the_paper(env_id, event):
    env = gym.make(env_id, split="eval")
    summary = summarize(run_protocol(env, BasePolicy(env_id), EVAL_SEEDS, EVAL_ROLLOUTS))
    paper_base_rate = PAPER[env_id].events[event][0]
    assert summary["events"][event]["fired"] == pytest.approx(paper_base_rate, abs=EVENT_TOLERANCE)
