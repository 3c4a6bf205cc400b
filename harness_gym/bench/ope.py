"""Off-policy evaluation from a harness-gym buffer: importance sampling estimators of a policy's value.

Every buffer row stores ``behavior_logp``, the log-probability of the logged action under the policy
that collected it, so the ratio rho_t = pi(a_t | s_t) / mu(a_t | s_t) is exact (no fitted behaviour
model). With discount ``gamma`` and per-step rewards r_t, for episodes i:

- ``is``: ordinary (trajectory) importance sampling, mean_i (prod_t rho_t) * sum_t gamma^t r_t;
- ``wis``: weighted IS, the same with the trajectory weights normalised to sum to one (biased,
  consistent, far lower variance); NaN when every weight is 0;
- ``pdis``: per-decision IS, mean_i sum_t gamma^t (prod_{k<=t} rho_k) r_t (Precup et al. 2000). With the
  harness's terminal-only reward it equals ``is``; it differs on data with intermediate rewards;
- ``dr``: doubly robust (Jiang & Li 2016), per-decision IS with a model's Q-hat / V-hat as control
  variate: mean_i sum_t gamma^t [w_t r_t - (w_t Q(s_t, a_t) - w_{t-1} V(s_t))], with w_t the
  cumulative ratio and w_{-1} = 1. Unbiased if the ratios are right, exact if the model is.

A greedy (deterministic) target policy gives rho_t = 0 whenever the logged action differs, so IS
keeps only the episodes that agree with it at every step; ``effective_sample_size`` reports how many
(0: no logged episode follows the policy, which then leaves the buffer's support).

``off_policy_values`` gives all of them for acting policies on one buffer, with ``fqe`` (the fitted
Q-function's value at the buffer's start states, ``harness_gym.bench.fqe``), that Q-function as DR's model,
and the learner's ``own_q``: its own Q-function's value of the same start states, what a Q-learner believes
its policy is worth. Every estimate is of the value from the buffer's start-state distribution, i.e. of
the train-split tasks the buffer was collected on (round robin, so uniformly).

Sums are numpy's (pairwise), never a BLAS dot product: OpenBLAS accumulates a dot product in an order
that depends on the CPU's kernel and the thread count, so the last bits would differ between machines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from harness_gym.bench.fqe import FQESchedule
    from harness_gym.datasets.d3rlpy_bridge import OfflineData

__all__ = [
    "ESTIMATORS",
    "EpisodeBatch",
    "LoggedBuffer",
    "OPEEpisode",
    "effective_sample_size",
    "estimate",
    "off_policy_values",
]

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


@dataclass(frozen=True)
class EpisodeBatch:
    """Episodes as (E, T) arrays padded to the longest: a padding step has ratio 1 and reward, Q-hat and
    V-hat 0, so it changes no estimate. The estimators run on whole arrays, not episode by episode."""

    target_prob: np.ndarray
    behavior_logp: np.ndarray
    rewards: np.ndarray
    q_hat: np.ndarray | None = None
    v_hat: np.ndarray | None = None

    @classmethod
    def from_rows(
        cls,
        episode_lengths: Sequence[int] | np.ndarray,
        target_prob: np.ndarray,
        behavior_logp: np.ndarray,
        rewards: np.ndarray,
        q_hat: np.ndarray | None = None,
        v_hat: np.ndarray | None = None,
    ) -> EpisodeBatch:
        """Per-step arrays, episode after episode, ``episode_lengths`` steps each."""
        lengths = np.asarray(episode_lengths, dtype=np.int64)
        n = int(lengths.sum())
        if lengths.ndim != 1 or lengths.size == 0 or (lengths < 1).any():
            raise ValueError("need at least one episode, each of >= 1 step")
        arrays = {"target_prob": target_prob, "behavior_logp": behavior_logp, "rewards": rewards}
        arrays |= {k: v for k, v in (("q_hat", q_hat), ("v_hat", v_hat)) if v is not None}
        for name, value in arrays.items():
            if np.asarray(value).shape != (n,):
                raise ValueError(f"{name} has shape {np.asarray(value).shape}, expected ({n},) steps")
        if not np.all(np.isfinite(behavior_logp)):
            raise ValueError("behavior_logp must be finite on every step (drop the final-observation row)")
        episode = np.repeat(np.arange(lengths.size), lengths)
        step = np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        shape = (lengths.size, int(lengths.max()))
        padding = {"target_prob": 1.0}  # ratio 1 (behaviour log-probability 0); everything else 0

        def pad(name: str, value: np.ndarray) -> np.ndarray:
            out = np.full(shape, padding.get(name, 0.0))
            out[episode, step] = value
            return out

        return cls(**{name: pad(name, np.asarray(value, dtype=np.float64)) for name, value in arrays.items()})

    @classmethod
    def from_episodes(cls, episodes: Sequence[OPEEpisode]) -> EpisodeBatch:
        if not episodes:
            raise ValueError("no episodes")
        with_model = all(ep.q_hat is not None and ep.v_hat is not None for ep in episodes)

        def cat(name: str) -> np.ndarray:
            return np.concatenate([np.asarray(getattr(ep, name), dtype=np.float64) for ep in episodes])

        return cls.from_rows(
            [np.asarray(ep.rewards).shape[0] for ep in episodes],
            cat("target_prob"),
            cat("behavior_logp"),
            cat("rewards"),
            cat("q_hat") if with_model else None,
            cat("v_hat") if with_model else None,
        )

    def cumulative_ratios(self) -> np.ndarray:
        """(E, T) w_t = prod_{k<=t} pi(a_k | s_k) / mu(a_k | s_k)."""
        return np.cumprod(self.target_prob * np.exp(-self.behavior_logp), axis=1)

    def estimate(self, estimator: str, gamma: float = 1.0) -> float:
        """The ``estimator`` (one of ``ESTIMATORS``) of the target policy's expected discounted return."""
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        w = self.cumulative_ratios()
        d = gamma ** np.arange(w.shape[1], dtype=np.float64)
        if estimator in ("is", "wis"):
            returns, weights = (d * self.rewards).sum(axis=1), w[:, -1]
            if estimator == "is":
                return float(np.mean(weights * returns))
            total = float(weights.sum())
            return float(np.sum(weights * returns) / total) if total > 0 else float("nan")
        if estimator == "pdis":
            return float((d * w * self.rewards).sum(axis=1).mean())
        if self.q_hat is None or self.v_hat is None:
            raise ValueError("dr needs q_hat and v_hat on every episode")
        w_prev = np.concatenate([np.ones((w.shape[0], 1)), w[:, :-1]], axis=1)
        terms = w * self.rewards - (w * self.q_hat - w_prev * self.v_hat)
        return float((d * terms).sum(axis=1).mean())

    def effective_sample_size(self) -> float:
        """(sum w)^2 / sum w^2 of the trajectory weights: how many episodes the IS estimate really uses."""
        w = self.cumulative_ratios()[:, -1]
        denom = float((w**2).sum())
        return float(w.sum() ** 2 / denom) if denom > 0 else 0.0


