"""The token price: rewards charged ``-λ * tokens / 1000`` per step, G at the end; price 0 is the paper's
protocol exactly; relabelling a dataset at a price equals collecting at it."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import require

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


# -- relabelling -----------------------------------------------------------------------------------
@pytest.mark.usefixtures("loopback_llm_env")
def test_relabelling_at_a_price_equals_collecting_at_it(tmp_path):
    """A chat-LLM dataset (per-step tokens stored) collected at price 0, relabelled at λ, has the rewards
    of the same collection made at λ, episode for episode and bit for bit; both keep the same G."""
    require("minari")
    import minari
    from test_llm_executor import ChatServer, planning_replies

    from harness_gym.datasets import relabel
    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.executors import OpenAIConfig

    price = 0.4
    server = ChatServer(planning_replies, usage={"prompt_tokens": 700, "completion_tokens": 90})
    try:
        executor = OpenAIConfig(model="m", base_url=server.base_url, cache=str(tmp_path / "cache.sqlite"))

        def dataset(dataset_id: str, token_price: float):
            config = CollectConfig(
                PLANNING,
                "mixed",
                8,
                dataset_id,
                split="eval",
                executor=executor,
                token_price=token_price,
                root=str(tmp_path / "datasets"),
                show_progress=False,
            )
            return minari.load_dataset(collect(config).path)

        free, priced = dataset("harness/planning/free-v0", 0.0), dataset("harness/planning/priced-v0", price)
    finally:
        server.close()
    assert priced.spec.env_spec.kwargs["token_price"] == price
    assert "token_price" not in free.spec.env_spec.kwargs
    charged = 0
    for ours, theirs, want in zip(
        relabel(free, price), free.iterate_episodes(), priced.iterate_episodes(), strict=True
    ):
        np.testing.assert_array_equal(theirs.actions, want.actions)
        assert ours.tobytes() == want.rewards.tobytes()
        np.testing.assert_array_equal(relabel([want], 0.0)[0], theirs.rewards)  # and back to price 0
        charged += int((want.rewards < 0).sum())
    assert charged > 0


def test_relabelling_a_simulated_v2_dataset_equals_collecting_at_the_price(tmp_path):
    """A simulated MDP v2 collection stores per-step tokens: relabelled at λ it has the rewards of the
    same collection made at λ, bit for bit."""
    require("minari")
    import minari

    from harness_gym.datasets import relabel
    from harness_gym.datasets.collect import CollectConfig, collect

    def dataset(dataset_id: str, token_price: float):
        config = CollectConfig(
            "HarnessMultiTool-v0",
            "mixed",
            6,
            dataset_id,
            token_price=token_price,
            obs_layout="v2",
            root=str(tmp_path),
            show_progress=False,
        )
        return minari.load_dataset(collect(config).path)

    price = 0.05
    free, priced = dataset("harness/multi_tool/free-v0", 0.0), dataset("harness/multi_tool/priced-v0", price)
    for ours, theirs, want in zip(
        relabel(free, price), free.iterate_episodes(), priced.iterate_episodes(), strict=True
    ):
        np.testing.assert_array_equal(theirs.actions, want.actions)
        assert ours.tobytes() == want.rewards.tobytes()
        prompt, completion = (
            np.maximum(theirs.infos[f"llm_{k}_tokens"][:-1], 0) for k in ("prompt", "completion")
        )
        tokens = prompt + completion
        assert (tokens > 0).any() and theirs.infos["llm_prompt_tokens"][-1] == -1
        assert want.rewards[-1] == pytest.approx(want.infos["G"][-1] - price * tokens[-1] / 1000)


def test_a_dataset_without_tokens_is_refused_by_name(tmp_path):
    """Simulated layout-v1 datasets (the published tiers) store no per-step tokens: a relabel says which
    arrays it needs."""
    require("minari")
    import minari

    from harness_gym.datasets import relabel
    from harness_gym.datasets.collect import CollectConfig, collect

    config = CollectConfig(
        PLANNING, "base", 2, "harness/planning/sim-v0", root=str(tmp_path), show_progress=False
    )
    dataset = minari.load_dataset(collect(config).path)
    with pytest.raises(ValueError, match="infos/llm_prompt_tokens, infos/llm_completion_tokens"):
        relabel(dataset, 0.1)


def test_the_command_line_price_reaches_the_collection(tmp_path):
    """``collect --token-price`` charges the steps and records the price; a bad price is one line."""
    require("minari")
    import minari

    from harness_gym.cli.main import main

    args = ["collect", "--env", PLANNING, "--policy", "base", "--episodes", "2", "--root", str(tmp_path)]
    assert main([*args, "--dataset-id", "harness/planning/p-v0", "--quiet", "--token-price", "0.2"]) == 0
    dataset = minari.load_dataset(str(tmp_path / "harness/planning/p-v0"))
    assert dataset.spec.env_spec.kwargs["token_price"] == 0.2
    for episode in dataset.iterate_episodes():
        assert (episode.rewards[:-1] <= 0).all() and (episode.rewards[:-1] < 0).any()
    with pytest.raises(SystemExit, match="token_price must be a finite number >= 0"):
        main([*args, "--dataset-id", "harness/planning/q-v0", "--quiet", "--token-price", "-1"])


def test_the_bench_and_the_evaluation_pass_the_price_on():
    """A bench's every environment gets the price (none at 0); the price changes rewards, never the
    episodes, so an evaluation's G is the same at any price; a bad price stops the bench at once."""
    from harness_gym.bench.runner import BenchConfig, run
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.policies.scripted import ForcedCheckPolicy

    assert BenchConfig(token_price=0.2).env_kwargs()["token_price"] == 0.2
    assert "token_price" not in BenchConfig().env_kwargs()
    with pytest.raises(ValueError, match="token_price must be a finite number >= 0"):
        run(BenchConfig(token_price=-0.5, settings=(PLANNING,)))

    def g(price: float) -> list[float]:
        policy = ForcedCheckPolicy(PLANNING)
        return [r.G for r in evaluate(policy, PLANNING, seeds=(0,), rollouts=1, token_price=price)]

    assert g(0.3) == g(0.0)
