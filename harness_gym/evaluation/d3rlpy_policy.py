"""Wrap any trained d3rlpy discrete algorithm as a harness ``Policy`` that only takes legal actions.

Per-action scores, by algorithm (illegal actions get -inf before the argmax / softmax):

- ``DiscreteAWR``, ``DiscreteIQL``, ``DiscreteBC``, ``DiscreteSAC`` (and ``MaskedDiscreteSAC``): the
  categorical policy's logits (AWR, IQL and SAC through ``impl.policy``, d3rlpy's ``DiscreteBC``
  through its ``imitator`` module, which its impl does not expose otherwise). These are stochastic:
  ``sample=True`` draws from the softmax renormalised over the legal actions, and ``action_probs``
  reports that distribution.
- ``DQN``, ``DoubleDQN``, ``DiscreteCQL``: Q-values from the public ``predict_value``, called once for
  all actions (the observation repeated, one row per action). Greedy only.
- ``DiscreteBCQ`` (and ``MaskedDiscreteBCQ``): Q-values as above, but, as in d3rlpy's own ``predict``,
  only actions whose imitator probability is within ``action_flexibility`` of the best *legal* one are
  eligible (read from the impl's ``imitator`` module; the rule ``MaskedDiscreteBCQ`` trains with).
  Greedy only.

Learnables trained with ``masked=True`` (``baselines.legal``: AWR, BC, IQL, and the ``sac`` and ``bcq``
of ``baselines.train``) get the mask appended to their input.
The mask is always applied after scoring, so the result is legal even when the network would prefer
an illegal action; if every legal score is non-finite, the first legal action is taken.

A harness observation is counters and flags, so an evaluation visits few distinct (observation, mask)
inputs, and the policy is a function of its input: each ``MaskedPolicy`` scores a distinct input once and
keeps what ``act`` and ``action_probs`` need (the sampling distribution's cumulative sums, the greedy
action, the probabilities). Sampling draws the one ``rng.random()`` ``Generator.choice(n, p=probs)`` draws
and picks the same index from the same cumulative sums, so actions and the generator's state are those of
``rng.choice``. The kept results are dropped as soon as any parameter of the model changes in place (an
optimizer step, ``load_state_dict``, ``load_model``: torch's per-tensor version counters), so a policy
wrapped around a model that keeps training never acts on stale scores.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from d3rlpy.algos import DiscreteBC, DiscreteBCQ
from d3rlpy.models.torch import CategoricalPolicy

from harness_gym.core.state import with_mask

__all__ = ["MaskedPolicy", "fingerprint"]


def _policy_module(algo: Any) -> torch.nn.Module | None:
    """The module giving action logits, or None for a Q-learner: d3rlpy's ``DiscreteBC`` keeps it as
    ``imitator``; AWR, IQL and SAC (any learnable whose impl exposes a ``CategoricalPolicy`` as
    ``policy``) as ``policy``."""
    if isinstance(algo, DiscreteBC):
        return algo.impl.modules.imitator
    try:
        module = algo.impl.policy
    except NotImplementedError:
        return None
    return module if isinstance(module, CategoricalPolicy) else None


def fingerprint(algo: Any) -> str:
    """SHA-256 of a trained model's parameters: resuming its evaluation needs the very same model."""
    import hashlib

    digest = hashlib.sha256()
    for name, module in sorted(vars(algo.impl.modules).items()):
        if isinstance(module, torch.nn.Module):
            for key, tensor in module.state_dict().items():
                digest.update(f"{name}.{key}".encode())
                digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