def _batch(episodes: Sequence[OPEEpisode] | EpisodeBatch) -> EpisodeBatch:
    return episodes if isinstance(episodes, EpisodeBatch) else EpisodeBatch.from_episodes(episodes)


def estimate(episodes: Sequence[OPEEpisode] | EpisodeBatch, estimator: str, gamma: float = 1.0) -> float:
    """The ``estimator`` (one of ``ESTIMATORS``) of the target policy's expected discounted return."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    return _batch(episodes).estimate(estimator, gamma)


def effective_sample_size(episodes: Sequence[OPEEpisode] | EpisodeBatch) -> float:
    """(sum w)^2 / sum w^2 of the trajectory weights: how many episodes the IS estimate really uses."""
    return _batch(episodes).effective_sample_size()


# -- acting policies on one buffer -----------------------------------------------------------------
@dataclass(frozen=True)
class LoggedBuffer:
    """A buffer's steps (episode by episode) over its distinct states (observation, legal mask)."""

    observations: np.ndarray
    """(S, F) distinct observations; ``masks`` (S, A) their legal actions."""
    masks: np.ndarray
    row_state: np.ndarray
    """(N,) int: each step's state."""
    actions: np.ndarray
    rewards: np.ndarray
    behavior_logp: np.ndarray
    episode_lengths: np.ndarray

    @classmethod
    def from_offline(cls, data: OfflineData) -> LoggedBuffer:
        episodes = list(data.dataset.episodes)
        observations = np.concatenate([e.observations for e in episodes])
        keys = np.concatenate([observations.astype(np.float64), data.action_masks.astype(np.float64)], 1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        return cls(
            observations=observations[first],
            masks=data.action_masks[first],
            row_state=inverse.reshape(-1).astype(np.int64),
            actions=np.concatenate([e.actions for e in episodes]).reshape(-1).astype(np.int64),
            rewards=np.concatenate([e.rewards for e in episodes]).reshape(-1).astype(np.float64),
            behavior_logp=np.asarray(data.behavior_logp, dtype=np.float64),
            episode_lengths=np.array([int(e.size()) for e in episodes], dtype=np.int64),
        )

    @property
    def start_states(self) -> np.ndarray:
        """(E,) each episode's first state."""
        return self.row_state[np.cumsum(self.episode_lengths) - self.episode_lengths]

    def probs(self, policy: Any) -> np.ndarray:
        """(S, A) ``policy.action_probs`` at every distinct state."""
        pairs = zip(self.observations, self.masks, strict=True)
        return np.stack([np.asarray(policy.action_probs(o, m), dtype=np.float64) for o, m in pairs])

    def episodes(self, probs: np.ndarray, q: np.ndarray | None = None) -> EpisodeBatch:
        """The target with per-state ``probs`` (S, A) on the logged steps; with ``q`` (S, A), DR's model."""
        s, a = self.row_state, self.actions
        return EpisodeBatch.from_rows(
            self.episode_lengths,
            probs[s, a],
            self.behavior_logp,
            self.rewards,
            q_hat=None if q is None else q[s, a],
            v_hat=None if q is None else (probs * q).sum(axis=1)[s],
        )

    def start_value(self, probs: np.ndarray, q: np.ndarray) -> float:
        """sum_a pi(a | s_0) Q(s_0, a), averaged over the episodes' start states."""
        return float((probs * q).sum(axis=1)[self.start_states].mean())


def off_policy_values(
    policies: Sequence[Any],
    buffer: LoggedBuffer,
    seeds: Sequence[int],
    schedule: FQESchedule | None = None,
) -> list[dict[str, float | None]]:
    """Per policy: IS, WIS, PDIS, DR (FQE's Q as model), FQE, the effective sample size of the IS
    weights (``ess``) and the learner's own start-state value (``own_q``; None without a Q-function).

    ``seeds`` (one per policy) seed each policy's FQE network; the FQEs are fitted in one call."""
    from harness_gym.bench.fqe import FQEData, fit_fqe

    if len(seeds) != len(policies) or not policies:
        raise ValueError(f"need one seed per policy, got {len(policies)} policies and {len(seeds)} seeds")
    probs = np.stack([buffer.probs(policy) for policy in policies])
    data = FQEData.from_rows(
        buffer.row_state,
        buffer.observations,
        buffer.masks,
        buffer.actions,
        buffer.rewards,
        buffer.episode_lengths,
    )
    q = fit_fqe(data, probs, seeds, schedule)
    out = []
    for policy, p, q_p in zip(policies, probs, q, strict=True):
        logged = buffer.episodes(p, q_p)
        values: dict[str, float | None] = {name: logged.estimate(name) for name in ESTIMATORS}
        values["fqe"] = buffer.start_value(p, q_p)
        values["ess"] = logged.effective_sample_size()
        values["own_q"] = _own_start_value(policy, buffer, p)
        out.append(values)
    return out


def _own_start_value(policy: Any, buffer: LoggedBuffer, probs: np.ndarray) -> float | None:
    """sum_a pi(a | s_0) Q_own(s_0, a) over the buffer's start states: Q of its own action for a greedy
    Q-learner. None for a policy without its own Q-function (no ``q_values``, or it returns None)."""
    q_values = getattr(policy, "q_values", None)
    if q_values is None:
        return None
    starts = buffer.start_states
    own = np.zeros_like(probs)
    for state in np.unique(starts):
        values = q_values(buffer.observations[state], buffer.masks[state])
        if values is None:
            return None
        own[state] = values
    return buffer.start_value(probs, own)
