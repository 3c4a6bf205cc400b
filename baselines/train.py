"""Train one offline baseline on a harness-gym dataset: AWR, BC (two flavours) or a d3rlpy discrete algo.

Every algorithm sees the same data, batch size (256), Adam learning rate (1e-3, the paper's; d3rlpy's
defaults of 6.25e-5 for the DQN family barely move in 20 epochs of a small buffer) and MLP width (one
hidden layer of ``hidden_units``), so differences come from the objective, not from capacity or budget.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import d3rlpy
from d3rlpy.base import LearnableConfig
from d3rlpy.logging import NoopAdapterFactory
from d3rlpy.models.encoders import VectorEncoderFactory

from baselines.awr import DiscreteAWR, DiscreteAWRConfig, awr_as_bc
from baselines.d3rlpy_bridge import OfflineData, to_d3rlpy

if TYPE_CHECKING:
    import minari

__all__ = ["ALGOS", "make_config", "quiet_d3rlpy", "train"]

ALGOS = ("awr", "bc", "bc-d3rlpy", "cql", "bcq", "dqn", "double-dqn", "sac")


def quiet_d3rlpy() -> None:
    """Silence d3rlpy's per-epoch info logging (structlog), e.g. for batch runs; warnings still show."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def make_config(algo: str, hidden_units: int = 64, batch_size: int = 256, learning_rate: float = 1e-3) -> Any:
    """The d3rlpy config for ``algo`` (one of ``ALGOS``) with the shared hyperparameters."""
    enc = VectorEncoderFactory(hidden_units=[hidden_units])
    shared: dict[str, Any] = {"batch_size": batch_size}
    if algo == "awr":
        return DiscreteAWRConfig(hidden_units=hidden_units, learning_rate=learning_rate, **shared)
    if algo == "bc":
        return awr_as_bc(hidden_units=hidden_units, learning_rate=learning_rate, **shared)
    one_net = {"encoder_factory": enc, "learning_rate": learning_rate, **shared}
    if algo == "bc-d3rlpy":
        return d3rlpy.algos.DiscreteBCConfig(**one_net)
    if algo == "cql":
        return d3rlpy.algos.DiscreteCQLConfig(**one_net)
    if algo == "bcq":
        return d3rlpy.algos.DiscreteBCQConfig(**one_net)
    if algo == "dqn":
        return d3rlpy.algos.DQNConfig(**one_net)
    if algo == "double-dqn":
        return d3rlpy.algos.DoubleDQNConfig(**one_net)
    if algo == "sac":
        return d3rlpy.algos.DiscreteSACConfig(
            actor_encoder_factory=enc,
            critic_encoder_factory=enc,
            actor_learning_rate=learning_rate,
            critic_learning_rate=learning_rate,
            **shared,
        )
    raise ValueError(f"unknown algorithm {algo!r}; expected one of {', '.join(ALGOS)}")


def train(
    algo: str,
    dataset: minari.MinariDataset | OfflineData,
    seed: int,
    n_epochs: int = 20,
    show_progress: bool = False,
    config: LearnableConfig | None = None,
) -> Any:
    """Fit ``algo`` for ``n_epochs`` passes (n_steps = n_epochs * ceil(N / batch_size)); return the learner.

    ``config`` replaces ``make_config(algo)`` (e.g. smaller networks in tests); it must match ``algo``.
    Nothing is written to disk (d3rlpy's no-op logger).
    """
    if n_epochs < 1:
        raise ValueError(f"n_epochs must be >= 1, got {n_epochs}")
    data = dataset if isinstance(dataset, OfflineData) else to_d3rlpy(dataset)
    cfg = make_config(algo) if config is None else config
    d3rlpy.seed(seed)
    learner = cfg.create(device=False)
    if isinstance(learner, DiscreteAWR):
        buffer = learner.training_dataset(data)
    elif algo in ("awr", "bc"):
        raise ValueError(f"{algo!r} needs a DiscreteAWRConfig, got {type(cfg).__name__}")
    else:
        buffer = data.dataset
    steps_per_epoch = math.ceil(buffer.transition_count / cfg.batch_size)
    learner.fit(
        buffer,
        n_steps=n_epochs * steps_per_epoch,
        n_steps_per_epoch=steps_per_epoch,
        logger_adapter=NoopAdapterFactory(),
        show_progress=show_progress,
        with_timestamp=False,
        experiment_name=f"{algo}-seed{seed}",
    )
    return learner
