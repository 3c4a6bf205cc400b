"""A vectorised transition sampler for d3rlpy: the same mini-batches as d3rlpy's, without its Python loop.

d3rlpy 2.8.1's ``ReplayBuffer.sample_transition_batch`` calls ``sample_transition`` once per row (an
index draw, a transition picker call, then stacking), which took over half of each gradient step here.
:class:`FlatReplayBuffer` calls the source buffer's own transition picker once per transition when it is
built and stacks the results with d3rlpy's ``TransitionMiniBatch.from_transitions``; a batch is then one
``np.random.randint(n, size=batch_size)`` and fancy indexing. That draw consumes numpy's global random
state exactly as ``batch_size`` scalar ``np.random.randint(n)`` calls do (d3rlpy's sampler), and
``d3rlpy.seed`` seeds that state, so a seeded run samples the very same rows as before.

d3rlpy computes returns-to-go (AWR's advantage target) per row of every batch in
``TorchMiniBatch.from_batch``; when the buffer is built with a ``gamma`` it precomputes them with
d3rlpy's own function, and :func:`update_with_returns` uses that column instead.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from d3rlpy.algos.qlearning.base import QLearningAlgoBase
from d3rlpy.dataset import ReplayBuffer, ReplayBufferBase, TransitionMiniBatch
from d3rlpy.dataset.components import EpisodeBase, Transition
from d3rlpy.torch_utility import TorchMiniBatch, _compute_return_to_go, convert_to_torch

__all__ = ["FlatMiniBatch", "FlatReplayBuffer", "flat_buffer", "update_with_returns"]


@dataclasses.dataclass(frozen=True)
class FlatMiniBatch(TransitionMiniBatch):
    """d3rlpy's mini-batch plus, when the buffer has them, the rows' returns-to-go at ``gamma``."""

    returns_to_go: np.ndarray | None = None
    """(B, 1) float32, as ``TorchMiniBatch.from_batch`` would compute them at ``gamma``."""
    gamma: float | None = None


class _Rows(Sequence[Transition]):
    """The batch's d3rlpy ``Transition`` objects, looked up only if something reads them."""

    def __init__(self, transitions: Sequence[Transition], index: np.ndarray) -> None:
        self._transitions = transitions
        self._index = index

    def __len__(self) -> int:
        return int(self._index.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._transitions[j] for j in self._index[i]]
        return self._transitions[int(self._index[i])]


def _take(x: Any, index: np.ndarray) -> Any:
    return [a[index] for a in x] if isinstance(x, list | tuple) else x[index]


_FIELDS = (
    "observations",
    "actions",
    "rewards",
    "next_observations",
    "next_actions",
    "terminals",
    "intervals",
)


