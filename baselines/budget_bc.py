"""BC-Budget: one behaviour-cloning policy told how many tokens it may still spend and which G to aim for.

Outcome-conditioned supervised learning (RvS: Emmons et al., "RvS: What is Essential for Offline RL via
Supervised Learning?", ICLR 2022) with the two conditioning targets of the Constrained Decision
Transformer (CDT: Liu et al., "Constrained Decision Transformer for Offline Safe Reinforcement Learning",
ICML 2023), on the current state only, as RvS does, instead of CDT's transformer over the history. Each
action of the buffer is labelled in hindsight with what its episode went on to spend and score:

    cost_to_go_t = executor tokens the episode spent from step t on (step t's own call included)
    g_target     = the episode's G

and a network learns ``p(a | s, cost_to_go, g_target)`` by cross-entropy over the legal actions (an
illegal action is out of the softmax). One training run serves every budget: told a budget of ``B``
tokens per episode, the policy plays

    argmax_{a legal} p(a | s, B - spent, g*(B))

where ``spent`` is read off the observation's ``tokens_spent`` feature (MDP v2: tokens so far /
``TOKENS_SCALE``) and ``g*(B)`` is the highest G of a buffer episode that spent at most ``B`` tokens
(the best outcome the data shows to be reachable within the budget, as CDT takes its target returns
from the dataset; the cheapest episode's G where none fits). Tokens enter the network in units of
``TOKENS_SCALE``, as the observation shows them.

Budgets are ``baselines.budgets``' (1,000 gradient steps, batch 256, one hidden layer of 64, Adam 1e-3 as
BC's), as for every other learner here. The default budget is the buffer's mean
tokens per episode (a stated rule; ``BudgetBC.with_budget`` plays the same model at any other). Per-step
tokens come from the dataset (``harness_gym.datasets.pricing``: MDP v2 and chat-LLM datasets store
them); the observation must be MDP v2's, which shows the tokens spent. Anything else is refused, naming
what is missing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from baselines.budgets import AWRSchedule, Schedule
from harness_gym.core.state import LAYOUTS, TOKENS_SCALE

__all__ = ["BudgetBC", "BudgetBCConfig", "Conditioned", "conditioned", "fit"]

_SPENT = LAYOUTS["v2"].index("tokens_spent")
_WIDTH = len(LAYOUTS["v2"])


@dataclass(frozen=True)
class BudgetBCConfig:
    """Every number of a run; defaults from ``baselines.budgets``."""

    n_steps: int = Schedule.n_steps
    batch_size: int = Schedule.batch_size
    hidden_units: int = Schedule.hidden_units
    learning_rate: float = AWRSchedule.learning_rate
    """Adam rate of the policy (the BC rate of ``baselines.budgets``)."""

    def __post_init__(self) -> None:
        if min(self.n_steps, self.batch_size, self.hidden_units) < 1:
            raise ValueError(f"n_steps, batch_size and hidden_units must be >= 1: {self}")
        if not (np.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a finite number > 0, got {self.learning_rate}")


# -- data ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conditioned:
    """A buffer's actions with their hindsight targets: ``observations`` (N, d), ``masks`` (N, A) legal
    actions, ``actions`` (N,), ``cost_to_go`` and ``g_target`` (N,); and per episode its ``totals``
    (tokens spent) and ``returns`` (G), from which the evaluation's targets are read."""

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    cost_to_go: np.ndarray
    g_target: np.ndarray
    totals: np.ndarray
    returns: np.ndarray


def conditioned(episodes: Any) -> Conditioned:
    """The hindsight-labelled actions of ``episodes`` (a Minari dataset, or objects with
    ``observations``, ``actions`` and ``infos``); MDP v2 observations and per-step tokens required."""
    from harness_gym.datasets.pricing import step_tokens

    parts: dict[str, list[np.ndarray]] = {name: [] for name in Conditioned.__dataclass_fields__}
    source = episodes.iterate_episodes() if hasattr(episodes, "iterate_episodes") else episodes
    for ep in source:
        obs = np.asarray(ep.observations, dtype=np.float32)
        if obs.shape[1] != _WIDTH:
            raise ValueError(
                f"bc-budget reads the tokens spent from MDP v2's observation ({_WIDTH} features); this "
                f"dataset's has {obs.shape[1]} (collect with --obs-layout v2)"
            )
        tokens = step_tokens(ep.infos).astype(np.float64)
        g = float(np.asarray(ep.infos["G"])[-1])
        parts["observations"].append(obs[:-1])
        parts["masks"].append(np.asarray(ep.infos["action_mask"], dtype=bool)[:-1])
        parts["actions"].append(np.asarray(ep.actions, dtype=np.int64))
        parts["cost_to_go"].append(np.cumsum(tokens[::-1])[::-1])
        parts["g_target"].append(np.full(len(tokens), g))
        parts["totals"].append(np.asarray([tokens.sum()]))
        parts["returns"].append(np.asarray([g]))
    if not parts["actions"]:
        raise ValueError("bc-budget needs at least one episode")
    return Conditioned(**{name: np.concatenate(arrays) for name, arrays in parts.items()})


