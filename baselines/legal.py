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

The glue two learners would otherwise repeat lives here as mixins: :class:`LegalPolicyImpl` (acting and
the policy accessors of an impl with a categorical ``policy``: AWR, IQL), :class:`MaskedTraining` (the
masked training dataset: IQL, SAC, BCQ) and :class:`MaskedImplRebuild` (a d3rlpy algorithm whose masked
impl reuses the networks and optimizers d3rlpy built: SAC, BCQ).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from torch.distributions import Categorical

from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import with_mask

if TYPE_CHECKING:
    from d3rlpy.dataset import MDPDataset
    from d3rlpy.models.torch import CategoricalPolicy
    from d3rlpy.types import Shape, TorchObservation

    from harness_gym.datasets.d3rlpy_bridge import OfflineData

__all__ = [
    "ILLEGAL_LOGIT",
    "LegalPolicyImpl",
    "MaskedImplRebuild",
    "MaskedTraining",
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


class LegalPolicyImpl:
    """Mixin of an impl whose ``policy`` module is a categorical policy (AWR, IQL): acting from it, over
    the legal actions when ``masked``, and d3rlpy's policy accessors.

    The impl's ``_modules`` has ``policy`` and an optimizer wrapper under the field ``POLICY_OPTIM``;
    its ``_config`` has ``masked``. Put it first among the bases, before d3rlpy's impl base."""

    POLICY_OPTIM: ClassVar[str] = "policy_optim"
    """The ``_modules`` field of the policy's optimizer wrapper (a field name is part of saved files)."""
    _modules: Any
    _config: Any

    def _dist(self, x: TorchObservation) -> Categorical:
        """The policy's distribution, over legal actions only when the config is masked."""
        dist = self._modules.policy(x)
        if not self._config.masked:
            return dist
        assert isinstance(x, torch.Tensor)
        return legal_categorical(dist.logits, split_mask(x)[1])

    def inner_predict_best_action(self, x: TorchObservation) -> torch.Tensor:
        return self._dist(x).logits.argmax(dim=1)

    def inner_sample_action(self, x: TorchObservation) -> torch.Tensor:
        return self._dist(x).sample()

    @property
    def policy(self) -> CategoricalPolicy:
        return self._modules.policy

    @property
    def policy_optim(self) -> torch.optim.Optimizer:
        return getattr(self._modules, self.POLICY_OPTIM).optim


class MaskedTraining:
    """Mixin of a masked learnable fitted on the buffer's own rewards (IQL, SAC, BCQ)."""

    _config: Any

    def training_dataset(self, data: OfflineData) -> MDPDataset:
        """The dataset to ``fit`` on: the buffer's own rewards, masks appended when ``masked``."""
        return masked_dataset(data) if self._config.masked else data.dataset


class MaskedImplRebuild(MaskedTraining):
    """Mixin of a d3rlpy algorithm (SAC, BCQ) whose masked variant drives the networks and optimizers
    d3rlpy built with other losses: d3rlpy builds its impl (the same random draws, so ``masked=False``
    stays d3rlpy's own), then, when masked, ``MASKED_IMPL`` is built on those very modules.

    Put it first among the bases, before the d3rlpy algorithm."""

    MASKED_IMPL: ClassVar[type]
    """The impl class of the masked variant (a subclass of the d3rlpy algorithm's own impl)."""
    _impl: Any
    _device: str
    compiled: bool

    def masked_impl_args(self) -> dict[str, Any]:
        """``MASKED_IMPL``'s arguments beyond the ones every d3rlpy Q-learning impl takes."""
        return {}

    def inner_create_impl(self, observation_shape: Shape, action_size: int) -> None:
        super().inner_create_impl(observation_shape, action_size)  # type: ignore[misc]
        if not self._config.masked:
            return
        base = self._impl
        assert base is not None
        self._impl = self.MASKED_IMPL(
            observation_shape=observation_shape,
            action_size=action_size,
            modules=base.modules,
            q_func_forwarder=base._q_func_forwarder,
            targ_q_func_forwarder=base._targ_q_func_forwarder,
            target_update_interval=self._config.target_update_interval,
            gamma=self._config.gamma,
            compiled=self.compiled,
            device=self._device,
            **self.masked_impl_args(),
        )
