"""The learners of this package by name: one table, read by ``baselines.train`` and
``baselines.algorithms``."""

from __future__ import annotations

ALGOS = (
    "awr",
    "awr-converged",
    "bc",
    "bc-converged",
    "iql",
    "bc-d3rlpy",
    "cql",
    "bcq",
    "dqn",
    "double-dqn",
    "sac",
)
"""Every learner of this package (``baselines.train.make_config`` builds each one's d3rlpy config)."""
PAPER_ALGOS = ("awr", "bc")
"""Trained for ``AWRSchedule.paper_epochs`` passes over the buffer (the paper's length)."""
STOCHASTIC = frozenset({"awr", "bc", "awr-converged", "bc-converged", "iql", "sac", "bc-d3rlpy"})
"""Learners with a policy over actions (evaluated in each act mode); the rest act greedily."""
