"""The seeds of one learner trained together: per seed, the very model ``baselines.train.train`` gives.

A training step of these small networks (batch 256, one hidden layer of 64, 7 actions) costs the dispatch
of a few hundred small torch ops, not arithmetic. ``train_seeds`` runs the seeds' steps in lockstep and
issues each elementwise op and reduction once for all seeds, on tensors with a leading seed axis
(S, B, ...), so a step for 3 seeds costs little more than a step for one (2-3x less CPU per seed).

It stays bit-identical to per-seed training because only kernels that give the same bits are shared:

- every matrix product runs per seed, ``F.linear`` on that seed's (B, F) slice: the kernel of the
  per-seed run (a batched ``bmm`` or ``torch.func.vmap`` rounds differently, by up to 0.2 after
  training); so does every loss whose kernel reduces in its own order (``F.nll_loss``);
- every elementwise op and every reduction along a row runs once on the stack; a per-seed ``.mean()``
  is ``.reshape(S, B).mean(-1)``; the seeds' losses are summed before ``backward()``, so each seed's
  parameters receive exactly their own gradient;
- each learner optimizer is one optimizer of the same class and settings (d3rlpy's single-tensor Adam)
  over the stacked parameters: its update is elementwise, so stacking changes no value;
- each seed's learner, buffer and initial weights come from ``baselines.train.setup`` and
  ``build_model``, the calls ``train`` makes; each seed's batches come from its own copy of numpy's
  global state as ``train`` would have left it, so its rows are the per-seed run's rows.

At every learning-curve checkpoint and at the end, the stacked parameters and optimizer states are
written back into each seed's own d3rlpy modules and optimizers (and its grad step set), numpy's global
state is left as the last seed's run leaves it, and torch's as its setup leaves it. The losses are
d3rlpy 2.8.1's and this package's (``DiscreteAWRImpl``, ``DiscreteIQLImpl``, ``DQNImpl``,
``DoubleDQNImpl``, ``DiscreteCQLImpl``, ``MaskedDiscreteBCQImpl``, ``MaskedDiscreteSACImpl``), op for op;
``tests/test_training_identity.py`` checks each against ``train`` (parameters, optimizer states, random
states, checkpoints), which also catches a change of the d3rlpy internals read here (``_encoder._layers``,
``_fc``, ``_target_update_interval``). A learner or configuration not covered (e.g. value-baseline AWR,
an observation scaler, a gradient clip, d3rlpy's ``DiscreteBC``) is trained seed by seed with ``train``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from d3rlpy.algos import DQN, DiscreteCQL, DoubleDQN
from d3rlpy.models.q_functions import MeanQFunctionFactory
from d3rlpy.models.torch.parameters import get_parameter
from d3rlpy.optimizers import OptimizerWrapper
from torch import nn

from baselines.awr import DiscreteAWR
from baselines.bcq import MaskedDiscreteBCQ
from baselines.budgets import Schedule
from baselines.iql import DiscreteIQL
from baselines.legal import ILLEGAL_LOGIT
from baselines.sac import ENTROPY_FRACTION, MaskedDiscreteSAC
from baselines.sampler import FlatReplayBuffer
from baselines.train import build_model, checkpoint_steps, lean_fit_possible, setup, train
from harness_gym.core.actions import N_ACTIONS

__all__ = ["train_seeds"]


class _Unsupported(Exception):
    """This learner or configuration has no batched update here; it is trained seed by seed."""


# -- stacked parameters ----------------------------------------------------------------------------
class _Stack:
    """Tensors of every seed stacked along a leading axis, and the per-seed tensors they stand for."""

    def __init__(self, per_seed: Sequence[Sequence[torch.Tensor]], grad: bool) -> None:
        self.per_seed = [list(tensors) for tensors in per_seed]
        with torch.no_grad():
            self.params = [
                torch.stack([tensors[i] for tensors in self.per_seed]).clone().requires_grad_(grad)
                for i in range(len(self.per_seed[0]))
            ]

    def write_back(self) -> None:
        with torch.no_grad():
            for k, tensors in enumerate(self.per_seed):
                for stacked, own in zip(self.params, tensors, strict=True):
                    own.copy_(stacked[k])

    def copy_from(self, other: _Stack) -> None:
        """``hard_sync``: this stack's parameters set to ``other``'s."""
        with torch.no_grad():
            for mine, theirs in zip(self.params, other.params, strict=True):
                mine.copy_(theirs)


def _linears(net: nn.Module) -> tuple[nn.Linear, nn.Linear]:
    """The two linear layers of a d3rlpy one-hidden-layer MLP head (``_encoder._layers``: Linear, ReLU;
    then ``_fc``), as its ``forward`` runs them."""
    layers = list(getattr(getattr(net, "_encoder", None), "_layers", ()))
    fc = getattr(net, "_fc", None)
    if (
        len(layers) != 2
        or type(layers[0]) is not nn.Linear
        or type(layers[1]) is not nn.ReLU
        or type(fc) is not nn.Linear
    ):
        raise _Unsupported(f"{type(net).__name__}: expected one hidden Linear + ReLU layer and a Linear head")
    return layers[0], fc


class _Net(_Stack):
    """One network kind (Linear, ReLU, Linear) of every seed; ``shared_first`` shares its hidden layer's
    parameters with another stack (d3rlpy BCQ's imitator runs on the Q-function's encoder)."""

    def __init__(
        self, nets: Sequence[nn.Module], grad: bool = True, shared_first: _Net | None = None
    ) -> None:
        pairs = [_linears(net) for net in nets]
        if shared_first is None:
            super().__init__([[a.weight, a.bias, b.weight, b.bias] for a, b in pairs], grad)
        else:
            if any(a is not shared for (a, _), shared in zip(pairs, shared_first.first_layers, strict=True)):
                raise _Unsupported("the hidden layer is not the shared one")
            head = _Stack([[b.weight, b.bias] for _, b in pairs], grad)
            self.per_seed = [[a.weight, a.bias, b.weight, b.bias] for a, b in pairs]
            self.params = [*shared_first.params[:2], *head.params]
        self.first_layers = [a for a, _ in pairs]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(S, B, F) inputs -> (S, B, out), each seed through its own ``F.linear``s."""
        w1, b1, w2, b2 = self.params
        return torch.stack(
            [F.linear(torch.relu(F.linear(x[k], w1[k], b1[k])), w2[k], b2[k]) for k in range(x.shape[0])]
        )