class MaskedPolicy:
    """The ``Policy`` protocol (``act``, ``action_probs``) over a trained d3rlpy discrete algorithm."""

    _CACHE_LIMIT = 100_000
    """Distinct inputs kept per policy; past it the kept results are dropped and built again."""

    def __init__(self, algo: Any, name: str, sample: bool = False) -> None:
        if algo.impl is None:
            raise ValueError("the algorithm has no model yet: fit it or load it first")
        self.algo = algo
        self.name = name
        self._logit_module = _policy_module(algo)
        self.stochastic = self._logit_module is not None
        if sample and not self.stochastic:
            raise ValueError(f"{type(algo).__name__} is a greedy (Q-value) policy; sample=True needs logits")
        self.sample = sample
        self.n_actions = int(algo.impl.action_size)
        self.masked_input = bool(getattr(algo.config, "masked", False))
        self._parameters = [
            p
            for module in vars(algo.impl.modules).values()
            if isinstance(module, torch.nn.Module)
            for p in module.parameters()
        ]
        self._cache: dict[tuple[str, bytes], Any] = {}
        self._cache_version: tuple[int, ...] = ()

    def _cached(self, kind: str, obs: np.ndarray, mask: np.ndarray, compute: Any) -> Any:
        """``compute()`` for this (observation, mask), kept until the model's parameters change."""
        version = tuple(p._version for p in self._parameters)
        if version != self._cache_version or len(self._cache) >= self._CACHE_LIMIT:
            self._cache.clear()
            self._cache_version = version
        key = (kind, np.asarray(obs, dtype=np.float32).tobytes() + np.asarray(mask, dtype=np.int8).tobytes())
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = compute()
        return hit

    # ---- scores --------------------------------------------------------------------------------

    def _input(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(1, F) model input: the observation, plus the mask for masked learnables."""
        x = np.asarray(obs, dtype=np.float32).reshape(1, -1)
        return with_mask(x, np.asarray(mask).reshape(1, -1)) if self.masked_input else x

    def _torch_obs(self, obs: np.ndarray, mask: np.ndarray) -> torch.Tensor:
        x = torch.as_tensor(self._input(obs, mask), device=self.algo.impl.device)
        scaler = self.algo.config.observation_scaler
        return scaler.transform(x) if scaler is not None else x

    def _logits(self, module: torch.nn.Module, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = self._torch_obs(obs, mask)
            if (
                type(module) is CategoricalPolicy
            ):  # the logits Categorical(logits=z) keeps, without building it
                z = module._fc(module._encoder(x))
                logits = z - z.logsumexp(dim=-1, keepdim=True)
            else:
                logits = module(x).logits
            return logits[0].cpu().numpy().astype(np.float64)

    def _q_values(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch = np.repeat(self._input(obs, mask), self.n_actions, axis=0)
        return np.asarray(self.algo.predict_value(batch, np.arange(self.n_actions)), dtype=np.float64)

    def scores(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Per-action scores (logits or Q-values), -inf for illegal or ineligible actions."""
        legal = np.asarray(mask).astype(bool)
        if legal.shape != (self.n_actions,) or not legal.any():
            raise ValueError(f"mask must have shape ({self.n_actions},) and allow an action, got {mask}")
        if self._logit_module is not None:
            raw = self._logits(self._logit_module, obs, mask)
        else:
            raw = self._q_values(obs, mask)
            if isinstance(self.algo, DiscreteBCQ):
                legal = legal & self._bcq_eligible(obs, legal)
        raw = np.where(np.isnan(raw), -np.inf, raw)
        return np.where(legal, raw, -np.inf)

    def _bcq_eligible(self, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        logits = self._logits(self.algo.impl.modules.imitator, obs, legal)
        logits = np.where(legal, logits, -np.inf)
        log_ratio = logits - logits.max()  # relative to the most likely legal action, which always passes
        return log_ratio >= math.log(self.algo.config.action_flexibility)

    # ---- Policy protocol ------------------------------------------------------------------------

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Softmax over the legal logits when sampling; otherwise one-hot on the masked argmax."""
        return self._cached("probs", obs, mask, lambda: self._action_probs(obs, mask)).copy()

    def _action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        s = self.scores(obs, mask)
        probs = np.zeros(self.n_actions)
        finite = np.isfinite(s)
        if self.sample and finite.any():
            z = np.where(finite, s - s[finite].max(), -np.inf)
            e = np.exp(z)
            return e / e.sum()
        probs[self._argmax(s, mask)] = 1.0
        return probs

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if self.sample:  # rng.choice(n_actions, p=probs): one uniform draw, searched in the cumulative sums
            cdf = self._cached("cdf", obs, mask, lambda: self._cdf(obs, mask))
            action = int(cdf.searchsorted(rng.random(), side="right"))
        else:
            action = self._cached("greedy", obs, mask, lambda: self._argmax(self.scores(obs, mask), mask))
        if not mask[action]:  # unreachable by construction; a guard, since an illegal action ends runs
            raise RuntimeError(f"{self.name} chose illegal action {action} under mask {mask}")
        return action

    def _cdf(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        cdf = self._action_probs(obs, mask).cumsum()
        cdf /= cdf[-1]
        return cdf

    def q_values(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
        """The learner's own action values at ``obs`` (every action), or None when it learns none (AWR,
        BC): what it believes each action is worth, to set beside an off-policy or simulated value."""
        try:
            return self._q_values(obs, mask)
        except NotImplementedError:
            return None

    @staticmethod
    def _argmax(scores: np.ndarray, mask: np.ndarray) -> int:
        if np.isfinite(scores).any():
            return int(np.argmax(scores))
        return int(np.flatnonzero(mask)[0])
