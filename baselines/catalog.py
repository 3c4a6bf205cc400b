"""The learners of this package by name: one table, read by ``baselines.train`` and ``baselines.algorithms``.

Each row says how the learner's d3rlpy config is built from the budgets (``baselines.budgets``, where
every number lives and is justified), whether it samples from a policy, and whether it is the paper's
configuration. The bench and the command line reach the rows through the algorithm registry
(``baselines.algorithms``, an entry point), so reading the table must stay cheap: the config factories
import torch and d3rlpy only when called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baselines.budgets import AWRSchedule, IQLSchedule, QSchedule, SACSchedule, Schedule

__all__ = ["ALGORITHMS", "ALGOS", "Learner"]


@dataclass(frozen=True)
class Learner:
    """One row of the table."""

    config: Callable[[Schedule], Any]
    """Builds the learner's d3rlpy config from the shared schedule and its own budget."""
    stochastic: bool
    """Has a policy over actions (evaluated in each act mode); otherwise acts greedily on Q-values."""
    paper: bool = False
    """Trained for ``AWRSchedule.paper_epochs`` passes over the buffer (the paper's length) rather than
    the shared ``Schedule.n_steps``."""


def _awr_args(s: Schedule) -> dict[str, Any]:
    a = AWRSchedule()
    return {
        "hidden_units": s.hidden_units,
        "batch_size": s.batch_size,
        "learning_rate": a.learning_rate,
        "beta": a.beta,
        "weight_clip": a.weight_clip,
        "entropy_coef": a.entropy_coef,
    }


def _awr(s: Schedule) -> Any:
    from baselines.awr import DiscreteAWRConfig

    return DiscreteAWRConfig(**_awr_args(s))


def _bc(s: Schedule) -> Any:
    from baselines.awr import awr_as_bc

    return awr_as_bc(**_awr_args(s))


def _iql(s: Schedule) -> Any:
    from baselines.iql import DiscreteIQLConfig

    return DiscreteIQLConfig(
        hidden_units=s.hidden_units,
        batch_size=s.batch_size,
        gamma=s.gamma,
        **dataclasses.asdict(IQLSchedule()),
    )


def _encoder(s: Schedule) -> Any:
    from d3rlpy.models.encoders import VectorEncoderFactory

    return VectorEncoderFactory(hidden_units=[s.hidden_units])


def _q_args(s: Schedule) -> dict[str, Any]:
    """What every Q-learner shares: one network, its rate, the batch, the discount and target updates."""
    return {
        "encoder_factory": _encoder(s),
        "learning_rate": QSchedule().learning_rate,
        "batch_size": s.batch_size,
        "gamma": s.gamma,
        "target_update_interval": s.target_update_interval,
    }


def _bc_d3rlpy(s: Schedule) -> Any:
    from d3rlpy.algos import DiscreteBCConfig

    return DiscreteBCConfig(
        encoder_factory=_encoder(s), learning_rate=AWRSchedule().learning_rate, batch_size=s.batch_size
    )


def _cql(s: Schedule) -> Any:
    from d3rlpy.algos import DiscreteCQLConfig

    return DiscreteCQLConfig(**_q_args(s), alpha=QSchedule().cql_alpha)


def _bcq(s: Schedule) -> Any:
    from baselines.bcq import MaskedDiscreteBCQConfig

    return MaskedDiscreteBCQConfig(**_q_args(s), action_flexibility=QSchedule().bcq_action_flexibility)


def _dqn(s: Schedule) -> Any:
    from d3rlpy.algos import DQNConfig

    return DQNConfig(**_q_args(s))


def _double_dqn(s: Schedule) -> Any:
    from d3rlpy.algos import DoubleDQNConfig

    return DoubleDQNConfig(**_q_args(s))


def _sac(s: Schedule) -> Any:
    from baselines.sac import MaskedDiscreteSACConfig

    encoder = _encoder(s)
    return MaskedDiscreteSACConfig(
        actor_encoder_factory=encoder,
        critic_encoder_factory=encoder,
        **dataclasses.asdict(SACSchedule()),
        target_update_interval=s.target_update_interval,
        batch_size=s.batch_size,
        gamma=s.gamma,
    )


ALGORITHMS: dict[str, Learner] = {
    "awr": Learner(_awr, stochastic=True, paper=True),
    "awr-converged": Learner(_awr, stochastic=True),
    "bc": Learner(_bc, stochastic=True, paper=True),
    "bc-converged": Learner(_bc, stochastic=True),
    "iql": Learner(_iql, stochastic=True),
    "bc-d3rlpy": Learner(_bc_d3rlpy, stochastic=True),
    "cql": Learner(_cql, stochastic=False),
    "bcq": Learner(_bcq, stochastic=False),
    "dqn": Learner(_dqn, stochastic=False),
    "double-dqn": Learner(_double_dqn, stochastic=False),
    "sac": Learner(_sac, stochastic=True),
}
"""Every learner of this package, in the order the bench lists them."""
ALGOS: tuple[str, ...] = tuple(ALGORITHMS)
"""The names of ``ALGORITHMS``."""
