"""Importance-sampling OPE on tiny MDPs whose true values are known."""

import numpy as np
import pytest

from harness_gym.bench.ope import OPEEpisode, effective_sample_size, estimate


def _bandit(n: int = 4000, seed: int = 0) -> list[tuple[int, float]]:
    """Behaviour: action 0 w.p. 0.25 (reward 1), action 1 w.p. 0.75 (reward 0.2)."""
    rng = np.random.default_rng(seed)
    return [(0, 1.0) if rng.random() < 0.25 else (1, 0.2) for _ in range(n)]


def _episodes(pi0: float, with_model: bool = False) -> list[OPEEpisode]:
    mu = {0: 0.25, 1: 0.75}
    pi = {0: pi0, 1: 1.0 - pi0}
    q = {0: 1.0, 1: 0.2}
    v = pi0 * 1.0 + (1 - pi0) * 0.2
    return [
        OPEEpisode(
            target_prob=np.array([pi[a]]),
            behavior_logp=np.log([mu[a]]),
            rewards=np.array([r]),
            q_hat=np.array([q[a]]) if with_model else None,
            v_hat=np.array([v]) if with_model else None,
        )
        for a, r in _bandit()
    ]


@pytest.mark.parametrize("pi0", [1.0, 0.6, 0.1])
def test_estimators_recover_the_true_value(pi0: float) -> None:
    true = pi0 * 1.0 + (1 - pi0) * 0.2
    episodes = _episodes(pi0, with_model=True)
    for estimator in ("is", "wis", "pdis"):
        assert estimate(episodes, estimator) == pytest.approx(true, abs=0.05), estimator
    # an exact model makes DR exact on every sample, whatever the ratios
    assert estimate(episodes, "dr") == pytest.approx(true, abs=1e-9)


def test_wis_is_exact_for_a_greedy_policy_and_ess_counts_agreeing_episodes() -> None:
    episodes = _episodes(1.0)
    assert estimate(episodes, "wis") == pytest.approx(1.0)
    agreeing = sum(ep.target_prob[0] > 0 for ep in episodes)
    assert effective_sample_size(episodes) == pytest.approx(agreeing)


def test_pdis_differs_from_is_with_intermediate_rewards() -> None:
    # two steps, a reward after each; the target never takes the logged second action
    ep = OPEEpisode(np.array([1.0, 0.0]), np.log([0.5, 0.5]), np.array([1.0, 1.0]))
    assert estimate([ep], "is") == 0.0
    assert estimate([ep], "pdis") == pytest.approx(2.0)  # the first reward keeps its ratio 2


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="estimator"):
        estimate(_episodes(0.5)[:2], "fqe")
    with pytest.raises(ValueError, match="shape"):
        OPEEpisode(np.ones(2), np.zeros(3), np.ones(2))
    with pytest.raises(ValueError, match="dr needs"):
        estimate(_episodes(0.5)[:2], "dr")


def test_padded_episodes_of_different_lengths_match_the_per_episode_formulas() -> None:
    """The estimators run on padded arrays; each must equal its textbook per-episode sum."""
    rng = np.random.default_rng(1)
    episodes = []
    for length in rng.integers(1, 6, size=40):
        episodes.append(
            OPEEpisode(
                target_prob=rng.random(length),
                behavior_logp=np.log(rng.uniform(0.2, 1.0, length)),
                rewards=rng.random(length),
                q_hat=rng.random(length),
                v_hat=rng.random(length),
            )
        )
    gamma = 0.9
    per_episode = {"is": [], "pdis": [], "dr": []}
    weights = []
    for ep in episodes:
        w = ep.cumulative_ratios()
        d = gamma ** np.arange(len(w))
        weights.append(w[-1])
        per_episode["is"].append(w[-1] * np.sum(d * ep.rewards))
        per_episode["pdis"].append(np.sum(d * w * ep.rewards))
        w_prev = np.concatenate([[1.0], w[:-1]])
        per_episode["dr"].append(np.sum(d * (w * ep.rewards - w * ep.q_hat + w_prev * ep.v_hat)))
    returns = [np.sum(gamma ** np.arange(len(ep.rewards)) * ep.rewards) for ep in episodes]
    for name in ("is", "pdis", "dr"):
        assert estimate(episodes, name, gamma) == pytest.approx(np.mean(per_episode[name]), rel=1e-12), name
    assert estimate(episodes, "wis", gamma) == pytest.approx(np.dot(weights, returns) / np.sum(weights))
    assert effective_sample_size(episodes) == pytest.approx(np.sum(weights) ** 2 / np.sum(np.square(weights)))


def test_wis_is_undefined_when_no_episode_follows_the_target() -> None:
    ep = OPEEpisode(np.array([0.0]), np.log([0.5]), np.array([1.0]))
    assert np.isnan(estimate([ep], "wis")) and effective_sample_size([ep]) == 0.0
