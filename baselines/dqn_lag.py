"""DQN-Lag: a discrete offline Q-learner under a token-cost limit, with a PID-controlled Lagrange multiplier.

The constrained problem is ``max_pi E[G]`` subject to ``E[episode cost] <= cost_limit``, where a step's
cost is the tokens its executor calls spent, in thousands (``info["tokens"] / 1000``: the unit of
``gym.make``'s ``token_price``). Its Lagrangian relaxation ``max_pi min_{lam >= 0} E[G] - lam * (E[cost]
- cost_limit)`` is solved by alternating (OSRL, Liu et al., "Datasets and Benchmarks for Offline Safe
Reinforcement Learning", DMLR 2024: BCQ-Lag and its ``LagrangianPIDController``; the PID Lagrangian of
Stooke, Achiam and Abbeel, "Responsive Safety in Reinforcement Learning by PID Lagrangian Methods", ICML
2020):

- **two critics**, a reward Q_r and a cost Q_c, each regressed by a TD loss on the transitions of the
  buffer, with hard-updated target copies (Mnih et al. 2015) and a Double-DQN target action (van Hasselt
  et al. 2016):

      a* = argmax_{a legal at s'} Q_r(s', a) - lam * Q_c(s', a)        (online networks)
      L_r = (Q_r(s, a) - [r + gamma * (1 - done) * Q_r_targ(s', a*)])^2
      L_c = (Q_c(s, a) - [c + gamma * (1 - done) * Q_c_targ(s', a*)])^2

  ``r`` is the price-0 reward (G at the last step), ``c`` the step's cost: the two are kept apart, as
  DSRL's datasets keep reward and cost apart;
- **the policy**, greedy on ``Q_r - lam * Q_c`` over the legal actions (illegal ones never chosen);
- **the multiplier**, after every gradient step, from a PID controller on the error ``e = J_c -
  cost_limit``, where ``J_c`` is the estimated episode cost: the mean of ``Q_c(s0, pi(s0))`` over the
  buffer's first states. OSRL's controller, term for term::

      I   <- max(0, I + e)
      lam <- max(0, kp * max(0, e) + ki * I + kd * max(0, e - e_prev))

  so the multiplier rises while the estimated cost exceeds the limit and falls (through the integral)
  once it is below.

Budgets are in gradient steps (``baselines.budgets``: 1,000 steps, batch 256, one hidden layer of 64,
Adam 1e-3, gamma 1, 20 hard target updates per run), as for every other learner here. The PID gains are
OSRL's BCQ-Lag defaults (kp 0.1, ki 0.003, kd 0.001); they were set for OSRL's tasks, whose costs and
returns are larger than a harness episode's (an assumption that they carry over; not tuned here).

Per-step costs come from the dataset's per-step token arrays (``harness_gym.datasets.pricing``), which
chat-LLM datasets store; a simulated-executor dataset has none yet and is refused, naming them. The
registry entry (``dqn-lag``) is ``baselines.algorithms.LagrangianLearner``; it is not in the bench's
default algorithms, whose buffers carry no per-step tokens yet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from baselines.budgets import QSchedule, Schedule

__all__ = ["DQNLag", "DQNLagConfig", "PIDLagrangian", "Transitions", "fit", "transitions"]


# -- configuration ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DQNLagConfig:
    """Every number of a run; defaults from ``baselines.budgets`` and OSRL (see the module doc)."""

    cost_limit: float = 1.0
    """Mean executor tokens per episode allowed, in thousands (1.0: 1,000 tokens)."""
    n_steps: int = Schedule.n_steps
    """Gradient steps of a run."""
    batch_size: int = Schedule.batch_size
    hidden_units: int = Schedule.hidden_units
    gamma: float = Schedule.gamma
    """No discount: episodes of at most 12 steps, G and the tokens are what is evaluated."""
    learning_rate: float = QSchedule.learning_rate
    target_updates: int = 20
    """Hard target refreshes per run (``Schedule.target_update_interval``)."""
    kp: float = 0.1
    ki: float = 0.003
    kd: float = 0.001
    """PID gains of the multiplier (OSRL's BCQ-Lag defaults)."""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.cost_limit) and self.cost_limit >= 0):
            raise ValueError(f"cost_limit must be a finite number >= 0, got {self.cost_limit}")
        if min(self.n_steps, self.batch_size, self.hidden_units, self.target_updates) < 1:
            raise ValueError(f"n_steps, batch_size, hidden_units and target_updates must be >= 1: {self}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if min(self.kp, self.ki, self.kd) < 0:
            raise ValueError(f"PID gains must be >= 0, got {self.kp}, {self.ki}, {self.kd}")

    @property
    def target_interval(self) -> int:
        return max(1, self.n_steps // self.target_updates)


# -- the multiplier --------------------------------------------------------------------------------
@dataclass
class PIDLagrangian:
    """OSRL's ``LagrangianPIDController``: the multiplier from the error ``cost - limit``."""

    kp: float
    ki: float
    kd: float
    limit: float
    integral: float = 0.0
    previous: float = 0.0
    multiplier: float = 0.0

    def update(self, cost: float) -> float:
        """The multiplier after observing the estimated episode ``cost``."""
        error = cost - self.limit
        rate = max(0.0, error - self.previous)
        self.integral = max(0.0, self.integral + error)
        self.previous = error
        self.multiplier = max(0.0, self.kp * max(0.0, error) + self.ki * self.integral + self.kd * rate)
        return self.multiplier


# -- data ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Transitions:
    """A buffer as flat arrays: ``observations`` (N, d), ``actions`` (N,), ``rewards`` and ``costs``
    (N,), ``next_observations`` (N, d), ``next_masks`` (N, A) legal actions at s', ``dones`` (N,) and
    ``starts`` (E, d) / ``start_masks`` (E, A): every episode's first observation and its legal actions."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    costs: np.ndarray
    next_observations: np.ndarray
    next_masks: np.ndarray
    dones: np.ndarray
    starts: np.ndarray
    start_masks: np.ndarray


def transitions(dataset: Any) -> Transitions:
    """A harness-gym Minari dataset as ``Transitions``: rewards at price 0 (G at the last step), costs
    the per-step tokens / 1000 (``harness_gym.datasets.pricing``; refused without them)."""
    from harness_gym.datasets.pricing import episode_rewards, step_tokens

    parts: dict[str, list[np.ndarray]] = {name: [] for name in Transitions.__dataclass_fields__}
    for ep in dataset.iterate_episodes():
        obs = np.asarray(ep.observations, dtype=np.float32)
        masks = np.asarray(ep.infos["action_mask"], dtype=bool)
        done = np.zeros(len(ep.actions), dtype=bool)
        done[-1] = True  # submitted or out of steps: the episode is scored and nothing follows
        parts["observations"].append(obs[:-1])
        parts["actions"].append(np.asarray(ep.actions, dtype=np.int64))
        parts["rewards"].append(episode_rewards(ep.infos, 0.0))
        parts["costs"].append(step_tokens(ep.infos) / 1000)
        parts["next_observations"].append(obs[1:])
        parts["next_masks"].append(masks[1:])
        parts["dones"].append(done)
        parts["starts"].append(obs[:1])
        parts["start_masks"].append(masks[:1])
    return Transitions(**{name: np.concatenate(arrays) for name, arrays in parts.items()})


# -- the learner -----------------------------------------------------------------------------------
def mlp(n_in: int, n_out: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


@dataclass
class DQNLag:
    """Trained critics and multiplier; acts greedily on ``Q_r - lam * Q_c`` over legal actions."""

    q_reward: nn.Module
    q_cost: nn.Module
    multiplier: float
    history: list[dict[str, float]] = field(default_factory=list)
    """Per gradient step: ``multiplier`` (after the update), ``cost`` (estimated episode cost),
    ``action`` (the greedy action at the first start state, before the update)."""
    name: str = "dqn-lag"

    def scores(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(obs, dtype=np.float32).reshape(1, -1))
            return (self.q_reward(x) - self.multiplier * self.q_cost(x)).numpy()[0]

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """The legal action of highest ``Q_r - lam * Q_c``."""
        scores = self.scores(obs)
        return int(np.argmax(np.where(np.asarray(mask) > 0, scores, -np.inf)))

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        probs = np.zeros(len(mask))
        probs[self.act(obs, mask)] = 1.0
        return probs

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for net in (self.q_reward, self.q_cost):
            for key, tensor in net.state_dict().items():
                digest.update(key.encode() + tensor.detach().numpy().tobytes())
        digest.update(np.float64(self.multiplier).tobytes())
        return digest.hexdigest()


def greedy(q_r: torch.Tensor, q_c: torch.Tensor, multiplier: float, legal: torch.Tensor) -> torch.Tensor:
    """argmax over legal actions of ``q_r - multiplier * q_c`` (a row without a legal action: all)."""
    legal = legal | ~legal.any(dim=1, keepdim=True)
    return (q_r - multiplier * q_c).masked_fill(~legal, -torch.inf).argmax(dim=1)


def fit(
    data: Transitions,
    config: DQNLagConfig,
    *,
    seed: int,
    on_checkpoint: Callable[[DQNLag, int], None] | None = None,
    checkpoints: int = 0,
) -> DQNLag:
    """Train on ``data`` for ``config.n_steps`` gradient steps; global random states are left as they were.
    ``on_checkpoint(model, step)`` at ``checkpoints`` evenly spaced steps, the last at the end."""
    n, dim = data.observations.shape
    n_actions = data.next_masks.shape[1]
    rng = np.random.default_rng(seed)
    as_t = {name: torch.as_tensor(getattr(data, name)) for name in Transitions.__dataclass_fields__}
    obs, next_obs, starts = (as_t[k].float() for k in ("observations", "next_observations", "starts"))
    actions, legal_next, start_legal = (
        as_t["actions"].long(),
        as_t["next_masks"].bool(),
        as_t["start_masks"].bool(),
    )
    rewards, costs, dones = (as_t[k].float() for k in ("rewards", "costs", "dones"))
    marks = (
        {round(config.n_steps * (i + 1) / checkpoints) for i in range(checkpoints)} if checkpoints else set()
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        q_r, q_c = mlp(dim, n_actions, config.hidden_units), mlp(dim, n_actions, config.hidden_units)
        targ_r, targ_c = mlp(dim, n_actions, config.hidden_units), mlp(dim, n_actions, config.hidden_units)
        targ_r.load_state_dict(q_r.state_dict())
        targ_c.load_state_dict(q_c.state_dict())
        optim = torch.optim.Adam([*q_r.parameters(), *q_c.parameters()], lr=config.learning_rate)
        pid = PIDLagrangian(config.kp, config.ki, config.kd, config.cost_limit)
        model = DQNLag(q_r, q_c, 0.0)
        for step in range(1, config.n_steps + 1):
            idx = torch.as_tensor(rng.integers(n, size=config.batch_size))
            lam = pid.multiplier
            with torch.no_grad():
                a_next = greedy(q_r(next_obs[idx]), q_c(next_obs[idx]), lam, legal_next[idx]).unsqueeze(1)
                keep = config.gamma * (1.0 - dones[idx])
                y_r = rewards[idx] + keep * targ_r(next_obs[idx]).gather(1, a_next).squeeze(1)
                y_c = costs[idx] + keep * targ_c(next_obs[idx]).gather(1, a_next).squeeze(1)
            a = actions[idx].unsqueeze(1)
            loss_r = ((q_r(obs[idx]).gather(1, a).squeeze(1) - y_r) ** 2).mean()
            loss_c = ((q_c(obs[idx]).gather(1, a).squeeze(1) - y_c) ** 2).mean()
            optim.zero_grad()
            (loss_r + loss_c).backward()
            optim.step()
            if step % config.target_interval == 0:
                targ_r.load_state_dict(q_r.state_dict())
                targ_c.load_state_dict(q_c.state_dict())
            with torch.no_grad():  # the estimated episode cost of the current greedy policy
                qr0, qc0 = q_r(starts), q_c(starts)
                a0 = greedy(qr0, qc0, lam, start_legal)
                cost = float(qc0.gather(1, a0.unsqueeze(1)).mean())
            model.multiplier = pid.update(cost)
            model.history.append({"multiplier": model.multiplier, "cost": cost, "action": float(a0[0])})
            if step in marks and on_checkpoint is not None:
                on_checkpoint(model, step)
    return model
