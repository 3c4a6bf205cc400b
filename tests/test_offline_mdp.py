"""Tiny offline MDPs built here: every learner, at its budget from ``baselines.budgets``, must read the
best action from the returns and must not submit where the data show that submitting pays 0.

The task (4 features: at s0, at s1, done, bias):

- s0, legal {DRAFT, SUBMIT}: SUBMIT ends with G = 0; DRAFT moves to s1.
- s1, legal {CHECK, SUBMIT}: CHECK ends with G = 1; SUBMIT ends with G = 0.5.

The behaviour takes DRAFT at s0 70% of the time and CHECK at s1 only 30% of the time, so CHECK is the
minority action: it is best only through the returns. BC is the control: it copies the majority.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from conftest import require

from harness_gym.core.actions import N_ACTIONS, Action

require("d3rlpy")

from baselines.train import train
from harness_gym.datasets.d3rlpy_bridge import episodes_to_d3rlpy, quiet_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy

S0 = np.array([1, 0, 0, 1], dtype=np.float32)
S1 = np.array([0, 1, 0, 1], dtype=np.float32)
DONE = np.array([0, 0, 1, 1], dtype=np.float32)


def _mask(*actions: Action) -> np.ndarray:
    m = np.zeros(N_ACTIONS, dtype=np.int8)
    m[list(actions)] = 1
    return m


M0 = _mask(Action.DRAFT, Action.SUBMIT)
M1 = _mask(Action.CHECK, Action.SUBMIT)
M_DONE = _mask(Action.SUBMIT)


@dataclass
class _Episode:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]


def _episode(obs: list[np.ndarray], masks: list[np.ndarray], actions: list[Action], g: float) -> _Episode:
    t = len(actions)
    rewards = np.zeros(t)
    rewards[-1] = g
    return _Episode(
        observations=np.stack(obs),
        actions=np.array([int(a) for a in actions], dtype=np.int64),
        rewards=rewards,
        terminations=np.arange(t) == t - 1,
        truncations=np.zeros(t, dtype=bool),
        infos={
            "action_mask": np.stack(masks),
            "behavior_logp": np.zeros(t + 1),
            "task_index": np.zeros(t + 1, dtype=np.int64),
        },
    )


def two_step_data(n: int = 100):
    """30% SUBMIT at s0 (G = 0); of the rest, 30% CHECK (G = 1) and 70% SUBMIT at s1 (G = 0.5)."""
    episodes = []
    for i in range(n):
        if i % 10 < 3:
            episodes.append(_episode([S0, DONE], [M0, M_DONE], [Action.SUBMIT], 0.0))
        elif i % 10 < 3 + 2:  # 2 of the 7 drafting episodes in 10 check: ~29% CHECK at s1
            episodes.append(_episode([S0, S1, DONE], [M0, M1, M_DONE], [Action.DRAFT, Action.CHECK], 1.0))
        else:
            episodes.append(_episode([S0, S1, DONE], [M0, M1, M_DONE], [Action.DRAFT, Action.SUBMIT], 0.5))
    return episodes_to_d3rlpy(episodes)


RL_ALGOS = ("awr-converged", "iql", "cql", "bcq", "dqn", "double-dqn", "sac")


@pytest.fixture(scope="module")
def policies() -> dict[str, MaskedPolicy]:
    import torch

    torch.set_num_threads(1)  # 64-unit networks: extra threads only add synchronisation
    quiet_d3rlpy()
    data = two_step_data()
    return {algo: MaskedPolicy(train(algo, data, seed=0), algo) for algo in (*RL_ALGOS, "bc-converged")}


def _greedy(policy: MaskedPolicy, obs: np.ndarray, mask: np.ndarray) -> Action:
    return Action(int(np.argmax(policy.action_probs(obs, mask))))


@pytest.mark.parametrize("algo", RL_ALGOS)
def test_recovers_the_minority_best_action(policies: dict[str, MaskedPolicy], algo: str) -> None:
    assert _greedy(policies[algo], S1, M1) is Action.CHECK


@pytest.mark.parametrize("algo", (*RL_ALGOS, "bc-converged"))
def test_does_not_submit_where_submitting_pays_zero(policies: dict[str, MaskedPolicy], algo: str) -> None:
    assert _greedy(policies[algo], S0, M0) is Action.DRAFT


def test_bc_copies_the_majority(policies: dict[str, MaskedPolicy]) -> None:
    """The control: the best action at s1 is invisible without returns."""
    assert _greedy(policies["bc-converged"], S1, M1) is Action.SUBMIT


# ---- masked SAC and BCQ: illegal actions get no probability, and their losses ignore them ----------

NEVER_LEGAL = [int(a) for a in Action if not (M0[a] or M1[a])]
"""OBSERVE, RETRIEVE, CALL_TOOL, REVISE: illegal at every state of these MDPs (no mask allows them)."""


def d3rlpy_original(algo: str) -> Any:
    """d3rlpy's own config for ``algo`` ("sac", "bcq") with every setting of ``make_config(algo)``."""
    import dataclasses

    from d3rlpy.algos import DiscreteBCQConfig, DiscreteSACConfig

    from baselines.train import make_config

    base = {"sac": DiscreteSACConfig, "bcq": DiscreteBCQConfig}[algo]
    cfg = make_config(algo)
    return base(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(base)})


