"""Per-call costs: the cached prompt size is the rendered prompt's, and a token budget is kept."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from harness_gym import ENV_IDS
from harness_gym.executors.profiles import CallCosts


def _random_episodes(env, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for episode in range(n):
        _, info = env.reset(seed=seed + episode)
        done = False
        while not done:
            legal = np.flatnonzero(info["action_mask"])
            _, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
            done = terminated or truncated
        yield info


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_cached_prompt_size_is_the_rendered_prompts(env_id):
    env = gym.make(env_id, split="eval")
    executor = env.unwrapped.executor
    prompts = executor.sizer.prompts
    seen: list[tuple[int, int]] = []
    complete = executor.complete

    def spy(request, rng):
        rendered = sum(len(m["content"]) for m in prompts.messages(request))
        seen.append((executor.sizer.prompt_chars(request), rendered))
        return complete(request, rng)

    executor.complete = spy
    for _ in _random_episodes(env, 12):
        pass
    assert seen and all(sized == rendered for sized, rendered in seen), seen[:5]


def test_a_call_costs_tokens_and_time():
    costs = CallCosts()
    assert costs.latency_s(60) == pytest.approx(1.5)
    env = gym.make("HarnessTauRetail-v0", split="eval")
    env.reset(seed=0)
    _, _, _, _, info = env.step(3)  # DRAFT
    assert info["tokens"] > 0 and info["latency_s"] > costs.ttft_s
    with pytest.raises(ValueError, match="decode_tokens_per_s must be positive"):
        CallCosts(decode_tokens_per_s=0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_token_budget_is_never_exceeded(env_id):
    budget = 1500  # random episodes exceed it without the budget in every setting
    env = gym.make(env_id, split="eval", token_budget=budget)
    for info in _random_episodes(env, 12):
        usage = info["usage"]
        assert usage["prompt_tokens"] + usage["completion_tokens"] <= budget


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_call_an_action_makes_is_declared(env_id):
    """``Domain.calls`` names every action that calls the executor (so the budget can price it)."""
    env = gym.make(env_id, split="eval")
    domain = env.unwrapped.domain
    for _ in _random_episodes(env, 8):
        for step in env.unwrapped._ep.steps:
            if step.get("usage", {}).get("calls"):
                assert step["action"] in {action.name for action in domain.calls}, step["action"]


def test_once_no_call_fits_only_submit_is_legal():
    env = gym.make("HarnessKnowledgeWork-v0", split="eval", token_budget=10)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [0, 0, 0, 0, 0, 0, 1]
    with pytest.raises(ValueError, match="token_budget must be a positive integer"):
        gym.make("HarnessKnowledgeWork-v0", token_budget=0)
