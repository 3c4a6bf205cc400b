"""Legal-action masks as model input: how masked learnables see which actions they may choose.

d3rlpy minibatches carry observations, actions, rewards and flags, nothing else. A masked learnable
(``DiscreteAWR``, ``DiscreteIQL``, ``MaskedDiscreteSAC``, ``MaskedDiscreteBCQ`` with ``masked=True``) is
therefore trained on observations with the legal-action mask appended as ``N_ACTIONS`` trailing 0/1
columns, and its policy (SAC's actor, BCQ's imitator) normalises its softmax over the legal actions only
(the paper masks invalid actions in the softmax): an illegal action gets probability 0 in the loss, in
sampling and in the argmax. The next observation of a transition is a row of the same dataset, so the
mask at s' reaches the loss as the trailing columns of ``next_observations``. The mask is a function of
the harness state, so appending it adds no information the state lacks; it only makes that function
available to the loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.distributions import Categorical

from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import with_mask

if TYPE_CHECKING:
    from d3rlpy.dataset import MDPDataset
    from d3rlpy.models.torch import CategoricalPolicy

    from harness_gym.datasets.d3rlpy_bridge import OfflineData

__all__ = [
    "ILLEGAL_LOGIT",
    "check_mask_input",
    "legal_categorical",
    "legal_mask",
    "masked_dataset",
    "raw_logits",
    "split_mask",
    "with_mask",
]

ILLEGAL_LOGIT = -1e9
"""Finite (not -inf) so that 0 * log p stays 0 in entropies and expectations."""


def split_mask(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Model input -> (state features, bool mask), the inverse of ``with_mask``."""
    return x[:, :-N_ACTIONS], x[:, -N_ACTIONS:] > 0.5


def raw_logits(policy: CategoricalPolicy, x: torch.Tensor) -> torch.Tensor:
    """The output layer of a d3rlpy categorical policy, before its softmax.

    ``policy(x).logits`` are already normalised over all actions: a log-sum-exp over the illegal logits
    as well. Masking them afterwards cancels that term mathematically, but float round-off still sends
    gradients of order 1e-9 to the illegal logits; masking the raw output sends exactly none. Reads
    d3rlpy 2.8.1's ``CategoricalPolicy`` layers (``_encoder``, ``_fc``), as its ``forward`` does."""
    return policy._fc(policy._encoder(x))


def legal_mask(x: torch.Tensor) -> torch.Tensor:
    """(batch, N_ACTIONS) bool mask of model input ``x``; a row with no legal action counts as all legal.

    d3rlpy gives the last step of a terminated episode an all-zero next observation, so its "mask"
    allows nothing; its target is multiplied by 0, and taking it over all actions keeps it finite."""
    legal = split_mask(x)[1]
    return legal | ~legal.any(dim=1, keepdim=True)


def check_mask_input(config: Any) -> None:
    """Refuse an observation scaler on a masked learnable: it would rescale the 0/1 mask columns."""
    if getattr(config, "masked", False) and getattr(config, "observation_scaler", None) is not None:
        raise ValueError(
            f"{type(config).__name__}: masked=True reads the legal-action mask from unscaled input "
            "columns; drop observation_scaler or set masked=False"
        )


def legal_categorical(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    """The softmax over the legal actions only."""
    return Categorical(logits=logits.masked_fill(~mask, ILLEGAL_LOGIT))


def masked_dataset(data: OfflineData) -> MDPDataset:
    """``data.dataset`` (its own rewards and flags) with the legal-action masks appended to observations.

    Every logged action must be legal under its mask: a masked loss gives an illegal one log-probability
    ``ILLEGAL_LOGIT``."""
    from d3rlpy.constants import ActionSpace
    from d3rlpy.dataset import MDPDataset

    episodes = list(data.dataset.episodes)
    ends = np.cumsum([int(e.size()) for e in episodes])
    if int(ends[-1]) != data.n_steps:
        raise ValueError(f"dataset holds {int(ends[-1])} steps, side arrays {data.n_steps}")
    actions = np.concatenate([e.actions for e in episodes]).reshape(-1).astype(np.int64)
    illegal = np.flatnonzero(~(np.asarray(data.action_masks) != 0)[np.arange(data.n_steps), actions])
    if illegal.size:
        raise ValueError(
            f"{illegal.size} logged actions are illegal under their masks (first at row {illegal[0]})"
        )
    terminals = np.zeros(data.n_steps, dtype=np.float32)
    timeouts = np.zeros_like(terminals)
    for e, end in zip(episodes, ends, strict=True):
        (terminals if e.terminated else timeouts)[end - 1] = 1.0
    return MDPDataset(
        observations=with_mask(np.concatenate([e.observations for e in episodes]), data.action_masks),
        actions=actions.reshape(-1, 1),
        rewards=np.concatenate([e.rewards for e in episodes]).astype(np.float32).reshape(-1, 1),
        terminals=terminals,
        timeouts=timeouts,
        action_space=ActionSpace.DISCRETE,
        action_size=data.dataset.dataset_info.action_size,
    )