def model_input(model: Any, obs: np.ndarray, mask: np.ndarray, n: int = 1) -> np.ndarray:
    """``n`` rows of what ``model`` reads: the observation, plus the mask for masked learners."""
    from harness_gym.core.state import with_mask

    x = obs[None] if not getattr(model.config, "masked", False) else with_mask(obs[None], mask[None])
    return np.repeat(x, n, axis=0)


def test_trained_sac_samples_no_illegal_action(policies: dict[str, MaskedPolicy]) -> None:
    """Fails on unmasked training: d3rlpy's DiscreteSAC, trained on the same data, samples illegal
    actions (DRAFT at s1, which its network carries over from s0) from its own policy."""
    model = policies["sac"].algo
    original = train("sac", two_step_data(), seed=0, config=d3rlpy_original("sac"))
    illegal = {}
    for obs, mask in ((S0, M0), (S1, M1)):
        legal = mask.astype(bool)
        assert legal[model.sample_action(model_input(model, obs, mask, 2000))].all()
        assert legal[model.predict(model_input(model, obs, mask))].all()
        illegal[int(np.argmax(obs))] = float(
            (~legal[original.sample_action(model_input(original, obs, mask, 2000))]).mean()
        )
    assert max(illegal.values()) > 0.2, illegal


def _final_bias(module: Any) -> Any:
    """The output layer's bias of a d3rlpy Q-function or categorical policy (one entry per action)."""
    (bias,) = [p for name, p in module.named_parameters() if name.endswith("_fc.bias")]
    return bias


def _all_transitions(learner: Any, data: Any) -> Any:
    """Every transition of the learner's training dataset as one torch minibatch."""
    from d3rlpy.dataset import BasicTransitionPicker, TransitionMiniBatch
    from d3rlpy.torch_utility import TorchMiniBatch

    ds = learner.training_dataset(data) if hasattr(learner, "training_dataset") else data.dataset
    learner.build_with_dataset(ds)
    picker = BasicTransitionPicker()
    batch = TransitionMiniBatch.from_transitions(
        [picker(e, i) for e in ds.episodes for i in range(e.transition_count)]
    )
    return TorchMiniBatch.from_batch(
        batch, gamma=1.0, compute_returns_to_go=False, device=learner.impl.device
    )


def _policy_loss_and_target(algo: str, impl: Any, batch: Any) -> tuple[Any, Any, Any]:
    """(actor or imitator loss, critic target, the policy module it trains)."""
    target = impl.compute_target(batch)
    if algo == "sac":
        return impl.compute_actor_loss(batch)["loss"], target, impl.modules.policy
    return impl.compute_loss(batch, target).imitator_loss, target, impl.modules.imitator


@pytest.mark.parametrize("algo", ("sac", "bcq"))
@pytest.mark.parametrize("masked", (True, False))
def test_losses_and_targets_ignore_illegal_actions(algo: str, masked: bool) -> None:
    """Masked: raising every always-illegal action's logit and Q-value (online and target networks) by
    100 changes neither the actor / imitator loss nor the critic target at s', and those actions' logits
    get no gradient. d3rlpy's original (``masked=False``) changes on both counts."""
    import dataclasses

    import torch

    from baselines.train import make_config

    cfg = make_config(algo) if masked else d3rlpy_original(algo)
    if algo == "sac":  # no temperature step inside the actor loss, so the two evaluations are comparable
        cfg = dataclasses.replace(cfg, temp_learning_rate=0.0)
    learner = cfg.create(device=False)
    batch = _all_transitions(learner, two_step_data(20))
    impl = learner.impl
    loss, target, policy = _policy_loss_and_target(algo, impl, batch)
    policy.zero_grad()
    loss.backward()
    grad = _final_bias(policy).grad[NEVER_LEGAL]
    with torch.no_grad():
        for module in (policy, *impl.modules.q_funcs, *impl.modules.targ_q_funcs):
            _final_bias(module)[NEVER_LEGAL] += 100.0
    shifted_loss, shifted_target, _ = _policy_loss_and_target(algo, impl, batch)
    live = batch.terminals.view(-1) == 0  # a terminal step's target is multiplied by 0
    assert live.any()
    if masked:
        assert torch.all(grad == 0.0)
        assert torch.equal(shifted_loss, loss) and torch.equal(shifted_target[live], target[live])
        assert torch.isfinite(loss) and torch.isfinite(target).all()
    else:
        assert torch.any(grad != 0.0)
        assert not torch.allclose(shifted_loss, loss)
        assert not torch.allclose(shifted_target[live], target[live])
