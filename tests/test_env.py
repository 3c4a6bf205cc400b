"""The environment contract (DESIGN §3) for every registered id."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import harness_gym
from harness_gym import FEATURES, Action, InvalidActionError
from harness_gym.envs.env import MAX_ARTIFACT_CHARS
from harness_gym.evaluation.rollout import run_episode
from harness_gym.executors.base import ExecutorRequest, ExecutorResponse
from harness_gym.policies.scripted import BasePolicy, RandomPolicy
from harness_gym.sandbox.detect import wanted

ENV_IDS = harness_gym.ENV_IDS
FINAL_KEYS = {
    "G",
    "rubric",
    "hms",
    "hms_norm",
    "termination_reason",
    "cost",
    "usage",
    "sandbox",
    "trajectory",
}


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
        assert info["sandbox"] == (wanted() if env.unwrapped.domain.runs_code else None)
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
    for keyword, value, message in [
        ("max_steps", 2.5, "max_steps must be an int or None, got 2.5"),
        ("max_steps", True, "max_steps must be an int or None, got True"),
        ("split", 1, "split must be a str"),
        ("task_ids", [1], "task_ids must be a task id, a list of task ids or None"),
        ("strict", "yes", "strict must be a bool"),
        ("hms_params", 0.3, "hms_params must be an HMSParams or a dict"),
    ]:
        with pytest.raises(TypeError, match=message):
            gym.make(env_id, **{keyword: value})
    with pytest.raises(ValueError, match=r"unknown hms_params key\(s\) \['threshold'\]"):
        gym.make(env_id, hms_params={"threshold": 0.3})
    assert gym.make(env_id, hms_params={"check_window": 5}).unwrapped.hms_params.check_window == 5


def test_step_takes_only_an_int_in_the_space_and_reset_only_known_options(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    for action in (3.0, True, np.bool_(True), np.array(1), np.array([1]), "1", None):
        with pytest.raises(TypeError, match=r"action must be an int in Discrete\(7\)"):
            env.step(action)
    with pytest.raises(ValueError, match=r"action 7 is not in Discrete\(7\)"):
        env.step(7)
    env.step(np.int64(Action.OBSERVE))
    env.step(int(Action.OBSERVE))
    with pytest.raises(TypeError, match="options must be a dict or None, got str"):
        env.reset(options="x")
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['task'\]"):
        env.reset(options={"task": "x"})
    with pytest.raises(TypeError, match=r"options\['task_id'\] must be a str"):
        env.reset(options={"task_id": 3})


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


class _Oversized:
    """Drafts one character more than an environment takes."""

    name = "oversized"

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        return ExecutorResponse(text="x" * (MAX_ARTIFACT_CHARS + 1))


def test_a_draft_over_the_size_bound_is_an_executor_error_and_scores_nothing(env_id):
    env = gym.make(env_id, executor=_Oversized())
    env.reset(seed=0)
    env.step(Action.OBSERVE)
    _, _, _, _, info = env.step(Action.DRAFT)
    step = info["trajectory"]["steps"][-1] if "trajectory" in info else env.unwrapped._ep.steps[-1]
    assert "over the bound of 65,536" in json.dumps(step)
    assert env.unwrapped._ep.draft is None
    _, reward, terminated, _, info = env.step(Action.SUBMIT)
    assert terminated and reward == info["G"]
    assert all(score == 0.0 for name, (score, _) in info["rubric"].items() if name != "cost_compliance")
