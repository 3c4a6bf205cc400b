"""This package's learners as ``harness_gym.policies.algorithms.Algorithm`` objects.

Registered through the ``harness_gym.algorithms`` entry point (``pyproject.toml``), so the bench and the
command line find them without importing this package by name. Importing this module is cheap: torch
and d3rlpy load when a learner trains.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from baselines.budgets import Schedule
from baselines.catalog import ALGORITHMS
from harness_gym.policies.algorithms import ACT_MODES, Trained, TrainingData


@dataclass(frozen=True)
class D3rlpyLearner:
    """One row of ``baselines.catalog.ALGORITHMS``, trained with the budgets of ``baselines.budgets``."""

    name: str

    @property
    def stochastic(self) -> bool:
        return ALGORITHMS[self.name].stochastic

    def trained(self, model: object) -> Trained:
        """The acting policies of a fitted model: sampled and greedy for a stochastic learner."""
        from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy, fingerprint

        modes = ACT_MODES if self.stochastic else ("greedy",)
        policies = {mode: MaskedPolicy(model, self.name, sample=mode == "sample") for mode in modes}
        return Trained(policies, fingerprint(model), model)

    def train(
        self,
        data: TrainingData,
        *,
        seed: int,
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[Trained, int], None] | None = None,
    ) -> Trained:
        from baselines.train import train

        callback = None
        if on_checkpoint is not None and curve_points > 0:

            def callback(model: object, step: int) -> None:
                on_checkpoint(self.trained(model), step)

        model = train(
            self.name,
            data.offline,
            seed=seed,
            schedule=_schedule(n_steps),
            curve_points=curve_points,
            on_checkpoint=callback,
        )
        return self.trained(model)

    def train_seeds(
        self,
        data: TrainingData,
        *,
        seeds: Sequence[int],
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[int, Trained, int], None] | None = None,
    ) -> list[Trained]:
        """Every seed's run of ``train``, the seeds trained together (``baselines.batched``)."""
        from baselines.batched import train_seeds

        callback = None
        if on_checkpoint is not None and curve_points > 0:

            def callback(seed: int, model: object, step: int) -> None:
                on_checkpoint(seed, self.trained(model), step)

        models = train_seeds(
            self.name,
            data.offline,
            seeds,
            schedule=_schedule(n_steps),
            curve_points=curve_points,
            on_checkpoint=callback,
        )
        return [self.trained(model) for model in models]


@dataclass(frozen=True)
class LagrangianLearner:
    """``dqn-lag`` (``baselines.dqn_lag``): a reward and a cost critic, greedy on Q_r - lam * Q_c under a
    mean-token limit (``TrainingData.token_limit`` where set, else ``DQNLagConfig``'s); trains on a buffer
    with per-step tokens (a chat-LLM or MDP v2 dataset)."""

    name: str = "dqn-lag"
    stochastic: bool = False

    def train(
        self,
        data: TrainingData,
        *,
        seed: int,
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[Trained, int], None] | None = None,
    ) -> Trained:
        from baselines.dqn_lag import DQNLagConfig, fit, transitions

        limit = {} if data.token_limit is None else {"cost_limit": data.token_limit / 1000}
        config = DQNLagConfig(**limit) if n_steps is None else DQNLagConfig(n_steps=n_steps, **limit)

        callback = _greedy_callback(on_checkpoint, curve_points)

        model = fit(
            transitions(data.dataset), config, seed=seed, on_checkpoint=callback, checkpoints=curve_points
        )
        return _greedy(model)


@dataclass(frozen=True)
class BudgetLearner:
    """``bc-budget`` (``baselines.budget_bc``): behaviour cloning conditioned on the tokens left and a
    target G, one model for every budget; plays for ``TrainingData.token_limit`` where set, else the
    buffer's mean tokens; trains on an MDP v2 buffer with per-step tokens."""

    name: str = "bc-budget"
    stochastic: bool = False

    def train(
        self,
        data: TrainingData,
        *,
        seed: int,
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[Trained, int], None] | None = None,
    ) -> Trained:
        from baselines.budget_bc import BudgetBCConfig, conditioned, fit

        config = BudgetBCConfig() if n_steps is None else BudgetBCConfig(n_steps=n_steps)

        callback = _greedy_callback(on_checkpoint, curve_points)

        model = fit(
            conditioned(data.dataset),
            config,
            seed=seed,
            budget=data.token_limit,
            on_checkpoint=callback,
            checkpoints=curve_points,
        )
        return _greedy(model)


def _greedy(model) -> Trained:
    """A greedy-only model of this package (``act``, ``fingerprint``) as a ``Trained``."""
    return Trained({"greedy": model}, model.fingerprint(), model)


def _greedy_callback(
    on_checkpoint: Callable[[Trained, int], None] | None, curve_points: int
) -> Callable[[object, int], None] | None:
    """``fit``'s checkpoint hook handing each model on as a ``Trained``; None without curve points."""
    if on_checkpoint is None or curve_points <= 0:
        return None
    return lambda model, step: on_checkpoint(_greedy(model), step)


def _schedule(n_steps: int | None) -> Schedule:
    """The shared budget, its step count replaced by ``n_steps`` when given."""
    return Schedule() if n_steps is None else Schedule(n_steps=n_steps)


def provided() -> list[D3rlpyLearner | LagrangianLearner | BudgetLearner]:
    """The entry point: every learner of ``baselines.catalog.ALGORITHMS``, ``dqn-lag`` and ``bc-budget``."""
    return [*(D3rlpyLearner(name) for name in ALGORITHMS), LagrangianLearner(), BudgetLearner()]
