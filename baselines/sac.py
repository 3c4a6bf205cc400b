"""Discrete SAC (Christodoulou 2019; d3rlpy's ``DiscreteSAC``) with its policy over legal actions only.

d3rlpy's discrete SAC takes every expectation over pi(. | s) on all 7 actions: the actor loss
E_pi[alpha log pi - Q], the critic's soft target V(s') = E_pi(.|s')[Q_targ(s', .) - alpha log pi] and the
temperature loss with the entropy target 0.98 log 7. In a harness state only a few actions are legal,
so an illegal action's untrained Q-value pulls probability towards it, and its entropy target (1.91
nats) exceeds the largest entropy a state with two legal actions can reach (0.69): alpha then grows for
as long as training lasts.

With ``masked=True`` (the default) the model input carries the legal-action mask (``baselines.legal``)
and:

- pi(. | s) is the softmax over the legal actions at s: illegal logits are set to ``ILLEGAL_LOGIT``
  (finite, so the illegal probabilities are exactly 0 and 0 * log 0 terms stay 0), and every
  expectation sums over legal actions only, so neither the loss nor its gradients see an illegal
  action's logit or Q-value;
- the critic's target at s' takes pi(. | s') over the legal actions at s', read from the mask columns
  of the dataset's next observation (the step after a terminal one has an all-zero next observation,
  hence no mask: its target is multiplied by 0 anyway, and it is taken over all actions to stay finite);
- the entropy target is per state, ``0.98 log |legal(s)|``: the same fraction of the largest entropy the
  state allows as d3rlpy's 0.98 log 7 is of an unmasked state's. A state with a single legal action
  has target 0 and entropy 0, so it leaves alpha unchanged.

With ``masked=False`` it is d3rlpy's ``DiscreteSAC`` unchanged. ``algo.save`` / ``d3rlpy.load_learnable``
work once ``baselines`` (or this module) is imported, which registers the config.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from d3rlpy.algos.qlearning.sac import DiscreteSAC, DiscreteSACConfig
from d3rlpy.algos.qlearning.torch.sac_impl import DiscreteSACImpl
from d3rlpy.base import DeviceArg, register_learnable
from d3rlpy.models.torch.parameters import get_parameter
from d3rlpy.torch_utility import TorchMiniBatch
from d3rlpy.types import TorchObservation

from baselines.legal import ILLEGAL_LOGIT, MaskedImplRebuild, check_mask_input, legal_mask, raw_logits

__all__ = ["ENTROPY_FRACTION", "MaskedDiscreteSAC", "MaskedDiscreteSACConfig", "legal_log_pi"]

ENTROPY_FRACTION = 0.98
"""Target entropy as a fraction of the largest entropy of the state (d3rlpy's and Christodoulou's)."""


def legal_log_pi(logits: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log pi, pi) of the softmax over the legal actions; pi is exactly 0 on illegal actions."""
    log_pi = F.log_softmax(logits.masked_fill(~legal, ILLEGAL_LOGIT), dim=1)
    return log_pi, log_pi.exp()


def _legal_sum(terms: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Sum over actions (dim 1) of the legal entries only; ``terms`` may have a trailing quantile dim."""
    if terms.dim() == 3:
        legal = legal.unsqueeze(-1)
    return torch.where(legal, terms, torch.zeros_like(terms)).sum(dim=1)


@dataclasses.dataclass()
class MaskedDiscreteSACConfig(DiscreteSACConfig):
    """d3rlpy's ``DiscreteSACConfig`` plus ``masked``."""

    masked: bool = True
    """Train on observations with the legal-action mask appended; pi over legal actions only."""

    def __post_init__(self) -> None:
        check_mask_input(self)

    def create(self, device: DeviceArg = False, enable_ddp: bool = False) -> MaskedDiscreteSAC:
        return MaskedDiscreteSAC(self, device, enable_ddp)

    @staticmethod
    def get_type() -> str:
        return "masked_discrete_sac"


class MaskedDiscreteSACImpl(DiscreteSACImpl):
    """``DiscreteSACImpl`` whose expectations over pi run over the legal actions of each state."""

    def _pi(self, x: TorchObservation) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log pi, pi, legal) at the observations ``x`` (mask columns included)."""
        legal = legal_mask(x)
        log_pi, pi = legal_log_pi(raw_logits(self._modules.policy, x), legal)
        return log_pi, pi, legal

    def _temp(self) -> torch.Tensor | float:
        log_temp = self._modules.log_temp
        return 0.0 if log_temp is None else get_parameter(log_temp).exp()

    def compute_target(self, batch: TorchMiniBatch) -> torch.Tensor:
        """``V(s') = sum over legal a' of pi(a'|s') (Q_targ(s', a') - alpha log pi(a'|s'))``."""
        with torch.no_grad():
            log_pi, pi, legal = self._pi(batch.next_observations)
            target = self._targ_q_func_forwarder.compute_target(batch.next_observations)
            soft = self._temp() * log_pi
            if target.dim() == 3:  # distributional critics: (batch, actions, quantiles)
                pi, soft = pi.unsqueeze(-1), soft.unsqueeze(-1)
            value = _legal_sum(pi * (target - soft), legal)
            return value if target.dim() == 3 else value.unsqueeze(1)

    def compute_actor_loss(self, batch: TorchMiniBatch) -> dict[str, torch.Tensor]:
        """E_s[sum over legal a of pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))]."""
        with torch.no_grad():
            q = self._q_func_forwarder.compute_expected_q(batch.observations, reduction="min")
        log_pi, pi, legal = self._pi(batch.observations)
        loss: dict[str, torch.Tensor] = {}
        if self._modules.temp_optim:
            loss.update(self._update_temp(log_pi.detach(), pi.detach(), legal))
        loss["loss"] = _legal_sum(pi * (self._temp() * log_pi - q), legal).mean()
        return loss

    def _update_temp(
        self, log_pi: torch.Tensor, pi: torch.Tensor, legal: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """alpha's loss -alpha (E_pi[log pi] + 0.98 log |legal(s)|), averaged over states."""
        assert self._modules.temp_optim is not None and self._modules.log_temp is not None
        self._modules.temp_optim.zero_grad()
        expected_log_pi = _legal_sum(pi * log_pi, legal)
        n_legal = legal.sum(dim=1).clamp(min=1).to(log_pi.dtype)
        target = expected_log_pi + ENTROPY_FRACTION * torch.log(n_legal)
        loss = -(get_parameter(self._modules.log_temp).exp() * target.unsqueeze(1)).mean()
        loss.backward()
        self._modules.temp_optim.step()
        return {"temp_loss": loss, "temp": get_parameter(self._modules.log_temp).exp()[0][0]}

    def inner_predict_best_action(self, x: TorchObservation) -> torch.Tensor:
        return self._pi(x)[1].argmax(dim=1)

    def inner_sample_action(self, x: TorchObservation) -> torch.Tensor:
        return torch.multinomial(self._pi(x)[1], 1).view(-1)


class MaskedDiscreteSAC(MaskedImplRebuild, DiscreteSAC):
    """Discrete SAC over legal actions; ``fit`` it on :meth:`training_dataset`."""

    MASKED_IMPL = MaskedDiscreteSACImpl
    _config: MaskedDiscreteSACConfig


register_learnable(MaskedDiscreteSACConfig)
