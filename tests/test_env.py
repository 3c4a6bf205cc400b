"""The environment contract (DESIGN §3) for every registered id."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import harness_gym
from harness_gym import FEATURES, Action, InvalidActionError
from harness_gym.evaluation.rollout import run_episode
from harness_gym.policies.scripted import BasePolicy, RandomPolicy

ENV_IDS = harness_gym.ENV_IDS
FINAL_KEYS = {"G", "rubric", "hms", "hms_norm", "termination_reason", "cost", "usage", "trajectory"}


@pytest.fixture(params=ENV_IDS)
def env_id(request) -> str:
    return request.param


def test_check_env_passes(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_spaces_and_feature_layout(env_id):
    env = gym.make(env_id)
    assert env.action_space == gym.spaces.Discrete(7)
    assert env.observation_space.shape == (len(FEATURES),)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (7,)
    assert np.array_equal(env.unwrapped.action_masks(), info["action_mask"].astype(bool))
    domain_feature = f"domain_{env.unwrapped.domain.name}"
    assert obs[FEATURES.index(domain_feature)] == 1.0


def _trajectory(env_id: str, policy, seed: int) -> tuple[list, dict]:
    env = gym.make(env_id)
    final = run_episode(env, policy, seed=seed)
    return final["trajectory"]["steps"], final


@pytest.mark.parametrize("policy", [BasePolicy, RandomPolicy], ids=["base", "random"])
def test_same_seed_same_episode(env_id, policy):
    make = (lambda: policy(env_id)) if policy is BasePolicy else policy
    for seed in (0, 1, 7):
        steps_a, final_a = _trajectory(env_id, make(), seed)
        steps_b, final_b = _trajectory(env_id, make(), seed)
        assert steps_a == steps_b
        assert final_a["G"] == final_b["G"] and final_a["rubric"] == final_b["rubric"]


def test_different_seeds_vary(env_id):
    gs = {_trajectory(env_id, RandomPolicy(), seed)[1]["trajectory"]["task_id"] for seed in range(12)}
    assert len(gs) > 1


def test_final_info_and_rewards(env_id):
    env = gym.make(env_id, render_mode="ansi")
    for seed in range(6):
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            assert info["action_mask"][Action.SUBMIT] == 1
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            assert 0.0 <= reward <= 1.0
            if not done:
                assert reward == 0.0
        assert set(info) >= FINAL_KEYS
        assert reward == info["G"]
        assert info["termination_reason"] == ("submit" if terminated else "budget")
        json.dumps(info["trajectory"])  # JSON-serialisable
        assert set(info["hms"]) == set(harness_gym.core.hms.EVENTS)
        text = env.render()
        assert isinstance(text, str) and f"G={info['G']:.3f}" in text


def test_illegal_action_is_a_counted_noop(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=3)
    illegal = [a for a in range(7) if not info["action_mask"][a]]
    assert illegal, "some action must be masked at the start"
    before = obs.copy()
    obs, reward, terminated, _truncated, info = env.step(illegal[0])
    assert info["invalid_action"] is True and not terminated and reward == 0.0
    errors = FEATURES.index("errors")
    assert obs[errors] > before[errors]
    assert obs[FEATURES.index("progress")] > before[FEATURES.index("progress")]
    assert env.unwrapped._ep.steps[-1]["valid"] is False


def test_strict_mode_raises_on_illegal_action(env_id):
    env = gym.make(env_id, strict=True)
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(InvalidActionError, match="not legal"):
        env.step(illegal)


def test_truncation_scores_the_current_draft(env_id):
    env = gym.make(env_id, max_steps=2)
    env.reset(seed=0)
    env.step(Action.DRAFT)
    _, reward, terminated, truncated, info = env.step(Action.OBSERVE)
    assert truncated and not terminated
    assert info["termination_reason"] == "budget" and reward == info["G"]
    assert info["rubric"] == env.unwrapped.domain.verdict(env.unwrapped._ep, env.unwrapped._ep.draft).rubric

    env.reset(seed=0)
    env.step(Action.OBSERVE)
    _, reward, _, truncated, info = env.step(Action.OBSERVE)  # illegal repeat, still counts
    assert truncated and reward == 0.0 and all(score == 0 for score, _ in info["rubric"].values())


def test_submit_without_draft_scores_zero(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(Action.SUBMIT)
    assert terminated and reward == 0.0 and info["termination_reason"] == "submit"


def test_step_after_end_and_before_reset_raise(env_id):
    env = gym.make(env_id).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step(Action.SUBMIT)
    env.reset(seed=0)
    env.step(Action.SUBMIT)
    with pytest.raises(RuntimeError, match="ended"):
        env.step(Action.SUBMIT)


def test_task_selection(env_id):
    env = gym.make(env_id, split="eval")
    eval_ids = [t.task_id for t in env.unwrapped.tasks]
    assert len(eval_ids) == 20
    _, info = env.reset(seed=0, options={"task_id": eval_ids[3]})
    assert info["task_id"] == eval_ids[3]
    with pytest.raises(ValueError, match="unknown task id"):
        env.reset(options={"task_id": "nope"})
    only = gym.make(env_id, split="all", task_ids=eval_ids[:2])
    seen = {only.reset(seed=s)[1]["task_id"] for s in range(10)}
    assert seen <= set(eval_ids[:2])
    with pytest.raises(ValueError, match="unknown task id"):
        gym.make(env_id, split="train", task_ids=[eval_ids[0]])


def test_bad_arguments_are_named(env_id):
    with pytest.raises(TypeError, match="colour"):
        gym.make(env_id, colour="red")
    with pytest.raises(ValueError, match="split 'test'"):
        gym.make(env_id, split="test")
    with pytest.raises(ValueError, match="render_mode"):
        gym.make(env_id, render_mode="rgb")
    with pytest.raises(ValueError, match="unknown executor 'gpt'"):
        gym.make(env_id, executor="gpt")
    with pytest.raises(TypeError, match="executor must be"):
        gym.make(env_id, executor=42)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_env_stacks_action_masks(env_id, mode):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode)
    obs, infos = envs.reset(seed=[0, 1])
    assert obs.shape == (2, len(FEATURES))
    assert infos["action_mask"].shape == (2, 7)
    for _ in range(4):
        actions = np.array([int(np.flatnonzero(m)[0]) for m in infos["action_mask"]])
        obs, _rewards, _terms, _truncs, infos = envs.step(actions)
        assert infos["action_mask"].shape == (2, 7)
        assert np.all(infos["action_mask"][:, Action.SUBMIT] == 1)
    envs.close()


def test_base_script_never_checks(env_id):
    env = gym.make(env_id, split="eval")
    policy = BasePolicy(env_id)
    for seed in range(5):
        final = run_episode(env, policy, seed=seed)
        actions = [s["action"] for s in final["trajectory"]["steps"]]
        assert "CHECK" not in actions and actions[-1] == "SUBMIT"
        assert all(s["valid"] for s in final["trajectory"]["steps"])


def test_env_docstring_documents_every_section_and_feature(env_id):
    doc = gym.make(env_id).unwrapped.__doc__
    for section in (
        "## Description",
        "## Action Space",
        "## Observation Space",
        "## Rewards",
        "## Episode End",
        "## Arguments",
    ):
        assert section in doc, section
    assert all(f"`{name}`" in doc for name in FEATURES)
