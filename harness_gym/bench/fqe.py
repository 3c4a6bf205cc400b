"""Fitted Q evaluation (FQE; Le et al. 2019) of masked, possibly stochastic policies on a harness buffer.

Iteration k regresses Q_k(s, a) onto the fixed target r + gamma * sum_a' pi(a' | s') Q_{k-1}(s', a') over
every logged transition, the sum running over the policy's own distribution on the legal actions of s'
(nothing is bootstrapped after an episode's last step), starting from Q_{k-1}'s weights. With gamma = 1,
``FQESchedule.iterations`` backups, at least as many as the longest episode has steps, carry the terminal
reward back to the first step.

Why not d3rlpy's ``DiscreteFQE`` (d3rlpy 2.8.1, ``d3rlpy/ope``): its target is Q'(s',
``algo.predict_best_action(s')``), the algorithm's unmasked argmax, so it evaluates neither the masked policy
that acts (``harness_gym.evaluation.d3rlpy_policy``) nor a sampling one, which needs the expectation over pi.
Its minibatches carry no row index and no next-state mask, so an adapter could hand it pi(. | s') only by
re-deriving the mask from the observation inside a subclassed update, and its replay sampler draws transitions
one at a time in Python (milliseconds per step) while the bench fits one FQE per acting policy and seed (~48
per setting). Here:

- the buffer is reduced once to its distinct states (observation, legal mask) and the empirical
  model of its steps (``FQEData``): harness observations are counters and flags, so a buffer of
  thousands of steps holds tens of distinct states (46 to 72 in the eight settings), and since the
  targets are fixed within an iteration, the weighted regression on state x action cells minimises the
  very least-squares loss of FQE over all steps, in full batches;
- the policy's probabilities are given per distinct state, so the target is the exact expectation;
- the FQEs of several policies are fitted at once, one independent network per policy (its own seed,
  parameters and Adam moments: the result does not depend on which policies share the call).

Each network (one hidden layer, Adam) has the legal-action mask appended to its input
(``harness_gym.core.state.with_mask``), as the masked learners see it.

Budget (``FQESchedule``)
------------------------
The bench's off-policy evaluation fits one FQE per acting policy and seed (``harness_gym.bench.fqe``), ~48 per
setting, so its budget must be small; it can be, because FQE regresses on the buffer's distinct
state x action cells (tens of states) in full batches rather than on minibatches of steps.

- **12 backups** (``iterations``): one per step of the longest possible episode (every domain's
  ``max_steps`` is 12), so the terminal reward reaches the first step whatever the policy; with
  gamma = 1 fewer backups leave the start-state value short by construction.
- **20 Adam steps per backup at 1e-2** (240 gradient steps in all): on the Planning buffer (46
  states), the start-state values of the policies inside the buffer's support (AWR, BC, IQL, both
  modes) agree within 0.01 with a 12 x 2,000-step fit at 1e-3; 10 steps per backup left one of them
  0.12 off. The rate is 10x the learners' because every step is a full batch of an exact, fixed target.
- **Network**: one hidden layer of ``hidden_units`` = 64, the width every ``baselines`` learner has
  (``baselines.budgets.Schedule``), seeded with the policy's training seed; ``gamma`` = 1, the learners'
  discount (episodes of at most 12 steps with a terminal reward).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from harness_gym.core.state import with_mask

__all__ = ["FQEData", "FQESchedule", "fit_fqe"]


@dataclass(frozen=True)
class FQESchedule:
    """Fitted Q evaluation of every trained policy (``harness_gym.bench.fqe``)."""

    iterations: int = 12
    """Bellman backups: the longest possible episode (``max_steps``)."""
    steps_per_iteration: int = 20
    """Full-batch Adam steps fitting each backup's fixed target."""
    learning_rate: float = 1e-2
    hidden_units: int = 64
    """Width of the one hidden layer."""
    gamma: float = 1.0
    """Discount of the backups."""

    def __post_init__(self) -> None:
        if (
            min(self.iterations, self.steps_per_iteration, self.hidden_units) < 1
            or not self.learning_rate > 0
        ):
            raise ValueError(f"iterations and steps_per_iteration must be >= 1, learning_rate > 0: {self}")


