"""Legal-action masks as model input: how masked learnables see which actions they may choose.

d3rlpy minibatches carry observations, actions, rewards and flags, nothing else. A masked learnable
(``DiscreteAWR``, ``DiscreteIQL`` with ``masked=True``) is therefore trained on observations with the
legal-action mask appended as ``N_ACTIONS`` trailing 0/1 columns, and its policy normalises its softmax
over the legal actions only (the paper masks invalid actions in the softmax): an illegal action gets
probability 0 in the loss, in sampling and in the argmax. The mask is a function of the harness state,
so appending it adds no information the state lacks; it only makes that function available to the loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.distributions import Categorical

from harness_gym.actions import N_ACTIONS

if TYPE_CHECKING:
    from d3rlpy.dataset import MDPDataset

    from baselines.d3rlpy_bridge import OfflineData

__all__ = ["ILLEGAL_LOGIT", "legal_categorical", "masked_dataset", "split_mask", "with_mask"]

ILLEGAL_LOGIT = -1e9
"""Finite (not -inf) so that 0 * log p stays 0 in entropies and expectations."""


def with_mask(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(N, F) observations and (N, N_ACTIONS) masks -> (N, F + N_ACTIONS) float32 model input."""
    obs = np.asarray(observations, dtype=np.float32)
    m = np.asarray(masks)
    if obs.ndim != 2 or m.shape != (obs.shape[0], N_ACTIONS):
        raise ValueError(f"need (N, F) observations and (N, {N_ACTIONS}) masks, got {obs.shape}, {m.shape}")
    if not (m != 0).any(axis=1).all():
        raise ValueError("every mask row must allow at least one action")
    return np.concatenate([obs, (m != 0).astype(np.float32)], axis=1)


def split_mask(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Model input -> (state features, bool mask), the inverse of ``with_mask``."""
    return x[:, :-N_ACTIONS], x[:, -N_ACTIONS:] > 0.5


def legal_categorical(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    """The softmax over the legal actions only."""
    return Categorical(logits=logits.masked_fill(~mask, ILLEGAL_LOGIT))


def masked_dataset(data: OfflineData) -> MDPDataset:
    """``data.dataset`` (its own rewards and flags) with the legal-action masks appended to observations."""
    from d3rlpy.constants import ActionSpace
    from d3rlpy.dataset import MDPDataset

    episodes = list(data.dataset.episodes)
    terminals = np.zeros(data.n_steps, dtype=np.float32)
    timeouts = np.zeros_like(terminals)
    ends = np.cumsum([int(e.size()) for e in episodes])
    if int(ends[-1]) != data.n_steps:
        raise ValueError(f"dataset holds {int(ends[-1])} steps, side arrays {data.n_steps}")
    for e, end in zip(episodes, ends, strict=True):
        (terminals if e.terminated else timeouts)[end - 1] = 1.0
    return MDPDataset(
        observations=with_mask(np.concatenate([e.observations for e in episodes]), data.action_masks),
        actions=np.concatenate([e.actions for e in episodes]).reshape(-1, 1),
        rewards=np.concatenate([e.rewards for e in episodes]).astype(np.float32).reshape(-1, 1),
        terminals=terminals,
        timeouts=timeouts,
        action_space=ActionSpace.DISCRETE,
        action_size=data.dataset.dataset_info.action_size,
    )