def best_reachable(totals: np.ndarray, returns: np.ndarray, budget: float) -> float:
    """The highest G of an episode that spent at most ``budget`` tokens; the cheapest episode's G if
    none did."""
    within = totals <= budget
    return float(returns[within].max() if within.any() else returns[np.argmin(totals)])


# -- the policy ------------------------------------------------------------------------------------
def _inputs(obs: np.ndarray, cost_to_go: np.ndarray, g_target: np.ndarray) -> torch.Tensor:
    extra = np.stack([np.maximum(cost_to_go, 0.0) / TOKENS_SCALE, g_target], axis=-1)
    return torch.as_tensor(np.concatenate([obs, extra], axis=-1), dtype=torch.float32)


@dataclass
class BudgetBC:
    """A trained network and the buffer's outcomes; acts greedily for ``budget`` tokens per episode."""

    net: nn.Module
    totals: np.ndarray
    returns: np.ndarray
    budget: float
    name: str = "bc-budget"

    def with_budget(self, budget: float) -> BudgetBC:
        """The same model playing for another budget (tokens per episode)."""
        if not (np.isfinite(budget) and budget >= 0):
            raise ValueError(f"budget must be a finite number of tokens >= 0, got {budget!r}")
        return replace(self, budget=float(budget))

    def logits(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32).reshape(1, -1)
        if obs.shape[1] != _WIDTH:
            raise ValueError(f"bc-budget plays MDP v2 observations ({_WIDTH} features), got {obs.shape[1]}")
        left = self.budget - float(obs[0, _SPENT]) * TOKENS_SCALE
        target = best_reachable(self.totals, self.returns, self.budget)
        with torch.no_grad():
            return self.net(_inputs(obs, np.asarray([left]), np.asarray([target]))).numpy()[0]

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """The legal action the network finds likeliest for the budget left and the target G."""
        return int(np.argmax(np.where(np.asarray(mask) > 0, self.logits(obs), -np.inf)))

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        probs = np.zeros(len(mask))
        probs[self.act(obs, mask)] = 1.0
        return probs

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for key, tensor in self.net.state_dict().items():
            digest.update(key.encode() + tensor.detach().numpy().tobytes())
        digest.update(np.float64(self.budget).tobytes())
        return digest.hexdigest()


def fit(
    data: Conditioned,
    config: BudgetBCConfig,
    *,
    seed: int,
    budget: float | None = None,
    on_checkpoint: Callable[[BudgetBC, int], None] | None = None,
    checkpoints: int = 0,
) -> BudgetBC:
    """Train on ``data`` for ``config.n_steps`` gradient steps; the model plays for ``budget`` tokens per
    episode (default: the buffer's mean). Global random states are left as they were."""
    n, dim = data.observations.shape
    rng = np.random.default_rng(seed)
    x = _inputs(data.observations, data.cost_to_go, data.g_target)
    legal = torch.as_tensor(data.masks | ~data.masks.any(axis=1, keepdims=True))
    actions = torch.as_tensor(data.actions)
    budget = float(data.totals.mean()) if budget is None else budget
    marks = (
        {round(config.n_steps * (i + 1) / checkpoints) for i in range(checkpoints)} if checkpoints else set()
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = nn.Sequential(
            nn.Linear(dim + 2, config.hidden_units),
            nn.ReLU(),
            nn.Linear(config.hidden_units, data.masks.shape[1]),
        )
        optim = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
        model = BudgetBC(net, data.totals, data.returns, 0.0).with_budget(budget)
        for step in range(1, config.n_steps + 1):
            idx = torch.as_tensor(rng.integers(n, size=config.batch_size))
            logits = net(x[idx]).masked_fill(~legal[idx], -torch.inf)
            loss = nn.functional.cross_entropy(logits, actions[idx])
            optim.zero_grad()
            loss.backward()
            optim.step()
            if step in marks and on_checkpoint is not None:
                on_checkpoint(model, step)
    return model
