"""Discrete implicit Q-learning (IQL, Kostrikov et al. 2022) as a d3rlpy learnable.

d3rlpy ships IQL for continuous actions only. The discrete version keeps the three losses:

- value: expectile regression of V(s) on min_i Q_targ_i(s, a) over dataset actions only (tau > 0.5
  approximates a max over in-support actions without querying unseen ones),
- critics: Q_i(s, a) regressed on r + gamma * (1 - done) * V(s'),
- policy: advantage-weighted extraction, -min(exp(beta * (Q_targ(s, a) - V(s))), max_weight) *
  log pi(a | s), with the softmax over legal actions only when ``masked`` (``baselines.legal``).

Targets follow Polyak averaging with ``tau``. Fit it on :meth:`DiscreteIQL.training_dataset` (the mask
columns ride on the observations); ``algo.save`` / ``d3rlpy.load_learnable`` work once ``baselines``
(or this module) is imported, which registers the config.
"""

from __future__ import annotations

import dataclasses

import torch
from d3rlpy.algos.qlearning.base import QLearningAlgoBase, QLearningAlgoImplBase
from d3rlpy.base import DeviceArg, LearnableConfig, register_learnable
from d3rlpy.constants import ActionSpace
from d3rlpy.models.builders import (
    create_categorical_policy,
    create_discrete_q_function,
    create_value_function,
)
from d3rlpy.models.encoders import VectorEncoderFactory
from d3rlpy.models.q_functions import MeanQFunctionFactory
from d3rlpy.models.torch import CategoricalPolicy, DiscreteEnsembleQFunctionForwarder, ValueFunction
from d3rlpy.optimizers import OptimizerFactory, OptimizerWrapper
from d3rlpy.optimizers.optimizers import make_optimizer_field
from d3rlpy.torch_utility import Modules, TorchMiniBatch, hard_sync, soft_sync
from d3rlpy.types import Shape, TorchObservation

from baselines.budgets import IQLSchedule, Schedule
from baselines.legal import LegalPolicyImpl, MaskedTraining

__all__ = ["DiscreteIQL", "DiscreteIQLConfig", "expectile_loss"]

_SHARED, _IQL = Schedule(), IQLSchedule()


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """``mean(|expectile - 1[diff < 0]| * diff^2)``: the asymmetric L2 whose minimiser is an expectile."""
    weight = (expectile - (diff < 0.0).float()).abs()
    return (weight * diff**2).mean()


