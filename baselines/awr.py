"""Discrete advantage-weighted regression (AWR) as a d3rlpy learnable: the paper's harness controller.

The controller is a one-hidden-layer MLP (64 units) with a softmax over the 7 harness actions, trained by
weighted behaviour cloning on an offline buffer with terminal-only rewards (paper §3):

    loss = -mean(clip(exp(A / beta), 0.1, 10) * log pi(a | s)) - entropy_coef * H(pi(. | s))

How the advantage reaches the minibatch
---------------------------------------
d3rlpy minibatches carry no task index, so the per-task baseline is folded into the rewards before
training: :func:`advantage_dataset` builds a copy of the d3rlpy dataset whose only non-zero reward is on
each episode's last step and equals ``A = G - mean G of that task's trajectories`` (the mean is over
trajectories, not steps, so long episodes do not dominate their task's baseline). With ``gamma = 1`` the
return-to-go of *every* transition of an episode is then exactly that episode's ``A``, and d3rlpy
already computes returns-to-go per minibatch (``TorchMiniBatch.returns_to_go``) when the algorithm sets
``need_returns_to_go``. This also holds for timed-out episodes: d3rlpy drops their last transition but
keeps the last reward in ``rewards_to_go``.

With ``advantage="value"`` the terminal reward is ``G`` itself, so the return-to-go is the episode
return; a value network V(s) is regressed on it (MSE) and ``A = G - V(s)`` (V detached for the policy).

Training therefore goes through the ordinary ``algo.fit(dataset, ...)``, and ``algo.save`` /
``d3rlpy.load_learnable`` work as for any d3rlpy algorithm (import ``baselines.awr`` first, so the
config type is registered). Use :meth:`DiscreteAWR.training_dataset` (or ``baselines.train.train``) to
build the dataset; fitting on a raw dataset silently uses ``A = G``.

BC is the same network and loss with unit weights: :func:`awr_as_bc` (``weighting="none"``).
With ``masked=True`` (the default) the training observations carry the legal-action mask and the
softmax is normalised over legal actions only, in the loss as at inference (``baselines.legal``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from d3rlpy.algos.qlearning.base import QLearningAlgoBase, QLearningAlgoImplBase
from d3rlpy.base import DeviceArg, LearnableConfig, register_learnable
from d3rlpy.constants import ActionSpace
from d3rlpy.dataset import MDPDataset, TransitionMiniBatch
from d3rlpy.models.builders import create_categorical_policy, create_value_function
from d3rlpy.models.encoders import VectorEncoderFactory
from d3rlpy.models.torch import CategoricalPolicy, ValueFunction
from d3rlpy.optimizers import OptimizerFactory, OptimizerWrapper
from d3rlpy.optimizers.optimizers import make_optimizer_field
from d3rlpy.torch_utility import Modules, TorchMiniBatch
from d3rlpy.types import Shape, TorchObservation

from baselines.budgets import AWRSchedule, Schedule
from baselines.legal import LegalPolicyImpl, with_mask
from baselines.sampler import update_with_returns

if TYPE_CHECKING:
    from harness_gym.datasets.d3rlpy_bridge import OfflineData

__all__ = [
    "ADVANTAGES",
    "WEIGHTINGS",
    "DiscreteAWR",
    "DiscreteAWRConfig",
    "advantage_dataset",
    "awr_as_bc",
    "awr_weights",
    "per_task_advantage",
]

ADVANTAGES = ("per_task", "value")
WEIGHTINGS = ("exp", "none")
_SHARED, _PAPER = Schedule(), AWRSchedule()


# --------------------------------------------------------------------------------------------------
# Advantages and weights (pure functions, so tests can check them directly)
# --------------------------------------------------------------------------------------------------


def per_task_advantage(returns: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """A_i = G_i - mean of G over the trajectories of task_i (one entry per trajectory).

    A per-task baseline, because tasks differ in difficulty: a hard task's best trajectory should still
    be imitated even if its G is below the buffer-wide mean."""
    returns = np.asarray(returns, dtype=np.float64)
    tasks = np.asarray(tasks)
    if returns.shape != tasks.shape or returns.ndim != 1:
        raise ValueError(f"returns {returns.shape} and tasks {tasks.shape} must be equal 1-D shapes")
    _, inverse = np.unique(tasks, return_inverse=True)
    means = np.bincount(inverse, weights=returns) / np.bincount(inverse)
    return returns - means[inverse]


def awr_weights(advantage: torch.Tensor, beta: float, clip: tuple[float, float]) -> torch.Tensor:
    """clip(exp(A / beta), lo, hi), computed in log space so a large A cannot overflow to inf."""
    lo, hi = clip
    return torch.exp(torch.clamp(advantage / beta, math.log(lo), math.log(hi)))


def advantage_dataset(data: OfflineData, advantage: str = "per_task", masked: bool = False) -> MDPDataset:
    """The d3rlpy dataset with terminal-only rewards: A (``per_task``) or G (``value``) on the last step.

    With gamma = 1 every transition's return-to-go is then its episode's A (or G); see the module doc.
    ``masked`` appends the legal-action masks to the observations (``baselines.legal.with_mask``)."""
    if advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {ADVANTAGES}, got {advantage!r}")
    episodes = list(data.dataset.episodes)
    lengths = np.array([int(e.size()) for e in episodes], dtype=np.int64)
    ends = np.cumsum(lengths)
    if int(ends[-1]) != data.n_steps:
        raise ValueError(f"dataset holds {int(ends[-1])} steps, side arrays {data.n_steps}")
    starts = ends - lengths
    episode_g = data.returns[starts]
    target = episode_g if advantage == "value" else per_task_advantage(episode_g, data.task_index[starts])

    rewards = np.zeros((data.n_steps, 1), dtype=np.float32)
    rewards[ends - 1, 0] = target
    terminals = np.zeros(data.n_steps, dtype=np.float32)
    timeouts = np.zeros_like(terminals)
    for e, end in zip(episodes, ends, strict=True):
        (terminals if e.terminated else timeouts)[end - 1] = 1.0
    observations = np.concatenate([e.observations for e in episodes]).astype(np.float32, copy=False)
    if masked:
        observations = with_mask(observations, data.action_masks)
    return MDPDataset(
        observations=observations,
        actions=np.concatenate([e.actions for e in episodes]).reshape(-1, 1),
        rewards=rewards,
        terminals=terminals,
        timeouts=timeouts,
        action_space=ActionSpace.DISCRETE,
        action_size=data.dataset.dataset_info.action_size,
    )


# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass()
class DiscreteAWRConfig(LearnableConfig):
    """Hyperparameters of discrete AWR (Peng et al. 2019, "Advantage-Weighted Regression"; see the
    module doc); the defaults are the paper's controller, fixed across domains, read from
    ``baselines.budgets`` (``Schedule`` and ``AWRSchedule``, where each value's source is given).

    The number of epochs is the caller's choice (``n_steps`` of ``fit``; ``AWRSchedule.paper_epochs``).
    """

    batch_size: int = _SHARED.batch_size
    """Minibatch size (the paper's)."""
    gamma: float = 1.0
    """Must stay 1: the return-to-go of each transition is then the episode's terminal A (or G)."""
    learning_rate: float = _PAPER.learning_rate
    """Adam learning rate (the paper's), used for the policy and the value network."""
    beta: float = _PAPER.beta
    """AW temperature: weight = exp(A / beta) (the paper's)."""
    weight_clip: tuple[float, float] = _PAPER.weight_clip
    """Weights are clipped to this range (the paper's) to bound the variance of the update."""
    hidden_units: int = _SHARED.hidden_units
    """Width of the single hidden layer of the policy (and value) MLP (the paper's)."""
    entropy_coef: float = _PAPER.entropy_coef
    """Coefficient of the entropy bonus; keeps the policy from collapsing on few samples (the paper's)."""
    advantage: str = "per_task"
    """``per_task``: A = G - mean G of the task's trajectories (paper); ``value``: A = G - V(s)."""
    weighting: str = "exp"
    """``exp``: AWR weights; ``none``: unit weights, i.e. behaviour cloning with the same network."""
    masked: bool = True
    """Train on observations with the legal-action mask appended; softmax over legal actions only."""
    optim_factory: OptimizerFactory = make_optimizer_field()  # noqa: RUF009 (d3rlpy's field factory)
    """Optimizer (d3rlpy default: Adam)."""

    def __post_init__(self) -> None:
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}, got {self.advantage!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        self.weight_clip = (float(self.weight_clip[0]), float(self.weight_clip[1]))
        lo, hi = self.weight_clip
        if not 0.0 < lo <= hi:
            raise ValueError(f"weight_clip must satisfy 0 < lo <= hi, got {self.weight_clip}")
        if self.beta <= 0.0:
            raise ValueError(f"beta must be positive, got {self.beta}")
        if self.gamma != 1.0:
            raise ValueError("gamma must be 1.0: the return-to-go carries the episode's advantage")

    def create(self, device: DeviceArg = False, enable_ddp: bool = False) -> DiscreteAWR:
        return DiscreteAWR(self, device, enable_ddp)

    @staticmethod
    def get_type() -> str:
        return "discrete_awr"


def awr_as_bc(**overrides: object) -> DiscreteAWRConfig:
    """BC with the AWR network: every weight is 1 (everything else, entropy bonus included, unchanged)."""
    return DiscreteAWRConfig(**{"weighting": "none", **overrides})  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Torch implementation
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DiscreteAWRModules(Modules):
    policy: CategoricalPolicy
    optim: OptimizerWrapper
    value: ValueFunction | None
    """Only with ``advantage="value"``; d3rlpy's checkpointer skips the None fields."""
    value_optim: OptimizerWrapper | None


class DiscreteAWRImpl(LegalPolicyImpl, QLearningAlgoImplBase):
    _modules: DiscreteAWRModules
    POLICY_OPTIM = "optim"

    def __init__(
        self,
        observation_shape: Shape,
        action_size: int,
        modules: DiscreteAWRModules,
        config: DiscreteAWRConfig,
        device: str,
    ) -> None:
        super().__init__(observation_shape, action_size, modules, device)
        self._config = config

    def inner_update(self, batch: TorchMiniBatch, grad_step: int) -> dict[str, float]:
        cfg = self._config
        metrics: dict[str, float] = {}
        target = batch.returns_to_go.reshape(-1)  # A (per_task) or G (value): see the module doc

        if self._modules.value is not None:
            assert self._modules.value_optim is not None
            self._modules.value_optim.zero_grad()
            v = self._modules.value(batch.observations).reshape(-1)
            value_loss = F.mse_loss(v, target)
            value_loss.backward()
            self._modules.value_optim.step()
            advantage = target - v.detach()
            metrics["value_loss"] = float(value_loss.item())
        else:
            advantage = target

        if cfg.weighting == "exp":
            weights = awr_weights(advantage, cfg.beta, cfg.weight_clip)
        else:
            weights = torch.ones_like(advantage)

        self._modules.optim.zero_grad()
        dist = self._dist(batch.observations)
        log_prob = dist.log_prob(batch.actions.long().reshape(-1))
        entropy = dist.entropy().mean()
        loss = -(weights * log_prob).mean() - cfg.entropy_coef * entropy
        loss.backward()
        self._modules.optim.step()

        metrics.update(
            loss=float(loss.item()),
            entropy=float(entropy.item()),
            mean_weight=float(weights.mean().item()),
        )
        return metrics

    def inner_predict_value(self, x: TorchObservation, action: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("AWR learns no action values; use the policy's logits")


# --------------------------------------------------------------------------------------------------
# Algorithm
# --------------------------------------------------------------------------------------------------


class DiscreteAWR(QLearningAlgoBase[DiscreteAWRImpl, DiscreteAWRConfig]):
    """Discrete AWR; ``fit`` it on :meth:`training_dataset` (the advantage rides in the rewards)."""

    def inner_create_impl(self, observation_shape: Shape, action_size: int) -> None:
        cfg = self._config
        encoder = VectorEncoderFactory(hidden_units=[cfg.hidden_units])
        policy = create_categorical_policy(
            observation_shape, action_size, encoder, device=self._device, enable_ddp=self._enable_ddp
        )
        optim = cfg.optim_factory.create(policy.named_modules(), lr=cfg.learning_rate, compiled=False)
        value = value_optim = None
        if cfg.advantage == "value":
            value = create_value_function(
                observation_shape, encoder, device=self._device, enable_ddp=self._enable_ddp
            )
            value_optim = cfg.optim_factory.create(
                value.named_modules(), lr=cfg.learning_rate, compiled=False
            )
        modules = DiscreteAWRModules(policy=policy, optim=optim, value=value, value_optim=value_optim)
        self._impl = DiscreteAWRImpl(observation_shape, action_size, modules, cfg, self._device)

    def get_action_type(self) -> ActionSpace:
        return ActionSpace.DISCRETE

    @property
    def need_returns_to_go(self) -> bool:
        # BC with per-task advantages needs no returns; everything else reads A or G from them.
        return self._config.weighting != "none" or self._config.advantage == "value"

    def update(self, batch: TransitionMiniBatch) -> dict[str, float]:
        """d3rlpy's update; returns-to-go precomputed by ``baselines.sampler`` are read, not recomputed."""
        return update_with_returns(self, batch)

    def training_dataset(self, data: OfflineData) -> MDPDataset:
        """The dataset to ``fit`` on: terminal-only rewards carrying this config's advantage target."""
        return advantage_dataset(data, self._config.advantage, masked=self._config.masked)


register_learnable(DiscreteAWRConfig)
