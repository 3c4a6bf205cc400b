"""Discrete BCQ (Fujimoto et al. 2019; d3rlpy's ``DiscreteBCQ``) with its imitator over legal actions only.

d3rlpy's discrete BCQ trains an imitator G(a | s) by cross-entropy with a softmax over all 7 actions,
plus ``beta`` times the mean squared log-probability, and lets the Q-learner choose among the actions
whose G is within ``action_flexibility`` of the most likely one. Over all actions, the imitator spends
capacity pushing down illegal actions it never sees, and its log-probability penalty grows with them.

With ``masked=True`` (the default) the model input carries the legal-action mask (``baselines.legal``)
and:

- the imitator's log-softmax runs over the legal actions at s (illegal logits set to the finite
  ``ILLEGAL_LOGIT``, so their probabilities are exactly 0 and their gradients are 0), and the
  log-probability penalty is the mean over legal (state, action) entries only;
- the eligible actions at a state are the legal ones whose imitator probability is at least
  ``action_flexibility`` times that of the most likely legal action (the best legal action always is),
  both when acting and in the Double-DQN target at s', whose mask is read from the dataset's next
  observation (the step after a terminal one has an all-zero next observation, hence no mask: its
  target is multiplied by 0 anyway, and it is taken over all actions). ``MaskedPolicy`` applies the
  same rule at act time.

The TD loss is d3rlpy's (it only regresses Q at dataset actions, which are legal). With
``masked=False`` it is d3rlpy's ``DiscreteBCQ`` unchanged.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from d3rlpy.algos.qlearning.bcq import DiscreteBCQ, DiscreteBCQConfig
from d3rlpy.algos.qlearning.torch.bcq_impl import DiscreteBCQImpl, DiscreteBCQLoss
from d3rlpy.base import DeviceArg, register_learnable
from d3rlpy.torch_utility import TorchMiniBatch
from d3rlpy.types import TorchObservation

from baselines.legal import ILLEGAL_LOGIT, MaskedImplRebuild, check_mask_input, legal_mask, raw_logits

__all__ = ["MaskedDiscreteBCQ", "MaskedDiscreteBCQConfig", "legal_imitation_loss"]


def legal_imitation_loss(
    logits: torch.Tensor, legal: torch.Tensor, actions: torch.Tensor, beta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(cross-entropy of the dataset actions, beta * mean squared log-probability), both over legal
    actions only; d3rlpy's ``compute_discrete_imitation_loss`` with the softmax restricted to ``legal``."""
    log_pi = F.log_softmax(logits.masked_fill(~legal, ILLEGAL_LOGIT), dim=1)
    nll = F.nll_loss(log_pi, actions.view(-1))
    squared = torch.where(legal, log_pi**2, torch.zeros_like(log_pi))
    return nll, beta * squared.sum() / legal.sum().clamp(min=1)


@dataclasses.dataclass()
class MaskedDiscreteBCQConfig(DiscreteBCQConfig):
    """d3rlpy's ``DiscreteBCQConfig`` plus ``masked``."""

    masked: bool = True
    """Train on observations with the legal-action mask appended; imitator over legal actions only."""

    def __post_init__(self) -> None:
        check_mask_input(self)
        if not 0.0 < self.action_flexibility <= 1.0:
            raise ValueError(f"action_flexibility must be in (0, 1], got {self.action_flexibility}")

    def create(self, device: DeviceArg = False, enable_ddp: bool = False) -> MaskedDiscreteBCQ:
        return MaskedDiscreteBCQ(self, device, enable_ddp)

    @staticmethod
    def get_type() -> str:
        return "masked_discrete_bcq"


class MaskedDiscreteBCQImpl(DiscreteBCQImpl):
    """``DiscreteBCQImpl`` whose imitator and eligible actions are restricted to legal actions."""

    def compute_loss(self, batch: TorchMiniBatch, q_tpn: torch.Tensor) -> DiscreteBCQLoss:
        td_loss = super(DiscreteBCQImpl, self).compute_loss(batch, q_tpn).loss  # d3rlpy's TD loss
        nll, penalty = legal_imitation_loss(
            raw_logits(self._modules.imitator, batch.observations),
            legal_mask(batch.observations),
            batch.actions.long(),
            self._beta,
        )
        imitator_loss = nll + penalty
        return DiscreteBCQLoss(loss=td_loss + imitator_loss, td_loss=td_loss, imitator_loss=imitator_loss)

    def eligible(self, x: TorchObservation) -> torch.Tensor:
        """(batch, actions) bool: legal, and G(a|s) >= action_flexibility * max over legal G(.|s)."""
        legal = legal_mask(x)
        logits = raw_logits(self._modules.imitator, x).masked_fill(~legal, ILLEGAL_LOGIT)
        ratio = logits - logits.max(dim=1, keepdim=True).values
        return legal & (ratio >= math.log(self._action_flexibility))

    def inner_predict_best_action(self, x: TorchObservation) -> torch.Tensor:
        """The eligible action of highest Q (also the Double-DQN target's action at s')."""
        q = self._q_func_forwarder.compute_expected_q(x)
        return q.masked_fill(~self.eligible(x), -math.inf).argmax(dim=1)


class MaskedDiscreteBCQ(MaskedImplRebuild, DiscreteBCQ):
    """Discrete BCQ over legal actions; ``fit`` it on :meth:`training_dataset`."""

    MASKED_IMPL = MaskedDiscreteBCQImpl
    _config: MaskedDiscreteBCQConfig

    def masked_impl_args(self) -> dict[str, float]:
        return {"action_flexibility": self._config.action_flexibility, "beta": self._config.beta}


register_learnable(MaskedDiscreteBCQConfig)