class FlatReplayBuffer(ReplayBuffer):
    """A read-only copy of a d3rlpy replay buffer whose batches are drawn in one vectorised step.

    Row ``i`` is the transition the source's picker returns for the source's ``buffer[i]``, so every
    field (observations as stored, e.g. with legal-action masks appended; zero next observation at a
    terminal row; intervals) is d3rlpy's own. ``gamma`` precomputes returns-to-go (see the module doc).
    """

    def __init__(self, source: ReplayBufferBase, gamma: float | None = None) -> None:
        info = source.dataset_info
        # d3rlpy's writer draws a sample observation from the global state: seeded runs must not see it
        state = np.random.get_state()
        try:
            super().__init__(
                source.buffer,
                transition_picker=source.transition_picker,
                trajectory_slicer=source.trajectory_slicer,
                observation_signature=info.observation_signature,
                action_signature=info.action_signature,
                reward_signature=info.reward_signature,
                action_space=info.action_space,
                action_size=info.action_size,
                cache_size=1,  # the writer's episode cache: nothing is ever written here
            )
        finally:
            np.random.set_state(state)
        n = source.transition_count
        if n < 1:
            raise ValueError("the source buffer holds no transitions")
        picker, stored = source.transition_picker, source.buffer
        transitions = [picker(*stored[i]) for i in range(n)]
        self._all = TransitionMiniBatch.from_transitions(transitions)
        self._gamma = gamma
        self._returns_to_go = None
        if gamma is not None:
            rtg = [_compute_return_to_go(gamma, t.rewards_to_go, None) for t in transitions]
            self._returns_to_go = np.asarray(rtg, dtype=np.float32).reshape(n, -1)
        self._n = n
        self._tensors: dict[str, torch.Tensor] | None = None

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every row of every field as the float32 tensors ``TorchMiniBatch.from_batch`` builds from them
        (``returns_to_go`` only when the buffer has them); built on first use and kept.

        Indexing them with a batch's rows gives exactly the tensors d3rlpy's conversion of that batch
        gives: the same values cast to float32 (``convert_to_torch``)."""
        if self._tensors is None:
            fields = {name: getattr(self._all, name) for name in _FIELDS}
            if self._returns_to_go is not None:
                fields["returns_to_go"] = self._returns_to_go
            for name, value in fields.items():
                if not isinstance(value, np.ndarray) or value.dtype == np.uint8:
                    raise TypeError(f"{name}: only float and integer arrays are supported, got {type(value)}")
            self._tensors = {name: torch.tensor(value, dtype=torch.float32) for name, value in fields.items()}
        return self._tensors

    def sample_transition_batch(self, batch_size: int) -> FlatMiniBatch:
        index = np.random.randint(self._n, size=batch_size)
        a = self._all
        return FlatMiniBatch(
            observations=_take(a.observations, index),
            actions=a.actions[index],
            rewards=a.rewards[index],
            next_observations=_take(a.next_observations, index),
            next_actions=a.next_actions[index],
            terminals=a.terminals[index],
            intervals=a.intervals[index],
            transitions=_Rows(a.transitions, index),
            returns_to_go=None if self._returns_to_go is None else self._returns_to_go[index],
            gamma=self._gamma,
        )

    def append(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("FlatReplayBuffer is read-only: build a new one from the grown source buffer")

    def append_episode(self, episode: EpisodeBase) -> None:
        raise TypeError("FlatReplayBuffer is read-only: build a new one from the grown source buffer")

    def clip_episode(self, terminated: bool) -> None:
        raise TypeError("FlatReplayBuffer is read-only: build a new one from the grown source buffer")


_CACHE: weakref.WeakKeyDictionary[ReplayBufferBase, dict[float | None, FlatReplayBuffer]] = (
    weakref.WeakKeyDictionary()
)


def flat_buffer(source: ReplayBufferBase, gamma: float | None = None) -> FlatReplayBuffer:
    """``FlatReplayBuffer(source, gamma)``, built once per live source buffer (seeds share it).

    The source must not grow afterwards (a grown one is detected by its transition count)."""
    if isinstance(source, FlatReplayBuffer) and source._gamma == gamma:
        return source
    per_gamma = _CACHE.setdefault(source, {})
    cached = per_gamma.get(gamma)
    if cached is None or cached.transition_count != cached._n:
        cached = per_gamma[gamma] = FlatReplayBuffer(source, gamma)
    return cached


def update_with_returns(learner: QLearningAlgoBase[Any, Any], batch: TransitionMiniBatch) -> dict[str, float]:
    """``learner.update(batch)`` as d3rlpy does it, reading the batch's precomputed returns-to-go.

    d3rlpy's own ``update`` runs when the batch has none for the learner's gamma, or when a reward
    scaler would have to be applied to each reward before summing."""
    config = learner.config
    usable = (
        isinstance(batch, FlatMiniBatch)
        and batch.returns_to_go is not None
        and batch.gamma == config.gamma
        and config.reward_scaler is None
    )
    if not usable:
        return QLearningAlgoBase.update(learner, batch)
    assert learner.impl is not None and isinstance(batch, FlatMiniBatch) and batch.returns_to_go is not None
    torch_batch = TorchMiniBatch.from_batch(
        batch=batch,
        gamma=config.gamma,
        compute_returns_to_go=False,
        device=learner.impl.device,
        observation_scaler=config.observation_scaler,
        action_scaler=config.action_scaler,
        reward_scaler=None,
    )
    torch_batch = dataclasses.replace(
        torch_batch, returns_to_go=convert_to_torch(batch.returns_to_go, learner.impl.device)
    )
    loss = learner.impl.update(torch_batch, learner.grad_step)
    learner.set_grad_step(learner.grad_step + 1)
    return loss
