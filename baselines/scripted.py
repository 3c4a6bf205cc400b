"""Scripted harness policies: the fixed Base harness of each domain and a uniform random controller."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from harness_gym.actions import N_ACTIONS
from harness_gym.registry import env_class


@runtime_checkable
class Policy(Protocol):
    """One interface for every controller: scripted, learned or random. Only legal actions are taken."""

    name: str

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int: ...


class BasePolicy:
    """The domain's Base harness: its fixed script, which never CHECKs (a function of the observation)."""

    name = "base"

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self._domain = env_class(env_id).domain_cls

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        probs = np.zeros(N_ACTIONS)
        probs[self._domain.base_action(obs, mask)] = 1.0
        return probs

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self._domain.base_action(obs, mask)


class RandomPolicy:
    """Uniform over the legal actions."""

    name = "random"

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        legal = np.asarray(mask, dtype=float)
        return legal / legal.sum()

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.choice(np.flatnonzero(mask)))