class _Optimizer:
    """One optimizer of every seed: the same optimizer class and settings over the stacked parameters."""

    def __init__(self, wrappers: Sequence[OptimizerWrapper], stacks: Sequence[_Stack]) -> None:
        first = wrappers[0]
        if first._clip_grad_norm or first._lr_scheduler is not None or len(first.optim.param_groups) != 1:
            raise _Unsupported("gradient clipping, learning-rate schedules and parameter groups")
        self.wrappers = wrappers
        pairs: dict[int, tuple[torch.Tensor, list[torch.Tensor]]] = {}
        for stack in stacks:
            for i, stacked in enumerate(stack.params):
                pairs.setdefault(id(stacked), (stacked, [own[i] for own in stack.per_seed]))
        self.pairs = list(pairs.values())
        for k, wrapper in enumerate(wrappers):
            mine = {id(own[k]) for _, own in self.pairs}
            theirs = {id(p) for p in wrapper.optim.param_groups[0]["params"]}
            if mine != theirs:
                raise _Unsupported("the optimizer's parameters are not the stacked networks'")
        self.optim = type(first.optim)([stacked for stacked, _ in self.pairs], **first.optim.defaults)

    def zero_grad(self) -> None:
        self.optim.zero_grad(set_to_none=False)  # d3rlpy's OptimizerWrapper.zero_grad (not compiled)

    def step(self, loss: torch.Tensor) -> None:
        """Backward of the seeds' summed losses, then one optimizer step."""
        loss.sum().backward()
        self.optim.step()

    def write_back(self) -> None:
        for k, wrapper in enumerate(self.wrappers):
            own_state = wrapper.optim.state
            for stacked, own in self.pairs:
                state = self.optim.state.get(stacked)
                if state:
                    own_state[own[k]] = {
                        key: value.clone() if value.dim() == 0 else value[k].clone()
                        for key, value in state.items()
                    }


# -- d3rlpy's loss pieces on (S, B, ...) stacks -------------------------------------------------------
@dataclass(frozen=True)
class _Batch:
    """One step's rows for every seed: (S, B, ...) tensors, as ``TorchMiniBatch`` holds them per seed."""

    observations: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_observations: torch.Tensor
    terminals: torch.Tensor
    intervals: torch.Tensor
    returns_to_go: torch.Tensor | None


