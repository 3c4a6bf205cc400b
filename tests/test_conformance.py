"""Every id works with the tools people already wrap Gymnasium environments in.

RecordEpisodeStatistics (single and vector) and SB3's Monitor own ``info["episode"]``; SB3's
``make_vec_env`` asks for ``render_mode="rgb_array"``; ``TimeLimit`` and the environment's own budget must
truncate on the same step, with the draft scored.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit
from gymnasium.wrappers.vector import RecordEpisodeStatistics as VectorRecordEpisodeStatistics

import harness_gym
from harness_gym.core.actions import Action

IDS = harness_gym.ENV_IDS


def _legal(info: dict, rng: np.random.Generator) -> int:
    """A random legal action other than SUBMIT, so episodes run into the budget."""
    legal = [a for a in np.flatnonzero(info["action_mask"]) if a != Action.SUBMIT]
    return int(rng.choice(legal)) if legal else int(Action.SUBMIT)


def _run(env: gym.Env, seed: int) -> tuple[int, float, bool, dict]:
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    steps = 0
    while True:
        _, reward, terminated, truncated, info = env.step(_legal(info, rng))
        steps += 1
        if terminated or truncated:
            return steps, float(reward), truncated, info


@pytest.mark.parametrize("env_id", IDS)
def test_registered_budget_is_the_env_budget(env_id: str) -> None:
    spec = gym.spec(env_id)
    env = gym.make(env_id)
    assert spec.max_episode_steps == env.unwrapped.max_steps == env.unwrapped.domain.max_steps
    steps, reward, truncated, info = _run(env, 0)
    assert truncated and steps == spec.max_episode_steps
    assert info["termination_reason"] == "budget" and reward == info["G"]


@pytest.mark.parametrize("env_id", IDS)
def test_max_episode_steps_sets_the_budget_and_the_draft_is_scored(env_id: str) -> None:
    env = gym.make(env_id, max_episode_steps=5)
    assert env.unwrapped.max_steps == 5 and env.spec.max_episode_steps == 5
    steps, reward, truncated, info = _run(env, 1)
    assert (steps, truncated, info["termination_reason"]) == (5, True, "budget")
    assert reward == info["G"] and len(info["trajectory"]["steps"]) == 5


@pytest.mark.parametrize("env_id", IDS)
def test_max_steps_moves_the_time_limit(env_id: str) -> None:
    env = gym.make(env_id, max_steps=15)
    assert env.spec.max_episode_steps == 15
    steps, reward, _, info = _run(env, 2)
    assert steps == 15 and info["termination_reason"] == "budget" and reward == info["G"]
    assert gym.make(env_id, max_steps=7, max_episode_steps=7).unwrapped.max_steps == 7
    with pytest.raises(ValueError, match="max_steps=7 and max_episode_steps=5 disagree"):
        gym.make(env_id, max_steps=7, max_episode_steps=5)


def test_time_limit_outside_a_longer_budget_never_cuts_before_the_score() -> None:
    env = TimeLimit(gym.make("HarnessPlanning-v0", max_episode_steps=4), max_episode_steps=10)
    steps, reward, truncated, info = _run(env, 3)
    assert (steps, truncated) == (4, True) and reward == info["G"]
    env = gym.make("HarnessPlanning-v0", max_episode_steps=-1)  # no TimeLimit: the env's own budget
    steps, _, _, info = _run(env, 3)
    assert steps == 12 and info["termination_reason"] == "budget"


@pytest.mark.parametrize("env_id", IDS)
def test_record_episode_statistics(env_id: str) -> None:
    env = RecordEpisodeStatistics(gym.make(env_id, max_episode_steps=6))
    for seed in range(2):
        steps, reward, _, info = _run(env, seed)
        assert info["episode"]["l"] == steps and info["episode"]["r"] == pytest.approx(reward)
        assert info["trajectory"]["env_id"] == env_id and len(info["trajectory"]["steps"]) == steps
    assert len(env.return_queue) == 2


@pytest.mark.parametrize("env_id", IDS)
def test_vector_record_episode_statistics(env_id: str) -> None:
    envs = VectorRecordEpisodeStatistics(gym.make_vec(env_id, num_envs=2, max_episode_steps=4))
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(8):
        actions = np.array([rng.choice([Action.OBSERVE, Action.DRAFT, Action.CHECK]) for _ in range(2)])
        _, rewards, terms, truncs, info = envs.step(actions)
        done = terms | truncs
        if done.any():
            assert info["_episode"][done].all()
            assert np.allclose(info["episode"]["r"][done], rewards[done])
            assert (info["episode"]["l"][done] == 4).all()
            assert np.isfinite(info["G"][done]).all()
            finished += int(done.sum())
    envs.close()
    assert finished >= 2


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_make_vec_env_monitor_and_check_env(env_id: str, tmp_path) -> None:
    from stable_baselines3.common.env_checker import check_env
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.monitor import Monitor

    check_env(gym.make(env_id), warn=True, skip_render_check=False)
    venv = make_vec_env(env_id, n_envs=2, seed=0, monitor_dir=str(tmp_path))
    assert venv.render_mode == "rgb_array"
    venv.reset()
    image = venv.env_method("render", indices=0)[0]
    assert image.shape == (240, 480, 3) and image.dtype == np.uint8
    monitor = Monitor(gym.make(env_id, max_episode_steps=5))
    steps, reward, _, info = _run(monitor, 4)
    # Monitor rounds the episode return to 6 decimals
    assert info["episode"]["l"] == steps == 5 and info["episode"]["r"] == pytest.approx(reward, abs=1e-6)
    assert info["trajectory"]["steps"][-1]["t"] == 5  # Monitor leaves the step records alone
    venv.close()


def test_rgb_array_draws_the_trajectory() -> None:
    env = gym.make("HarnessCoding-v0", render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"] and "ansi" in env.metadata["render_modes"]
    env.reset(seed=0)
    before = env.render()
    for action in (Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.SUBMIT):
        env.step(action)
    after = env.render()
    assert before.shape == after.shape == (240, 480, 3) and after.dtype == np.uint8
    assert (before != after).any()  # markers and the scored title were drawn
    assert (after < 250).any(axis=2).mean() > 0.02  # not a blank canvas
