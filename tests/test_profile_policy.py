"""The state-dependent profile policy checks only when P(correct draft) is low; the loop always checks."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the ids)
from harness_gym.envs.registry import executor_profile
from harness_gym.evaluation.rollout import run_episode
from harness_gym.executors.profiles import DraftParams, Mechanism
from harness_gym.policies.profile import CheckReviseLoopPolicy, ProfilePolicy
from harness_gym.policies.scripted import Policy

ENV = "HarnessPlanning-v0"


def _profile(p_correct: float, **mechanism):
    default = executor_profile("default")
    planning = default.domain("planning")
    draft = DraftParams(
        dict.fromkeys(("easy", "standard", "hard"), p_correct), 0.0, planning.draft.flaw_weights
    )
    return default.with_domain("planning", replace(planning, draft=draft, mechanism=Mechanism(**mechanism)))


def _actions(policy, profile, seeds=range(6)) -> list[list[str]]:
    env = gym.make(ENV, split="train", executor_profile=profile)
    return [[s["action"] for s in run_episode(env, policy, seed=s)["trajectory"]["steps"]] for s in seeds]


def test_checks_only_when_a_correct_draft_is_unlikely():
    sure = _profile(0.95)
    for actions in _actions(ProfilePolicy(ENV, sure), sure):
        assert "CHECK" not in actions and actions[-1] == "SUBMIT"
    unsure = _profile(0.05)
    runs = _actions(ProfilePolicy(ENV, unsure), unsure)
    assert all("CHECK" in actions for actions in runs)
    assert any("REVISE" in actions for actions in runs)


def test_does_not_revise_when_a_revision_is_expected_to_hurt():
    hopeless = _profile(
        0.4, p_fix={"localised": 0.01, "verdict": 0.01, "none": 0.01}, p_fix_form=0.01, p_break=0.9
    )
    for actions in _actions(ProfilePolicy(ENV, hopeless), hopeless):
        assert "REVISE" not in actions


def test_loop_revises_while_the_last_check_failed():
    weak = _profile(0.0, p_fix={"localised": 0.0, "verdict": 0.0, "none": 0.0}, p_fix_form=0.0)
    for actions in _actions(CheckReviseLoopPolicy(ENV), weak):
        assert actions[:3] == ["OBSERVE", "DRAFT", "CHECK"]
        assert actions[3::2] == ["REVISE"] * len(actions[3::2])  # never fixed: revises until the budget


def test_policy_protocol_and_legal_one_hot_probabilities():
    env = gym.make(ENV, split="train")
    for policy in (ProfilePolicy(ENV), CheckReviseLoopPolicy(ENV)):
        assert isinstance(policy, Policy)
        obs, info = env.reset(seed=0)
        for _ in range(12):
            probs = policy.action_probs(obs, info["action_mask"])
            assert probs.sum() == 1.0 and info["action_mask"][int(np.argmax(probs))]
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info["action_mask"], None))
            if terminated or truncated:
                break
