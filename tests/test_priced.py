"""The token price: rewards charged ``-λ * tokens / 1000`` per step, G at the end; price 0 is the paper's
protocol exactly; relabelling a dataset at a price equals collecting at it."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym.core.actions import Action

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("episode_digests", ROOT / "benchmarks" / "episode_digests.py")
episode_digests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(episode_digests)

PLANNING = "HarnessPlanning-v0"
SCRIPT = (Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.REVISE, Action.CHECK, Action.SUBMIT)
"""A short scripted episode with two executor calls (DRAFT, REVISE) and steps without any."""


def play(env_id: str, seed: int, **kwargs) -> list[tuple]:
    """Every (observation bytes, reward, terminated, truncated, info bytes) of the scripted episode."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    out = [(obs.tobytes(), None, False, False, episode_digests.info_bytes(info))]
    for action in SCRIPT:
        if not info["action_mask"][action]:
            continue
        obs, reward, terminated, truncated, info = env.step(int(action))
        out.append((obs.tobytes(), reward, terminated, truncated, episode_digests.info_bytes(info)))
        if terminated or truncated:
            break
    env.close()
    return out


@pytest.mark.parametrize("env_id", [PLANNING, "HarnessCoding-v0"])
def test_price_zero_is_no_price_bit_for_bit(env_id):
    for seed in range(3):
        assert play(env_id, seed, token_price=0.0) == play(env_id, seed) == play(env_id, seed, token_price=0)


def test_the_return_is_g_minus_the_price_times_the_tokens():
    """Hand-computed on the scripted episode: each step pays ``λ * tokens / 1000``, the last adds G."""
    price = 0.25
    env = gym.make(PLANNING, token_price=price)
    _, info = env.reset(seed=3)
    rewards, tokens = [], []
    for action in SCRIPT:
        _, reward, terminated, truncated, info = env.step(int(action))
        rewards.append(reward)
        tokens.append(info["tokens"])
        if terminated or truncated:
            break
    assert terminated and sum(t > 0 for t in tokens) == 2  # DRAFT and REVISE called the executor
    for reward, spent in zip(rewards[:-1], tokens[:-1], strict=True):
        assert reward == -price * spent / 1000
    assert rewards[-1] == info["G"] - price * tokens[-1] / 1000
    total = sum(tokens)
    assert total == info["usage"]["prompt_tokens"] + info["usage"]["completion_tokens"]
    assert math.isclose(sum(rewards), info["G"] - price * total / 1000, abs_tol=1e-12)
    assert math.isclose(info["token_cost"], price * total / 1000)
    unpriced = gym.make(PLANNING)
    unpriced.reset(seed=3)
    for action in SCRIPT:
        *_, final = unpriced.step(int(action))
    assert final["G"] == info["G"] and "token_cost" not in final  # the price changes no G


@pytest.mark.parametrize("price", [-0.1, float("nan"), float("inf"), "1", True, None])
def test_a_bad_price_is_one_clear_error(price):
    with pytest.raises(ValueError, match="token_price must be a finite number >= 0"):
        gym.make(PLANNING, token_price=price)
