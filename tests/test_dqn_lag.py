"""DQN-Lag (``baselines.dqn_lag``): the PID multiplier follows the estimated cost, the greedy action
follows the multiplier, illegal actions are never chosen."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require

require("torch")

from baselines.dqn_lag import DQNLagConfig, PIDLagrangian, Transitions, fit

CHEAP, COSTLY = 0, 1
REWARD = {CHEAP: 0.5, COSTLY: 1.0}
COST = {CHEAP: 0.1, COSTLY: 1.0}
"""One state, two terminal actions: the cheap one pays less G for a tenth of the tokens (thousands)."""
LIMIT = 0.5
SWITCH = (REWARD[COSTLY] - REWARD[CHEAP]) / (COST[COSTLY] - COST[CHEAP])
"""The multiplier at which Q_r - lam * Q_c of the two actions tie (0.556)."""


def two_action_mdp(n: int = 128) -> Transitions:
    actions = np.array([CHEAP, COSTLY] * (n // 2))
    start = np.array([[1.0, 0.0]], dtype=np.float32)
    return Transitions(
        observations=np.repeat(start, n, axis=0),
        actions=actions,
        rewards=np.array([REWARD[a] for a in actions]),
        costs=np.array([COST[a] for a in actions]),
        next_observations=np.zeros((n, 2), dtype=np.float32),
        next_masks=np.ones((n, 2), dtype=bool),
        dones=np.ones(n, dtype=bool),
        starts=start,
        start_masks=np.ones((1, 2), dtype=bool),
    )


def test_the_multiplier_rises_above_the_limit_falls_below_and_the_action_follows():
    config = DQNLagConfig(cost_limit=LIMIT, n_steps=600, batch_size=64, kp=0.0, ki=0.05, kd=0.0)
    model = fit(two_action_mdp(), config, seed=0)
    history = model.history
    before = 0.0
    for record in history:
        if record["cost"] > LIMIT:
            assert record["multiplier"] > before
        elif record["cost"] < LIMIT:
            assert record["multiplier"] < before or record["multiplier"] == 0.0
        before = record["multiplier"]
    late = history[300:]  # the critics have fitted: Q_r ~ (0.5, 1.0), Q_c ~ (0.1, 1.0)
    actions = [record["action"] for record in late]
    assert COSTLY in actions and CHEAP in actions  # the multiplier drives the policy across the limit
    lams = [record["multiplier"] for record in history[299:-1]]  # the multiplier each action was chosen at
    for lam, record in zip(lams, late, strict=True):
        if record["action"] == COSTLY:
            assert record["cost"] > LIMIT and lam < SWITCH + 0.05
        else:
            assert record["cost"] < LIMIT and lam > SWITCH - 0.05
    scores = model.scores(np.array([1.0, 0.0]))
    assert model.act(np.array([1.0, 0.0]), np.array([1, 1])) == int(np.argmax(scores))


def test_a_loose_limit_keeps_the_multiplier_at_zero_and_the_costly_action():
    model = fit(two_action_mdp(), DQNLagConfig(cost_limit=2.0, n_steps=300, batch_size=64), seed=1)
    assert model.multiplier == 0.0
    assert model.act(np.array([1.0, 0.0]), np.array([1, 1])) == COSTLY
    assert model.act(np.array([1.0, 0.0]), np.array([1, 0])) == CHEAP  # illegal actions are masked


def test_the_pid_controller_is_osrls():
    pid = PIDLagrangian(kp=0.1, ki=0.003, kd=0.001, limit=1.0)
    assert pid.update(3.0) == pytest.approx(0.1 * 2 + 0.003 * 2 + 0.001 * 2)
    assert pid.update(2.0) == pytest.approx(0.1 * 1 + 0.003 * 3)  # a falling error adds no derivative
    assert pid.update(0.0) == pytest.approx(0.003 * 2)  # below the limit: only the integral, shrinking
    assert pid.update(-5.0) == 0.0  # the integral and the multiplier stay >= 0


def test_a_dataset_without_tokens_is_refused(tmp_path):
    require("minari")
    import minari

    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.policies.algorithms import TrainingData, get

    config = CollectConfig(
        "HarnessPlanning-v0", "base", 2, "harness/planning/s-v0", root=str(tmp_path), show_progress=False
    )
    dataset = minari.load_dataset(collect(config).path)
    with pytest.raises(ValueError, match="no per-step token counts"):
        get("dqn-lag").train(TrainingData("HarnessPlanning-v0", dataset, None), seed=0, n_steps=2)


@pytest.mark.usefixtures("loopback_llm_env")
def test_it_trains_on_a_chat_llm_buffer_and_acts_legally(tmp_path):
    """Through the registry, on a collected buffer with per-step tokens: its costs are the tokens / 1000,
    and the trained policy only ever picks legal actions."""
    require("minari")
    import gymnasium as gym
    import minari
    from test_llm_executor import ChatServer, planning_replies

    from baselines.dqn_lag import transitions
    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.executors import OpenAIConfig
    from harness_gym.policies.algorithms import TrainingData, get

    server = ChatServer(planning_replies, usage={"prompt_tokens": 700, "completion_tokens": 90})
    try:
        executor = OpenAIConfig(model="m", base_url=server.base_url, cache=str(tmp_path / "cache.sqlite"))
        config = CollectConfig(
            "HarnessPlanning-v0",
            "mixed",
            8,
            "harness/planning/lag-v0",
            split="eval",
            executor=executor,
            root=str(tmp_path),
            show_progress=False,
        )
        dataset = minari.load_dataset(collect(config).path)
    finally:
        server.close()
    data = transitions(dataset)
    assert set(np.unique(data.costs)) <= {0.0, 0.79}  # a call costs 700 + 90 tokens
    assert data.costs.max() == 0.79 and len(data.starts) == 8
    trained = get("dqn-lag").train(TrainingData("HarnessPlanning-v0", dataset, None), seed=0, n_steps=50)
    policy = trained.policies["greedy"]
    env = gym.make("HarnessPlanning-v0", split="eval")
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            action = policy.act(obs, info["action_mask"], rng)
            assert info["action_mask"][action]
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert trained.fingerprint == policy.fingerprint()


def test_the_callers_token_limit_is_the_cost_limit(monkeypatch):
    """``TrainingData.token_limit`` (tokens per episode, e.g. the priced track's threshold) becomes the
    limit in thousands; without one, ``DQNLagConfig``'s default."""
    import baselines.dqn_lag as dqn_lag
    from harness_gym.policies.algorithms import TrainingData, get

    seen = []
    monkeypatch.setattr(dqn_lag, "transitions", lambda dataset: None)
    monkeypatch.setattr(
        dqn_lag, "fit", lambda data, config, **kwargs: seen.append(config) or DQNLagModelStub()
    )
    for limit in (1500, None):
        get("dqn-lag").train(
            TrainingData("HarnessPlanning-v0", None, None, token_limit=limit), seed=0, n_steps=3
        )
    assert [(c.cost_limit, c.n_steps) for c in seen] == [(1.5, 3), (DQNLagConfig().cost_limit, 3)]


class DQNLagModelStub:
    def fingerprint(self) -> str:
        return "stub"