@dataclasses.dataclass()
class DiscreteIQLConfig(LearnableConfig):
    """Hyperparameters of discrete IQL (Kostrikov et al. 2022, "Offline Reinforcement Learning with
    Implicit Q-Learning"; the losses are in the module doc). The defaults are read from
    ``baselines.budgets`` (``Schedule`` and ``IQLSchedule``), which gives each value's source."""

    batch_size: int = _SHARED.batch_size
    """Minibatch size."""
    gamma: float = _SHARED.gamma
    """Discount of the critics' target r + gamma * V(s')."""
    learning_rate: float = _IQL.learning_rate
    """Adam rate of the critics, the value network and the policy."""
    expectile: float = _IQL.expectile
    """Expectile of the value regression on Q over dataset actions (0.5: the mean; towards 1: the max)."""
    beta: float = _IQL.beta
    """Inverse temperature of the policy extraction."""
    max_weight: float = _IQL.max_weight
    """Upper clip of the policy extraction's weights exp(beta * (Q - V))."""
    tau: float = _IQL.tau
    """Polyak coefficient of the target critics."""
    n_critics: int = _IQL.n_critics
    """Critics in the ensemble; targets take their minimum."""
    hidden_units: int = _SHARED.hidden_units
    """Width of the single hidden layer of every network."""
    masked: bool = True
    """Train on observations with the legal-action mask appended; softmax over legal actions only."""
    optim_factory: OptimizerFactory = make_optimizer_field()  # noqa: RUF009 (d3rlpy's field factory)
    """Optimizer (d3rlpy default: Adam)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.expectile < 1.0:
            raise ValueError(f"expectile must be in (0, 1), got {self.expectile}")
        if self.beta <= 0.0 or self.max_weight <= 0.0:
            raise ValueError(f"beta and max_weight must be positive, got {self.beta}, {self.max_weight}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if self.n_critics < 1:
            raise ValueError(f"n_critics must be >= 1, got {self.n_critics}")

    def create(self, device: DeviceArg = False, enable_ddp: bool = False) -> DiscreteIQL:
        return DiscreteIQL(self, device, enable_ddp)

    @staticmethod
    def get_type() -> str:
        return "discrete_iql"


@dataclasses.dataclass(frozen=True)
class DiscreteIQLModules(Modules):
    policy: CategoricalPolicy
    q_funcs: torch.nn.ModuleList
    targ_q_funcs: torch.nn.ModuleList
    value_func: ValueFunction
    policy_optim: OptimizerWrapper
    critic_optim: OptimizerWrapper


class DiscreteIQLImpl(LegalPolicyImpl, QLearningAlgoImplBase):
    _modules: DiscreteIQLModules

    def __init__(
        self,
        observation_shape: Shape,
        action_size: int,
        modules: DiscreteIQLModules,
        q_func: DiscreteEnsembleQFunctionForwarder,
        targ_q_func: DiscreteEnsembleQFunctionForwarder,
        config: DiscreteIQLConfig,
        device: str,
    ) -> None:
        super().__init__(observation_shape, action_size, modules, device)
        self._config = config
        self._q_func = q_func
        self._targ_q_func = targ_q_func

    def inner_update(self, batch: TorchMiniBatch, grad_step: int) -> dict[str, float]:
        cfg = self._config
        actions = batch.actions.long()
        with torch.no_grad():
            q_targ = self._targ_q_func.compute_target(batch.observations, actions, reduction="min")
            v_next = self._modules.value_func(batch.next_observations)

        # critics and value share one optimizer step (as d3rlpy's continuous IQL does)
        self._modules.critic_optim.zero_grad()
        v = self._modules.value_func(batch.observations)
        value_loss = expectile_loss(q_targ - v, cfg.expectile)
        q_loss = self._q_func.compute_error(
            observations=batch.observations,
            actions=actions,
            rewards=batch.rewards,
            target=v_next,
            terminals=batch.terminals,
            gamma=cfg.gamma**batch.intervals,
        )
        (q_loss + value_loss).backward()
        self._modules.critic_optim.step()

        with torch.no_grad():
            weight = torch.exp(cfg.beta * (q_targ - v.detach())).clamp(max=cfg.max_weight).reshape(-1)
        self._modules.policy_optim.zero_grad()
        log_prob = self._dist(batch.observations).log_prob(actions.reshape(-1))
        policy_loss = -(weight * log_prob).mean()
        policy_loss.backward()
        self._modules.policy_optim.step()

        soft_sync(self._modules.targ_q_funcs, self._modules.q_funcs, cfg.tau)
        return {
            "q_loss": float(q_loss.item()),
            "value_loss": float(value_loss.item()),
            "policy_loss": float(policy_loss.item()),
            "mean_weight": float(weight.mean().item()),
        }

    def inner_predict_value(self, x: TorchObservation, action: torch.Tensor) -> torch.Tensor:
        return (
            self._q_func.compute_expected_q(x, reduction="min").gather(1, action.long().view(-1, 1)).view(-1)
        )

    @property
    def q_function(self) -> torch.nn.ModuleList:
        return self._modules.q_funcs

    @property
    def q_function_optim(self) -> torch.optim.Optimizer:
        return self._modules.critic_optim.optim


class DiscreteIQL(MaskedTraining, QLearningAlgoBase[DiscreteIQLImpl, DiscreteIQLConfig]):
    """Discrete IQL; ``fit`` it on :meth:`training_dataset`."""

    def inner_create_impl(self, observation_shape: Shape, action_size: int) -> None:
        cfg = self._config
        encoder = VectorEncoderFactory(hidden_units=[cfg.hidden_units])
        kwargs = {"device": self._device, "enable_ddp": self._enable_ddp}
        q_funcs, q_func = create_discrete_q_function(
            observation_shape,
            action_size,
            encoder,
            MeanQFunctionFactory(),
            n_ensembles=cfg.n_critics,
            **kwargs,
        )
        targ_q_funcs, targ_q_func = create_discrete_q_function(
            observation_shape,
            action_size,
            encoder,
            MeanQFunctionFactory(),
            n_ensembles=cfg.n_critics,
            **kwargs,
        )
        hard_sync(targ_q_funcs, q_funcs)
        value_func = create_value_function(observation_shape, encoder, **kwargs)
        policy = create_categorical_policy(observation_shape, action_size, encoder, **kwargs)
        critic_params = torch.nn.ModuleList([q_funcs, value_func])
        modules = DiscreteIQLModules(
            policy=policy,
            q_funcs=q_funcs,
            targ_q_funcs=targ_q_funcs,
            value_func=value_func,
            policy_optim=cfg.optim_factory.create(
                policy.named_modules(), lr=cfg.learning_rate, compiled=False
            ),
            critic_optim=cfg.optim_factory.create(
                critic_params.named_modules(), lr=cfg.learning_rate, compiled=False
            ),
        )
        self._impl = DiscreteIQLImpl(
            observation_shape, action_size, modules, q_func, targ_q_func, cfg, self._device
        )

    def get_action_type(self) -> ActionSpace:
        return ActionSpace.DISCRETE


register_learnable(DiscreteIQLConfig)
