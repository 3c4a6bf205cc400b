"""FQE and the estimators built on it, on a tiny offline MDP whose true values are known.

The task (observation: at s0, at s1, done, bias):

- s0, legal {DRAFT, SUBMIT}: SUBMIT ends with G = 0; DRAFT moves to s1.
- s1, legal {CHECK, SUBMIT}: CHECK ends with G = 1 three times in four, else G = 0; SUBMIT ends with
  G = 0.5.

The behaviour drafts with probability 0.7 and, at s1, checks with probability 0.4; the buffer holds
the exact expected proportions, so the true value of a target policy is also the buffer's own answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from conftest import require

from harness_gym.core.actions import N_ACTIONS, Action

require("d3rlpy")

from harness_gym.bench.fqe import FQEData, FQESchedule, fit_fqe
from harness_gym.bench.ope import LoggedBuffer, off_policy_values
from harness_gym.datasets.d3rlpy_bridge import episodes_to_d3rlpy

S0 = np.array([1, 0, 0, 1], dtype=np.float32)
S1 = np.array([0, 1, 0, 1], dtype=np.float32)
DONE = np.array([0, 0, 1, 1], dtype=np.float32)
MU = {(0, Action.DRAFT): 0.7, (0, Action.SUBMIT): 0.3, (1, Action.CHECK): 0.4, (1, Action.SUBMIT): 0.6}


def _mask(*actions: Action) -> np.ndarray:
    m = np.zeros(N_ACTIONS, dtype=np.int8)
    m[list(actions)] = 1
    return m


MASKS = (_mask(Action.DRAFT, Action.SUBMIT), _mask(Action.CHECK, Action.SUBMIT), _mask(Action.SUBMIT))


@dataclass
class _Episode:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]


def _episode(actions: list[Action], g: float) -> _Episode:
    t = len(actions)
    obs = [*[S0, S1][:t], DONE]
    rewards = np.zeros(t)
    rewards[-1] = g
    logp = [np.log(MU[(k, a)]) for k, a in enumerate(actions)]
    return _Episode(
        observations=np.stack(obs),
        actions=np.array([int(a) for a in actions], dtype=np.int64),
        rewards=rewards,
        terminations=np.arange(t) == t - 1,
        truncations=np.zeros(t, dtype=bool),
        infos={
            "action_mask": np.stack([*MASKS[:t], MASKS[2]]),
            "behavior_logp": np.array([*logp, np.nan]),
            "task_index": np.zeros(t + 1, dtype=np.int64),
        },
    )


def _buffer() -> LoggedBuffer:
    """100 episodes in the behaviour's exact proportions: 30 submit at once, 42 draft and submit,
    28 draft and check (21 of them pass)."""
    episodes = [_episode([Action.SUBMIT], 0.0) for _ in range(30)]
    episodes += [_episode([Action.DRAFT, Action.SUBMIT], 0.5) for _ in range(42)]
    episodes += [_episode([Action.DRAFT, Action.CHECK], float(i % 4 != 0)) for i in range(28)]
    return LoggedBuffer.from_offline(episodes_to_d3rlpy(episodes))


class _Fixed:
    """A target policy: P(DRAFT) at s0 and P(CHECK) at s1."""

    def __init__(self, draft: float, check: float) -> None:
        self.draft, self.check = draft, check

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        p = np.zeros(N_ACTIONS)
        if obs[0]:
            p[Action.DRAFT], p[Action.SUBMIT] = self.draft, 1 - self.draft
        else:
            p[Action.CHECK], p[Action.SUBMIT] = self.check, 1 - self.check
        return p

    def true_value(self) -> float:
        return self.draft * (self.check * 0.75 + (1 - self.check) * 0.5)


TARGETS = [_Fixed(1.0, 1.0), _Fixed(0.8, 0.5), _Fixed(0.0, 0.0), _Fixed(0.5, 0.2)]


def test_the_model_is_the_buffers_empirical_mdp() -> None:
    buffer = _buffer()
    data = FQEData.from_rows(
        buffer.row_state,
        buffer.observations,
        buffer.masks,
        buffer.actions,
        buffer.rewards,
        buffer.episode_lengths,
    )
    s0, s1 = (int(np.flatnonzero((buffer.observations == s).all(axis=1))[0]) for s in (S0, S1))
    n = buffer.actions.size  # 30 + 2 * 70 steps
    assert n == 170
    assert data.weight[s0, Action.DRAFT] == pytest.approx(70 / n)
    assert data.weight[s1, Action.CHECK] == pytest.approx(28 / n)
    assert data.weight.sum() == pytest.approx(1.0)
    assert data.reward[s1, Action.CHECK] == pytest.approx(0.75)
    assert data.reward[s1, Action.SUBMIT] == pytest.approx(0.5)
    assert data.transition[s0, Action.DRAFT, s1] == pytest.approx(1.0)
    assert data.transition[s1].sum() == 0.0  # every step from s1 ends the episode


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"draft{t.draft}-check{t.check}")
def test_fqe_and_dr_recover_the_true_value(target: _Fixed) -> None:
    buffer = _buffer()
    [values] = off_policy_values([target], buffer, seeds=[0])
    true = target.true_value()
    assert values["fqe"] == pytest.approx(true, abs=0.02)
    assert values["dr"] == pytest.approx(true, abs=0.02)
    # the buffer holds the behaviour's exact proportions: the ratio estimators are exact too
    for name in ("is", "wis", "pdis"):
        assert values[name] == pytest.approx(true, abs=1e-9), name
    assert values["own_q"] is None  # the target has no Q-function of its own


def test_fqe_distinguishes_actions_by_their_returns() -> None:
    """SUBMIT at s0 pays 0; drafting, then checking 30% of the time, pays 0.3 * 0.75 + 0.7 * 0.5."""
    buffer = _buffer()
    data = FQEData.from_rows(
        buffer.row_state,
        buffer.observations,
        buffer.masks,
        buffer.actions,
        buffer.rewards,
        buffer.episode_lengths,
    )
    probs = np.stack([buffer.probs(_Fixed(0.6, 0.3))])
    q = fit_fqe(data, probs, seeds=[0])[0]
    s0 = int(np.flatnonzero((buffer.observations == S0).all(axis=1))[0])
    assert q[s0, Action.DRAFT] == pytest.approx(0.575, abs=0.02)
    assert q[s0, Action.SUBMIT] == pytest.approx(0.0, abs=0.02)


def test_each_policy_gets_its_own_network() -> None:
    """Fitting policies together gives each the result it gets alone (same seed)."""
    buffer = _buffer()
    data = FQEData.from_rows(
        buffer.row_state,
        buffer.observations,
        buffer.masks,
        buffer.actions,
        buffer.rewards,
        buffer.episode_lengths,
    )
    probs = np.stack([buffer.probs(t) for t in TARGETS[:2]])
    together = fit_fqe(data, probs, seeds=[3, 4])
    alone = fit_fqe(data, probs[1:], seeds=[4])
    np.testing.assert_allclose(together[1], alone[0], atol=1e-5)
    assert not np.allclose(together[0], together[1], atol=1e-3)


def test_too_few_backups_leave_the_start_state_short() -> None:
    """One backup reaches only the last step: the start-state value stays near the initial network's."""
    buffer = _buffer()
    target = _Fixed(1.0, 1.0)
    short = off_policy_values([target], buffer, [0], FQESchedule(iterations=1))[0]["fqe"]
    assert abs(short - target.true_value()) > 0.1


def test_bad_input() -> None:
    buffer = _buffer()
    data = FQEData.from_rows(
        buffer.row_state,
        buffer.observations,
        buffer.masks,
        buffer.actions,
        buffer.rewards,
        buffer.episode_lengths,
    )
    with pytest.raises(ValueError, match="one seed per policy"):
        fit_fqe(data, np.stack([buffer.probs(TARGETS[0])]), seeds=[0, 1])
    with pytest.raises(ValueError, match="episode lengths"):
        FQEData.from_rows(
            buffer.row_state, buffer.observations, buffer.masks, buffer.actions, buffer.rewards, np.array([3])
        )
    with pytest.raises(ValueError, match="one seed per policy"):
        off_policy_values(TARGETS, buffer, seeds=[0])
