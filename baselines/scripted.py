"""Scripted harness policies: Base, its exploratory and Forced-CHECK variants, and a random controller.

Every policy takes only legal actions and can report its action distribution (``action_probs``), which
the collector logs as ``behavior_logp`` so datasets support off-policy evaluation.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from harness_gym.actions import N_ACTIONS, Action
from harness_gym.registry import env_class
from harness_gym.state import FEATURE_INDEX

_CHECKED = FEATURE_INDEX["checked_draft"]
_HAS_DRAFT = FEATURE_INDEX["has_draft"]


@runtime_checkable
class Policy(Protocol):
    """One interface for every controller: scripted, learned or random. Only legal actions are taken."""

    name: str

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int: ...


def _one_hot(action: int) -> np.ndarray:
    probs = np.zeros(N_ACTIONS)
    probs[action] = 1.0
    return probs


class BasePolicy:
    """The domain's Base harness: its fixed script, which never CHECKs (a function of the observation)."""

    name = "base"

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self._domain = env_class(env_id).domain_cls

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        return self._domain.base_action(obs, mask)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self.choose(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)


class ExploratoryPolicy:
    """Base with epsilon-perturbations: with probability ``epsilon`` a uniformly random legal action."""

    name = "exploratory"

    def __init__(self, env_id: str, epsilon: float = 0.3) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.base = BasePolicy(env_id)
        self.epsilon = epsilon

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = np.asarray(mask, dtype=float)
        return (1.0 - self.epsilon) * self.base.action_probs(obs, mask) + self.epsilon * legal / legal.sum()

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if rng.random() < self.epsilon:
            return int(rng.choice(np.flatnonzero(mask)))
        return self.base.act(obs, mask, rng)


class ForcedCheckPolicy:
    """Base with a CHECK inserted before SUBMIT whenever the current draft has not been checked."""

    name = "forced-check"

    def __init__(self, env_id: str) -> None:
        self.base = BasePolicy(env_id)

    def _action(self, obs: np.ndarray, mask: np.ndarray) -> int:
        action = self.base.choose(obs, mask)
        needs_check = obs[_HAS_DRAFT] > 0 and obs[_CHECKED] <= 0
        if action == Action.SUBMIT and needs_check and mask[Action.CHECK]:
            return int(Action.CHECK)
        return action

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return _one_hot(self._action(obs, mask))

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self._action(obs, mask)


class RandomPolicy:
    """Uniform over the legal actions."""

    name = "random"

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = np.asarray(mask, dtype=float)
        return legal / legal.sum()

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.choice(np.flatnonzero(mask)))


SCRIPTED = ("base", "exploratory", "forced-check", "random")


def make_policy(name: str, env_id: str, epsilon: float = 0.3) -> Policy:
    """A scripted policy by its command-line name."""
    if name == "base":
        return BasePolicy(env_id)
    if name == "exploratory":
        return ExploratoryPolicy(env_id, epsilon)
    if name == "forced-check":
        return ForcedCheckPolicy(env_id)
    if name == "random":
        return RandomPolicy()
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(SCRIPTED)}")