@dataclass(frozen=True)
class FQEData:
    """A buffer as its distinct states and the empirical model of its logged transitions.

    FQE's loss over all N logged steps, sum_j (Q(s_j, a_j) - r_j - gamma V(s'_j))^2 / N, equals (up to a
    constant that does not depend on Q) sum_{s,a} W(s, a) (Q(s, a) - R(s, a) - gamma sum_s' T(s' | s, a)
    V(s'))^2, with W the share of steps taken at (s, a), R their mean reward and T the share of them
    that moved to s' (terminal steps move nowhere). Fitting to that is the same regression on S x A
    cells instead of N rows."""

    states: np.ndarray
    """(S, F + A) distinct observations with their legal-action mask appended."""
    weight: np.ndarray
    """(S, A) share of the logged steps taken at (s, a); 0 where the buffer never took a at s."""
    reward: np.ndarray
    """(S, A) mean reward of those steps."""
    transition: np.ndarray
    """(S, A, S) share of those steps that continued to each next state (< 1 where some ended)."""

    @classmethod
    def from_rows(
        cls,
        row_state: np.ndarray,
        observations: np.ndarray,
        masks: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        episode_lengths: np.ndarray,
    ) -> FQEData:
        """Steps episode by episode -> the model. ``row_state`` indexes the distinct states, given as
        ``observations`` (S, F) with their legal-action ``masks`` (S, A)."""
        row_state = np.asarray(row_state, dtype=np.int64)
        actions = np.asarray(actions, dtype=np.int64)
        n, (n_states, n_actions) = row_state.shape[0], np.asarray(masks).shape
        lengths = np.asarray(episode_lengths, dtype=np.int64)
        if lengths.sum() != n or (lengths < 1).any():
            raise ValueError(f"episode lengths sum to {lengths.sum()}, expected {n} steps, each >= 1")
        for name, arr in (("actions", actions), ("rewards", rewards)):
            if np.asarray(arr).shape != (n,):
                raise ValueError(f"{name} has shape {np.asarray(arr).shape}, expected ({n},)")
        if (
            row_state.min() < 0
            or row_state.max() >= n_states
            or actions.min() < 0
            or actions.max() >= n_actions
        ):
            raise ValueError(f"states must lie in [0, {n_states}) and actions in [0, {n_actions})")
        last = np.zeros(n, dtype=bool)
        last[np.cumsum(lengths) - 1] = True
        counts = np.zeros((n_states, n_actions))
        np.add.at(counts, (row_state, actions), 1.0)
        reward = np.zeros((n_states, n_actions))
        np.add.at(reward, (row_state, actions), np.asarray(rewards, dtype=np.float64))
        transition = np.zeros((n_states, n_actions, n_states))
        going = np.flatnonzero(~last)
        np.add.at(transition, (row_state[going], actions[going], row_state[going + 1]), 1.0)
        seen = np.maximum(counts, 1.0)
        return cls(
            states=with_mask(observations, masks),
            weight=counts / n,
            reward=reward / seen,
            transition=transition / seen[..., None],
        )


class _Networks(torch.nn.Module):
    """P independent one-hidden-layer MLPs evaluated on the same inputs (batched matrix products)."""

    def __init__(self, n_in: int, hidden: int, n_out: int, seeds: Sequence[int]) -> None:
        super().__init__()
        layers = []
        for seed in seeds:  # each member initialised as torch.nn.Linear would, from its own seed
            with torch.random.fork_rng():
                torch.manual_seed(seed)
                layers.append((torch.nn.Linear(n_in, hidden), torch.nn.Linear(hidden, n_out)))
        self.w1 = torch.nn.Parameter(torch.stack([a.weight.T for a, _ in layers]).detach().clone())
        self.b1 = torch.nn.Parameter(torch.stack([a.bias[None] for a, _ in layers]).detach().clone())
        self.w2 = torch.nn.Parameter(torch.stack([b.weight.T for _, b in layers]).detach().clone())
        self.b2 = torch.nn.Parameter(torch.stack([b.bias[None] for _, b in layers]).detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(S, F) -> (P, S, A)."""
        h = torch.relu(torch.matmul(x, self.w1) + self.b1)
        return torch.matmul(h, self.w2) + self.b2


def fit_fqe(
    data: FQEData,
    probs: np.ndarray,
    seeds: Sequence[int],
    schedule: FQESchedule | None = None,
) -> np.ndarray:
    """Q^pi of P policies at every distinct state: (P, S, A), from ``probs`` (P, S, A), pi(a | state).

    ``seeds`` (one per policy) initialise the networks; the fit is ``schedule.iterations`` backups of
    ``schedule.steps_per_iteration`` full-batch Adam steps each."""
    s = schedule or FQESchedule()
    pi = torch.as_tensor(np.asarray(probs), dtype=torch.float32)
    n_states, n_actions = data.weight.shape
    if pi.shape[1:] != (n_states, n_actions) or pi.ndim != 3 or len(seeds) != pi.shape[0]:
        raise ValueError(
            f"probs must be (P, {n_states}, {n_actions}) with one seed per policy, got {tuple(pi.shape)}"
        )
    net = _Networks(data.states.shape[1], s.hidden_units, n_actions, seeds)
    optim = torch.optim.Adam(net.parameters(), lr=s.learning_rate)
    x = torch.as_tensor(data.states)
    weight = torch.as_tensor(data.weight, dtype=torch.float32)
    reward = torch.as_tensor(data.reward, dtype=torch.float32)
    transition = torch.as_tensor(data.transition, dtype=torch.float32).reshape(n_states * n_actions, n_states)
    for _ in range(s.iterations):
        with torch.no_grad():
            v = (pi * net(x)).sum(dim=-1)  # (P, S): the policy's value of every state under Q_{k-1}
            target = reward + s.gamma * (v @ transition.T).reshape(-1, n_states, n_actions)
        for _ in range(s.steps_per_iteration):
            loss = (weight * (net(x) - target) ** 2).sum()
            optim.zero_grad()
            loss.backward()
            optim.step()
    with torch.no_grad():
        q = net(x).numpy().astype(np.float64)
    if not np.isfinite(q).all():
        raise RuntimeError("FQE diverged (non-finite Q-values): lower FQESchedule.learning_rate")
    return q
