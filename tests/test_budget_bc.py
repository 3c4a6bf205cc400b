"""BC-Budget (``baselines.budget_bc``): hindsight cost-to-go and target G, one model for every budget."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import require

require("torch")

from baselines.budget_bc import BudgetBCConfig, best_reachable, conditioned, fit
from harness_gym.core.state import LAYOUTS, TOKENS_SCALE

WIDTH = len(LAYOUTS["v2"])
SPENT = LAYOUTS["v2"].index("tokens_spent")
COSTLY, CHEAP, SUBMIT = 2, 3, 6
"""One start state, two ways through: COSTLY spends 2,000 tokens for G 1, CHEAP 200 for G 0.5."""
TOKENS = {COSTLY: 2000, CHEAP: 200}
G = {COSTLY: 1.0, CHEAP: 0.5}


def episode(first: int, width: int = WIDTH, tokens: bool = True) -> SimpleNamespace:
    """``first``, then SUBMIT (no call); the observation shows the tokens spent, as MDP v2's does."""
    obs = np.zeros((3, width), dtype=np.float32)
    if width == WIDTH:
        obs[1:, SPENT] = TOKENS[first] / TOKENS_SCALE
    masks = np.zeros((3, 7), dtype=bool)
    masks[0, [COSTLY, CHEAP]] = masks[1, SUBMIT] = True
    infos = {"action_mask": masks, "G": np.array([np.nan, np.nan, G[first]])}
    if tokens:  # row k: action k's call (its prompt and completion tokens); -1: no call
        infos |= {"llm_prompt_tokens": np.array([TOKENS[first] - 50, -1, -1]),
                  "llm_completion_tokens": np.array([50, -1, -1])}  # fmt: skip
    return SimpleNamespace(observations=obs, actions=np.array([first, SUBMIT]), infos=infos)


BUFFER = [episode(COSTLY), episode(CHEAP)] * 32


def test_each_action_is_labelled_with_what_its_episode_went_on_to_spend_and_score():
    data = conditioned([episode(COSTLY), episode(CHEAP)])
    assert data.cost_to_go.tolist() == [2000, 0, 200, 0]  # step 0's own call included; SUBMIT spends none
    assert data.g_target.tolist() == [1.0, 1.0, 0.5, 0.5]
    assert data.totals.tolist() == [2000, 200] and data.returns.tolist() == [1.0, 0.5]
    assert data.actions.tolist() == [COSTLY, SUBMIT, CHEAP, SUBMIT]


def test_the_target_is_the_best_g_the_buffer_reaches_within_the_budget():
    totals, returns = np.array([2000.0, 200.0, 900.0]), np.array([1.0, 0.5, 0.3])
    assert best_reachable(totals, returns, 2500) == 1.0
    assert best_reachable(totals, returns, 1000) == 0.5
    assert best_reachable(totals, returns, 100) == 0.5  # none fits: the cheapest episode's G


def test_one_model_plays_the_costly_way_with_a_large_budget_and_the_cheap_way_with_a_small_one():
    """Decision: the budget is an input, not a training setting: one run, then any budget."""
    model = fit(conditioned(BUFFER), BudgetBCConfig(n_steps=300, batch_size=32), seed=0)
    start, mask = np.zeros(WIDTH, dtype=np.float32), np.zeros(7)
    mask[[COSTLY, CHEAP]] = 1
    assert model.budget == pytest.approx(1100)  # default: the buffer's mean tokens per episode
    assert model.with_budget(3000).act(start, mask) == COSTLY
    assert model.with_budget(500).act(start, mask) == CHEAP
    assert model.with_budget(100).act(start, mask) == CHEAP
    after = start.copy()
    after[SPENT] = TOKENS[COSTLY] / TOKENS_SCALE
    only_submit = np.eye(7)[SUBMIT]
    assert model.with_budget(3000).act(after, only_submit) == SUBMIT  # never an illegal action


def test_the_same_seed_trains_the_same_model():
    runs = [fit(conditioned(BUFFER), BudgetBCConfig(n_steps=20, batch_size=16), seed=3) for _ in range(2)]
    assert runs[0].fingerprint() == runs[1].fingerprint()
    assert runs[0].fingerprint() != runs[0].with_budget(5).fingerprint()


def test_what_it_cannot_use_is_refused_by_name():
    with pytest.raises(ValueError, match=r"MDP v2's observation .* has 31"):
        conditioned([episode(COSTLY, width=31)])
    with pytest.raises(ValueError, match="no per-step token counts"):
        conditioned([episode(COSTLY, tokens=False)])
    with pytest.raises(ValueError, match="at least one episode"):
        conditioned([])
    model = fit(conditioned(BUFFER), BudgetBCConfig(n_steps=2, batch_size=4), seed=0)
    with pytest.raises(ValueError, match="budget must be"):
        model.with_budget(-1)
    with pytest.raises(ValueError, match="plays MDP v2 observations"):
        model.act(np.zeros(31), np.ones(7))


def test_it_trains_through_the_registry_on_a_v2_collection_and_acts_legally(tmp_path):
    require("minari")
    import gymnasium as gym
    import minari

    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.evaluation.rollout import run_episode
    from harness_gym.policies.algorithms import TrainingData, get

    config = CollectConfig(
        "HarnessPlanning-v0", "mixed", 8, "harness/planning/budget-v0", root=str(tmp_path),
        show_progress=False, obs_layout="v2",
    )  # fmt: skip
    dataset = minari.load_dataset(collect(config).path)
    trained = get("bc-budget").train(TrainingData("HarnessPlanning-v0", dataset, None), seed=0, n_steps=20)
    assert trained.model.budget == pytest.approx(conditioned(dataset).totals.mean())
    limited = TrainingData("HarnessPlanning-v0", dataset, None, token_limit=700)
    assert get("bc-budget").train(limited, seed=0, n_steps=2).model.budget == 700  # the caller's limit
    env = gym.make("HarnessPlanning-v0", split="eval", obs_layout="v2", strict=True)  # illegal: raises
    for seed in range(3):
        assert run_episode(env, trained.policies["greedy"], seed=seed)["G"] >= 0