def _per_seed_mean(x: torch.Tensor) -> torch.Tensor:
    """``x.mean()`` of each seed's (B, ...) slice."""
    return x.reshape(x.shape[0], -1).mean(-1)


def _pick(values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """d3rlpy's ``pick_value_by_action(values, action, keepdim=True)``: one-hot multiply and sum."""
    one_hot = F.one_hot(action.reshape(action.shape[0], -1), num_classes=values.shape[-1])
    return (values * one_hot.float()).sum(dim=-1, keepdim=True)


def _huber(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """d3rlpy's ``compute_huber_loss`` (beta 1)."""
    diff = target - y
    cond = diff.detach().abs() < 1.0
    return torch.where(cond, 0.5 * diff**2, 1.0 * (diff.abs() - 0.5 * 1.0))


def _td_error(critics: Sequence[_Net], b: _Batch, target: torch.Tensor, gamma: float) -> torch.Tensor:
    """(S,) d3rlpy's ``DiscreteEnsembleQFunctionForwarder.compute_error``: the critics' mean Huber errors
    summed from 0."""
    discount = gamma**b.intervals
    td_sum = torch.zeros(b.observations.shape[0])
    for critic in critics:
        value = _pick(critic(b.observations), b.actions.long())
        y = b.rewards + discount * target * (1 - b.terminals)
        td_sum += _per_seed_mean(_huber(value, y))
    return td_sum


def _legal(x: torch.Tensor) -> torch.Tensor:
    """``baselines.legal.legal_mask`` of (S, B, F + N_ACTIONS) inputs."""
    legal = x[..., -N_ACTIONS:] > 0.5
    return legal | ~legal.any(dim=-1, keepdim=True)


def _normalised(logits: torch.Tensor) -> torch.Tensor:
    """The logits ``torch.distributions.Categorical(logits=...)`` stores."""
    return logits - logits.logsumexp(dim=-1, keepdim=True)


# -- the learners' updates -------------------------------------------------------------------------
class _Learner:
    """Stacked networks and optimizers of one learner kind, and its update for every seed at once."""

    def __init__(self, learners: Sequence[Any]) -> None:
        self.learners = learners
        self.modules = [learner.impl.modules for learner in learners]
        self.config = learners[0].config
        self.stacks: list[_Stack] = []
        self.optimizers: list[_Optimizer] = []

    def net(self, pick: Callable[[Any], nn.Module], grad: bool = True, **kwargs: Any) -> _Net:
        net = _Net([pick(m) for m in self.modules], grad, **kwargs)
        self.stacks.append(net)
        return net

    def optimizer(self, pick: Callable[[Any], OptimizerWrapper], *stacks: _Stack) -> _Optimizer:
        optimizer = _Optimizer([pick(m) for m in self.modules], stacks)
        self.optimizers.append(optimizer)
        return optimizer

    def update(self, b: _Batch, grad_step: int) -> None:
        raise NotImplementedError

    def write_back(self, grad_step: int) -> None:
        for stack in self.stacks:
            stack.write_back()
        for optimizer in self.optimizers:
            optimizer.write_back()
        for learner in self.learners:
            learner.set_grad_step(grad_step)


class _AWR(_Learner):
    """``DiscreteAWRImpl.inner_update`` (per-task advantages, masked softmax; AWR or BC weights)."""

    def __init__(self, learners: Sequence[Any]) -> None:
        super().__init__(learners)
        cfg = self.config
        if cfg.advantage != "per_task" or not cfg.masked:
            raise _Unsupported("AWR with a value baseline or without masks")
        self.policy = self.net(lambda m: m.policy)
        self.optim = self.optimizer(lambda m: m.optim, self.policy)
        self.log_clip = math.log(cfg.weight_clip[0]), math.log(cfg.weight_clip[1])

    def update(self, b: _Batch, grad_step: int) -> None:
        cfg = self.config
        if cfg.weighting == "exp":
            assert b.returns_to_go is not None
            advantage = b.returns_to_go.squeeze(-1)
            weights = torch.exp(torch.clamp(advantage / cfg.beta, *self.log_clip))
        else:
            weights = torch.ones(b.actions.shape[:2])
        self.optim.zero_grad()
        logits = _normalised(self.policy(b.observations))
        logits = _normalised(logits.masked_fill(~(b.observations[..., -N_ACTIONS:] > 0.5), ILLEGAL_LOGIT))
        log_prob = logits.gather(-1, b.actions.long()).squeeze(-1)
        probs = F.softmax(logits, dim=-1)
        entropy = -(torch.clamp(logits, min=torch.finfo(logits.dtype).min) * probs).sum(-1)
        loss = -(weights * log_prob).mean(-1) - cfg.entropy_coef * entropy.mean(-1)
        self.optim.step(loss)


class _IQL(_Learner):
    """``DiscreteIQLImpl.inner_update`` (masked policy)."""

    def __init__(self, learners: Sequence[Any]) -> None:
        super().__init__(learners)
        cfg = self.config
        if not cfg.masked:
            raise _Unsupported("IQL without masks")
        self.critics = [self.net(lambda m, c=c: m.q_funcs[c]) for c in range(cfg.n_critics)]
        self.targets = [self.net(lambda m, c=c: m.targ_q_funcs[c], grad=False) for c in range(cfg.n_critics)]
        self.value = self.net(lambda m: m.value_func)
        self.policy = self.net(lambda m: m.policy)
        self.critic_optim = self.optimizer(lambda m: m.critic_optim, *self.critics, self.value)
        self.policy_optim = self.optimizer(lambda m: m.policy_optim, self.policy)

    def update(self, b: _Batch, grad_step: int) -> None:
        cfg = self.config
        actions = b.actions.long()
        with torch.no_grad():
            q_targ = torch.stack([_pick(t(b.observations), actions) for t in self.targets]).min(dim=0).values
            v_next = self.value(b.next_observations)
        self.critic_optim.zero_grad()
        v = self.value(b.observations)
        diff = q_targ - v
        value_loss = _per_seed_mean((cfg.expectile - (diff < 0.0).float()).abs() * diff**2)
        q_loss = _td_error(self.critics, b, v_next, cfg.gamma)
        self.critic_optim.step(q_loss + value_loss)

        with torch.no_grad():
            weight = torch.exp(cfg.beta * (q_targ - v.detach())).clamp(max=cfg.max_weight).squeeze(-1)
        self.policy_optim.zero_grad()
        logits = _normalised(self.policy(b.observations))
        logits = _normalised(logits.masked_fill(~(b.observations[..., -N_ACTIONS:] > 0.5), ILLEGAL_LOGIT))
        log_prob = logits.gather(-1, actions).squeeze(-1)
        self.policy_optim.step(-(weight * log_prob).mean(-1))

        with torch.no_grad():  # soft_sync(targ_q_funcs, q_funcs, tau)
            for target, critic in zip(self.targets, self.critics, strict=True):
                for p_targ, p in zip(target.params, critic.params, strict=True):
                    p_targ.mul_(1 - cfg.tau)
                    p_targ.add_(cfg.tau * p)


class _QLearner(_Learner):
    """``DQNImpl`` / ``DoubleDQNImpl`` / ``DiscreteCQLImpl`` / ``MaskedDiscreteBCQImpl.inner_update``."""

    def __init__(self, learners: Sequence[Any]) -> None:
        super().__init__(learners)
        cfg, learner = self.config, learners[0]
        if cfg.n_critics != 1 or type(cfg.q_func_factory) is not MeanQFunctionFactory:
            raise _Unsupported("one mean Q-function expected")
        self.kind = type(learner)
        if self.kind is MaskedDiscreteBCQ and not (cfg.masked and cfg.share_encoder):
            raise _Unsupported("BCQ without masks or with its own imitator encoder")
        self.q = self.net(lambda m: m.q_funcs[0])
        self.target = self.net(lambda m: m.targ_q_funcs[0], grad=False)
        stacks: list[_Stack] = [self.q]
        if self.kind is MaskedDiscreteBCQ:
            self.imitator = self.net(lambda m: m.imitator, shared_first=self.q)
            stacks.append(self.imitator)
        self.optim = self.optimizer(lambda m: m.optim, *stacks)
        self.interval = learner.impl._target_update_interval

    def _eligible(self, x: torch.Tensor) -> torch.Tensor:
        """``MaskedDiscreteBCQImpl.eligible``."""
        legal = _legal(x)
        logits = self.imitator(x).masked_fill(~legal, ILLEGAL_LOGIT)
        ratio = logits - logits.max(dim=-1, keepdim=True).values
        return legal & (ratio >= math.log(self.config.action_flexibility))

    def update(self, b: _Batch, grad_step: int) -> None:
        cfg, kind = self.config, self.kind
        self.optim.zero_grad()
        with torch.no_grad():
            next_q = self.target(b.next_observations)
            if kind is DQN:
                best = next_q.argmax(dim=-1)
            elif kind is MaskedDiscreteBCQ:
                online = self.q(b.next_observations)
                best = online.masked_fill(~self._eligible(b.next_observations), -math.inf).argmax(dim=-1)
            else:  # DoubleDQN, DiscreteCQL: the online network's argmax
                best = self.q(b.next_observations).argmax(dim=-1)
            target = _pick(next_q, best)
        loss = _td_error([self.q], b, target, cfg.gamma)
        if kind is DiscreteCQL:  # _compute_conservative_loss
            values = self.q(b.observations)
            logsumexp = torch.logsumexp(values, dim=-1, keepdim=True)
            conservative = _per_seed_mean(logsumexp - _pick(values, b.actions.long()))
            loss = loss + cfg.alpha * conservative
        elif kind is MaskedDiscreteBCQ:  # baselines.bcq.legal_imitation_loss
            legal = _legal(b.observations)
            log_pi = F.log_softmax(self.imitator(b.observations).masked_fill(~legal, ILLEGAL_LOGIT), dim=-1)
            actions = b.actions.long()
            nll = torch.stack([F.nll_loss(log_pi[k], actions[k].view(-1)) for k in range(len(log_pi))])
            squared = torch.where(legal, log_pi**2, torch.zeros_like(log_pi))
            count = legal.reshape(len(legal), -1).sum(-1).clamp(min=1)
            penalty = cfg.beta * squared.reshape(len(squared), -1).sum(-1) / count
            loss = loss + (nll + penalty)
        self.optim.step(loss)
        if grad_step % self.interval == 0:
            self.target.copy_from(self.q)


class _SAC(_Learner):
    """``MaskedDiscreteSACImpl``'s update: d3rlpy's ``DiscreteSACImpl.inner_update`` over legal actions."""

    def __init__(self, learners: Sequence[Any]) -> None:
        super().__init__(learners)
        cfg = self.config
        if not cfg.masked or self.modules[0].temp_optim is None:
            raise _Unsupported("SAC without masks or with a fixed temperature")
        if type(cfg.q_func_factory) is not MeanQFunctionFactory:
            raise _Unsupported("SAC with distributional critics")
        self.critics = [self.net(lambda m, c=c: m.q_funcs[c]) for c in range(cfg.n_critics)]
        self.targets = [self.net(lambda m, c=c: m.targ_q_funcs[c], grad=False) for c in range(cfg.n_critics)]
        self.policy = self.net(lambda m: m.policy)
        self.log_temp = _Stack([[get_parameter(m.log_temp)] for m in self.modules], grad=True)
        self.stacks.append(self.log_temp)
        self.critic_optim = self.optimizer(lambda m: m.critic_optim, *self.critics)
        self.actor_optim = self.optimizer(lambda m: m.actor_optim, self.policy)
        self.temp_optim = self.optimizer(lambda m: m.temp_optim, self.log_temp)
        self.interval = learners[0].impl._target_update_interval

    def _pi(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        legal = _legal(x)
        log_pi = F.log_softmax(self.policy(x).masked_fill(~legal, ILLEGAL_LOGIT), dim=-1)
        return log_pi, log_pi.exp(), legal

    def _temp(self) -> torch.Tensor:
        return self.log_temp.params[0].exp()

    def update(self, b: _Batch, grad_step: int) -> None:
        self.critic_optim.zero_grad()
        with torch.no_grad():  # compute_target
            log_pi, pi, legal = self._pi(b.next_observations)
            target = torch.stack([t(b.next_observations) for t in self.targets]).min(dim=0).values
            terms = pi * (target - self._temp() * log_pi)
            value = torch.where(legal, terms, torch.zeros_like(terms)).sum(dim=-1)
        self.critic_optim.step(_td_error(self.critics, b, value.unsqueeze(-1), self.config.gamma))

        self.actor_optim.zero_grad()
        with torch.no_grad():
            q = torch.stack([c(b.observations) for c in self.critics]).min(dim=0).values
        log_pi, pi, legal = self._pi(b.observations)
        self.temp_optim.zero_grad()  # _update_temp
        terms = pi.detach() * log_pi.detach()
        expected_log_pi = torch.where(legal, terms, torch.zeros_like(terms)).sum(dim=-1)
        n_legal = legal.sum(dim=-1).clamp(min=1).to(log_pi.dtype)
        temp_target = expected_log_pi + ENTROPY_FRACTION * torch.log(n_legal)
        self.temp_optim.step(-_per_seed_mean(self.log_temp.params[0].exp() * temp_target.unsqueeze(-1)))
        terms = pi * (self._temp() * log_pi - q)
        actor_loss = torch.where(legal, terms, torch.zeros_like(terms)).sum(dim=-1).mean(-1)
        self.actor_optim.step(actor_loss)
        if grad_step % self.interval == 0:
            for target, critic in zip(self.targets, self.critics, strict=True):
                target.copy_from(critic)


_UPDATES: list[tuple[tuple[type, ...], type[_Learner]]] = [
    ((DiscreteAWR,), _AWR),
    ((DiscreteIQL,), _IQL),
    ((MaskedDiscreteSAC,), _SAC),
    ((DQN, DoubleDQN, DiscreteCQL, MaskedDiscreteBCQ), _QLearner),
]


def _stacked(learners: Sequence[Any]) -> _Learner:
    kind = type(learners[0])
    cfg = learners[0].config
    if cfg.observation_scaler is not None or cfg.action_scaler is not None or cfg.reward_scaler is not None:
        raise _Unsupported("scalers")
    for kinds, update in _UPDATES:
        if kind in kinds:
            return update(learners)
    raise _Unsupported(f"no batched update for {kind.__name__}")


def train_seeds(
    algo: str,
    dataset: Any,
    seeds: Sequence[int],
    n_steps: int | None = None,
    schedule: Schedule | None = None,
    curve_points: int = 0,
    on_checkpoint: Callable[[int, Any, int], None] | None = None,
) -> list[Any]:
    """``[train(algo, dataset, seed=s, ...) for s in seeds]``, the seeds trained together (module doc).

    ``on_checkpoint(seed, learner, step)`` is called for every seed, in ``seeds`` order, after each of
    ``checkpoint_steps(total, curve_points)``; it must leave the global random states as it found them.
    """
    if not seeds:
        raise ValueError("no seeds to train")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {list(seeds)}")
    runs, streams = [], []
    for seed in seeds:
        run = setup(algo, dataset, seed, n_steps=n_steps, schedule=schedule)
        if not lean_fit_possible(run):
            runs = []
            break
        build_model(run.learner, run.buffer)
        runs.append(run)
        streams.append(np.random.RandomState())
        streams[-1].set_state(np.random.get_state())  # the state this seed's steps would draw from
    try:
        if not runs:
            raise _Unsupported("a buffer d3rlpy's fit must sample")
        stacked = _stacked([run.learner for run in runs])
    except _Unsupported:
        callbacks = [None if on_checkpoint is None else _for_seed(on_checkpoint, s) for s in seeds]
        return [
            train(
                algo,
                dataset,
                seed=s,
                n_steps=n_steps,
                schedule=schedule,
                curve_points=curve_points,
                on_checkpoint=c,
            )
            for s, c in zip(seeds, callbacks, strict=True)
        ]
    buffer, total = runs[0].buffer, runs[0].total
    assert isinstance(buffer, FlatReplayBuffer) and all(r.buffer is buffer and r.total == total for r in runs)
    rows = buffer.tensors()
    returns_to_go = rows.get("returns_to_go") if runs[0].learner.need_returns_to_go else None
    n, size = buffer.transition_count, stacked.config.batch_size
    marks = (
        set(checkpoint_steps(total, curve_points))
        if on_checkpoint is not None and curve_points > 0
        else set()
    )
    for step in range(1, total + 1):
        index = torch.from_numpy(np.stack([stream.randint(n, size=size) for stream in streams]))
        batch = _Batch(
            observations=rows["observations"][index],
            actions=rows["actions"][index],
            rewards=rows["rewards"][index],
            next_observations=rows["next_observations"][index],
            terminals=rows["terminals"][index],
            intervals=rows["intervals"][index],
            returns_to_go=None if returns_to_go is None else returns_to_go[index],
        )
        stacked.update(batch, step - 1)
        if step in marks:
            assert on_checkpoint is not None
            stacked.write_back(step)
            for seed, run in zip(seeds, runs, strict=True):
                on_checkpoint(seed, run.learner, step)
    stacked.write_back(total)
    np.random.set_state(streams[-1].get_state())
    return [run.learner for run in runs]


def _for_seed(on_checkpoint: Callable[[int, Any, int], None], seed: int) -> Callable[[Any, int], None]:
    return lambda learner, step: on_checkpoint(seed, learner, step)
