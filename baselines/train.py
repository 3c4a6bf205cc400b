"""Train one offline baseline on a harness-gym dataset: AWR, BC, IQL or a d3rlpy discrete algorithm.

Every number (length, learning rates, target updates, discount) comes from ``baselines.budgets``, where
each is justified. Every algorithm sees the same data, batch size and MLP width (one hidden layer of
``hidden_units``), so differences come from the objective, not from capacity or budget. ``awr`` and
``bc`` are the paper's configuration (20 epochs, so their length follows the buffer); every other name
trains for the same fixed number of gradient steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import d3rlpy
from d3rlpy.base import LearnableConfig
from d3rlpy.logging import NoopAdapterFactory
from d3rlpy.models.encoders import VectorEncoderFactory

from baselines.awr import DiscreteAWR, DiscreteAWRConfig, awr_as_bc
from baselines.bcq import MaskedDiscreteBCQ, MaskedDiscreteBCQConfig
from baselines.budgets import AWRSchedule, IQLSchedule, QSchedule, SACSchedule, Schedule
from baselines.catalog import ALGOS, PAPER_ALGOS
from baselines.iql import DiscreteIQL, DiscreteIQLConfig
from baselines.sac import MaskedDiscreteSAC, MaskedDiscreteSACConfig
from baselines.sampler import flat_buffer
from harness_gym.datasets.d3rlpy_bridge import OfflineData, quiet_d3rlpy, to_d3rlpy

if TYPE_CHECKING:
    import minari

__all__ = [
    "ALGOS",
    "PAPER_ALGOS",
    "checkpoint_steps",
    "make_config",
    "n_train_steps",
    "quiet_d3rlpy",
    "train",
]


def make_config(algo: str, schedule: Schedule | None = None) -> Any:
    """The d3rlpy config for ``algo`` (one of ``ALGOS``) from the budgets in ``baselines.budgets``."""
    s = schedule or Schedule()
    enc = VectorEncoderFactory(hidden_units=[s.hidden_units])
    shared: dict[str, Any] = {"batch_size": s.batch_size, "gamma": s.gamma}
    if algo in ("awr", "awr-converged", "bc", "bc-converged"):
        a = AWRSchedule()
        kwargs = {
            "hidden_units": s.hidden_units,
            "batch_size": s.batch_size,
            "learning_rate": a.learning_rate,
            "beta": a.beta,
            "weight_clip": a.weight_clip,
            "entropy_coef": a.entropy_coef,
        }
        return awr_as_bc(**kwargs) if algo.startswith("bc") else DiscreteAWRConfig(**kwargs)
    if algo == "iql":
        i = IQLSchedule()
        return DiscreteIQLConfig(
            hidden_units=s.hidden_units,
            learning_rate=i.learning_rate,
            expectile=i.expectile,
            beta=i.beta,
            max_weight=i.max_weight,
            tau=i.tau,
            n_critics=i.n_critics,
            **shared,
        )
    q = QSchedule()
    one_net = {"encoder_factory": enc, "learning_rate": q.learning_rate, **shared}
    target = {"target_update_interval": s.target_update_interval}
    if algo == "bc-d3rlpy":
        return d3rlpy.algos.DiscreteBCConfig(
            encoder_factory=enc, learning_rate=AWRSchedule().learning_rate, batch_size=s.batch_size
        )
    if algo == "cql":
        return d3rlpy.algos.DiscreteCQLConfig(**one_net, **target, alpha=q.cql_alpha)
    if algo == "bcq":
        return MaskedDiscreteBCQConfig(**one_net, **target, action_flexibility=q.bcq_action_flexibility)
    if algo == "dqn":
        return d3rlpy.algos.DQNConfig(**one_net, **target)
    if algo == "double-dqn":
        return d3rlpy.algos.DoubleDQNConfig(**one_net, **target)
    if algo == "sac":
        c = SACSchedule()
        return MaskedDiscreteSACConfig(
            actor_encoder_factory=enc,
            critic_encoder_factory=enc,
            actor_learning_rate=c.actor_learning_rate,
            critic_learning_rate=c.critic_learning_rate,
            temp_learning_rate=c.temp_learning_rate,
            n_critics=c.n_critics,
            **target,
            **shared,
        )
    raise ValueError(f"unknown algorithm {algo!r}; expected one of {', '.join(ALGOS)}")


def n_train_steps(algo: str, n_transitions: int, schedule: Schedule | None = None) -> int:
    """Gradient steps of ``algo``: the paper's epochs for ``PAPER_ALGOS``, else the fixed budget."""
    s = schedule or Schedule()
    if algo in PAPER_ALGOS:
        return AWRSchedule().paper_epochs * math.ceil(n_transitions / s.batch_size)
    return s.n_steps


def checkpoint_steps(total: int, points: int) -> list[int]:
    """Steps after which ``train`` calls ``on_checkpoint``: ``points`` evenly spaced, the last ``total``."""
    if total < 1 or points < 1:
        raise ValueError(f"total and points must be >= 1, got {total}, {points}")
    return sorted({max(1, total * k // points) for k in range(1, points + 1)})


def train(
    algo: str,
    dataset: minari.MinariDataset | OfflineData,
    seed: int,
    n_steps: int | None = None,
    show_progress: bool = False,
    config: LearnableConfig | None = None,
    schedule: Schedule | None = None,
    curve_points: int = 0,
    on_checkpoint: Callable[[Any, int], None] | None = None,
) -> Any:
    """Fit ``algo`` for ``n_steps`` gradient steps (default: ``n_train_steps``); return the learner.

    ``config`` replaces ``make_config(algo)`` (e.g. smaller networks in tests); it must match ``algo``.
    ``on_checkpoint(learner, step)`` is called after each of ``checkpoint_steps(total, curve_points)``
    (learning curves; the last is the returned model); it must leave the
    global random states as it found them, or the rest of the run changes. Nothing is written to disk
    (d3rlpy's no-op logger).
    """
    if schedule is None:
        schedule = Schedule() if n_steps is None else Schedule(n_steps=n_steps)
    s = schedule
    data = dataset if isinstance(dataset, OfflineData) else to_d3rlpy(dataset)
    cfg = make_config(algo, s) if config is None else config
    d3rlpy.seed(seed)
    learner = cfg.create(device=False)
    if isinstance(learner, DiscreteAWR | DiscreteIQL | MaskedDiscreteSAC | MaskedDiscreteBCQ):
        buffer = learner.training_dataset(data)
    elif algo in ("awr", "awr-converged", "bc", "bc-converged", "iql"):
        raise ValueError(f"{algo!r} needs its own config type, got {type(cfg).__name__}")
    else:
        buffer = data.dataset
    buffer = flat_buffer(buffer, cfg.gamma if learner.need_returns_to_go else None)
    total = n_train_steps(algo, buffer.transition_count, s) if n_steps is None else n_steps
    if total < 1:
        raise ValueError(f"n_steps must be >= 1, got {total}")
    callback = None
    if on_checkpoint is not None and curve_points > 0:
        marks = set(checkpoint_steps(total, curve_points))

        def callback(algo_: Any, epoch: int, step: int) -> None:
            if step in marks:
                on_checkpoint(algo_, step)

    learner.fit(
        buffer,
        n_steps=total,
        n_steps_per_epoch=total,  # one epoch: d3rlpy trains epochs x (n_steps // epochs) steps
        logger_adapter=NoopAdapterFactory(),
        show_progress=show_progress,
        with_timestamp=False,
        experiment_name=f"{algo}-seed{seed}",
        callback=callback,
    )
    return learner
