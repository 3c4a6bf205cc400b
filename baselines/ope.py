"""Off-policy evaluation from a harness-gym buffer: importance sampling estimators of a policy's value.

Every buffer row stores ``behavior_logp``, the log-probability of the logged action under the policy
that collected it, so the ratio rho_t = pi(a_t | s_t) / mu(a_t | s_t) is exact (no fitted behaviour
model). With discount ``gamma`` and per-step rewards r_t, for episodes i:

- ``is``: ordinary (trajectory) importance sampling, mean_i (prod_t rho_t) * sum_t gamma^t r_t;
- ``wis``: weighted IS, the same with the trajectory weights normalised to sum to one (biased,
  consistent, far lower variance);
- ``pdis``: per-decision IS, mean_i sum_t gamma^t (prod_{k<=t} rho_k) r_t (Precup et al. 2000). With the
  harness's terminal-only reward it equals ``is``; it differs on data with intermediate rewards;
- ``dr``: doubly robust (Jiang & Li 2016), per-decision IS with a model's Q-hat / V-hat as control
  variate: mean_i sum_t gamma^t [w_t r_t - (w_t Q(s_t, a_t) - w_{t-1} V(s_t))], with w_t the
  cumulative ratio and w_{-1} = 1. Unbiased if the ratios are right, exact if the model is.

A greedy (deterministic) target policy gives rho_t = 0 whenever the logged action differs, so IS
keeps only the episodes that agree with it at every step; ``effective_sample_size`` reports how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ESTIMATORS", "OPEEpisode", "effective_sample_size", "estimate"]

ESTIMATORS = ("is", "wis", "pdis", "dr")


@dataclass(frozen=True)
class OPEEpisode:
    """One logged episode, per step: target-policy probability of the logged action, its behaviour
    log-probability, the reward, and (for ``dr``) the model's Q(s_t, a_t) and V(s_t) under the target."""

    target_prob: np.ndarray
    behavior_logp: np.ndarray
    rewards: np.ndarray
    q_hat: np.ndarray | None = None
    v_hat: np.ndarray | None = None

    def __post_init__(self) -> None:
        t = np.asarray(self.rewards).shape
        for name in ("target_prob", "behavior_logp", "q_hat", "v_hat"):
            value = getattr(self, name)
            if value is not None and np.asarray(value).shape != t:
                raise ValueError(f"{name} has shape {np.asarray(value).shape}, rewards {t}")
        if not np.all(np.isfinite(self.behavior_logp)):
            raise ValueError("behavior_logp must be finite on every step (drop the final-observation row)")

    def cumulative_ratios(self) -> np.ndarray:
        """w_t = prod_{k<=t} pi(a_k | s_k) / mu(a_k | s_k)."""
        return np.cumprod(np.asarray(self.target_prob, dtype=np.float64) * np.exp(-self.behavior_logp))


def _discounts(n: int, gamma: float) -> np.ndarray:
    return gamma ** np.arange(n, dtype=np.float64)


def estimate(episodes: Sequence[OPEEpisode], estimator: str, gamma: float = 1.0) -> float:
    """The ``estimator`` (one of ``ESTIMATORS``) of the target policy's expected discounted return."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if not episodes:
        raise ValueError("no episodes")
    per_episode = []
    weights = []
    for ep in episodes:
        w = ep.cumulative_ratios()
        d = _discounts(w.shape[0], gamma)
        r = np.asarray(ep.rewards, dtype=np.float64)
        if estimator in ("is", "wis"):
            per_episode.append(float((d * r).sum()))
            weights.append(float(w[-1]))
        elif estimator == "pdis":
            per_episode.append(float((d * w * r).sum()))
        else:
            if ep.q_hat is None or ep.v_hat is None:
                raise ValueError("dr needs q_hat and v_hat on every episode")
            w_prev = np.concatenate([[1.0], w[:-1]])
            terms = w * r - (w * np.asarray(ep.q_hat) - w_prev * np.asarray(ep.v_hat))
            per_episode.append(float((d * terms).sum()))
    values = np.asarray(per_episode)
    if estimator == "is":
        return float(np.mean(np.asarray(weights) * values))
    if estimator == "wis":
        total = float(np.sum(weights))
        return float(np.dot(weights, values) / total) if total > 0 else float("nan")
    return float(values.mean())


def effective_sample_size(episodes: Sequence[OPEEpisode]) -> float:
    """(sum w)^2 / sum w^2 of the trajectory weights: how many episodes the IS estimate really uses."""
    w = np.array([ep.cumulative_ratios()[-1] for ep in episodes])
    denom = float((w**2).sum())
    return float(w.sum() ** 2 / denom) if denom > 0 else 0.0
