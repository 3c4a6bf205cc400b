"""Train one offline baseline on a harness-gym dataset: AWR, BC, IQL or a d3rlpy discrete algorithm.

Every number (length, learning rates, target updates, discount) comes from ``baselines.budgets``, where
each is justified; the table of learners (``baselines.catalog``) builds each config from it. Every
algorithm sees the same data, batch size and MLP width (one hidden layer of ``hidden_units``), so
differences come from the objective, not from capacity or budget. ``awr`` and ``bc`` are the paper's
configuration (``AWRSchedule.paper_epochs`` passes, so their length follows the buffer); every other
name trains for the same fixed number of gradient steps."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import d3rlpy
import numpy as np
import torch
from d3rlpy.algos.utility import build_scalers_with_transition_picker
from d3rlpy.base import LearnableConfig
from d3rlpy.dataset import ReplayBufferBase
from d3rlpy.logging import NoopAdapterFactory
from d3rlpy.torch_utility import TorchMiniBatch

from baselines.awr import DiscreteAWRConfig
from baselines.budgets import AWRSchedule, Schedule
from baselines.catalog import ALGORITHMS, ALGOS
from baselines.iql import DiscreteIQLConfig
from baselines.sampler import FlatReplayBuffer, flat_buffer
from harness_gym.datasets.d3rlpy_bridge import OfflineData, quiet_d3rlpy, to_d3rlpy

if TYPE_CHECKING:
    import minari

__all__ = [
    "ALGOS",
    "Setup",
    "build_model",
    "checkpoint_steps",
    "fit_lean",
    "make_config",
    "n_train_steps",
    "quiet_d3rlpy",
    "setup",
    "train",
    "training_dataset",
]


def make_config(algo: str, schedule: Schedule | None = None) -> Any:
    """The d3rlpy config for ``algo`` (one of ``ALGOS``) from the budgets in ``baselines.budgets``."""
    learner = ALGORITHMS.get(algo)
    if learner is None:
        raise ValueError(f"unknown algorithm {algo!r}; expected one of {', '.join(ALGOS)}")
    return learner.config(schedule or Schedule())


def n_train_steps(algo: str, n_transitions: int, schedule: Schedule | None = None) -> int:
    """Gradient steps of ``algo``: the paper's epochs for the paper's configurations, else the fixed
    budget."""
    s = schedule or Schedule()
    learner = ALGORITHMS.get(algo)
    if learner is not None and learner.paper:
        return AWRSchedule().paper_epochs * math.ceil(n_transitions / s.batch_size)
    return s.n_steps


def checkpoint_steps(total: int, points: int) -> list[int]:
    """Steps after which ``train`` calls ``on_checkpoint``: ``points`` evenly spaced, the last ``total``."""
    if total < 1 or points < 1:
        raise ValueError(f"total and points must be >= 1, got {total}, {points}")
    return sorted({max(1, total * k // points) for k in range(1, points + 1)})


@dataclass
class Setup:
    """A learner as ``train`` has it just before its first gradient step."""

    learner: Any
    buffer: ReplayBufferBase
    """What it samples from: a ``FlatReplayBuffer`` of its training dataset."""
    total: int
    """Gradient steps to run."""


_TRAINING_SETS: weakref.WeakKeyDictionary[ReplayBufferBase, dict[tuple, Any]] = weakref.WeakKeyDictionary()


def training_dataset(learner: Any, data: OfflineData) -> Any:
    """``learner.training_dataset(data)``, built once per buffer and kind of learner (seeds and algorithms
    with the same masking and advantage share it).

    Building a d3rlpy dataset draws a sample of each signature from numpy's global random state (its
    writer does); a cached dataset makes the same draws, so a seeded run's batches do not change."""
    cfg = learner.config
    key = (type(learner), getattr(cfg, "advantage", None), getattr(cfg, "masked", None))
    built = _TRAINING_SETS.setdefault(data.dataset, {})
    dataset = built.get(key)
    if dataset is None:
        dataset = built[key] = learner.training_dataset(data)
    else:
        info = dataset.dataset_info
        for signature in (info.observation_signature, info.action_signature, info.reward_signature):
            signature.sample()
    return dataset


def setup(
    algo: str,
    dataset: minari.MinariDataset | OfflineData,
    seed: int,
    n_steps: int | None = None,
    config: LearnableConfig | None = None,
    schedule: Schedule | None = None,
) -> Setup:
    """Seed, build the learner and its replay buffer, as ``train`` does before training (no model yet)."""
    if schedule is None:
        schedule = Schedule() if n_steps is None else Schedule(n_steps=n_steps)
    data = dataset if isinstance(dataset, OfflineData) else to_d3rlpy(dataset)
    cfg = make_config(algo, schedule) if config is None else config
    d3rlpy.seed(seed)
    learner = cfg.create(device=False)
    if hasattr(learner, "training_dataset"):
        buffer = training_dataset(learner, data)
    elif algo in ALGORITHMS and isinstance(
        own := make_config(algo, schedule), DiscreteAWRConfig | DiscreteIQLConfig
    ):
        # objectives of this package alone: a d3rlpy config would fit them on the wrong rewards
        raise ValueError(f"{algo!r} needs a {type(own).__name__}, got {type(cfg).__name__}")
    else:
        buffer = data.dataset
    buffer = flat_buffer(buffer, cfg.gamma if learner.need_returns_to_go else None)
    total = n_train_steps(algo, buffer.transition_count, schedule) if n_steps is None else n_steps
    if total < 1:
        raise ValueError(f"n_steps must be >= 1, got {total}")
    return Setup(learner, buffer, total)


def build_model(learner: Any, buffer: ReplayBufferBase) -> None:
    """Build the learner's networks as d3rlpy's ``fit`` does before its first step (same random draws)."""
    build_scalers_with_transition_picker(learner, buffer)
    shape = buffer.sample_transition().observation_signature.shape
    learner.create_impl(shape[0] if len(shape) == 1 else shape, buffer.dataset_info.action_size)


def lean_fit_possible(run: Setup) -> bool:
    """Whether ``fit_lean`` reproduces d3rlpy's ``fit`` for this run: a flat buffer, no scaler, and
    returns-to-go precomputed at the learner's gamma when it reads them."""
    cfg, buffer = run.learner.config, run.buffer
    return (
        isinstance(buffer, FlatReplayBuffer)
        and cfg.observation_scaler is None
        and cfg.action_scaler is None
        and cfg.reward_scaler is None
        and (not run.learner.need_returns_to_go or buffer._gamma == cfg.gamma)
    )


def fit_lean(
    run: Setup, on_step: Callable[[Any, int], None] | None = None, show_progress: bool = False
) -> None:
    """d3rlpy's ``fit`` without its per-step bookkeeping: the same batches, the same updates.

    Per step, the rows are d3rlpy's draw (``np.random.randint(n, size=batch_size)`` from the global
    state, as ``FlatReplayBuffer`` samples), their tensors are rows of ``FlatReplayBuffer.tensors()``
    (what ``TorchMiniBatch.from_batch`` builds), and the learner's own ``impl.update`` runs on them;
    d3rlpy's logger, metric averaging and per-row ``Transition`` objects are skipped. Checked against
    ``fit`` in ``tests/test_training_identity.py``."""
    learner, buffer = run.learner, run.buffer
    assert isinstance(buffer, FlatReplayBuffer) and lean_fit_possible(run)
    build_model(learner, buffer)
    rows = buffer.tensors()
    returns_to_go = rows["returns_to_go"] if learner.need_returns_to_go else None
    n, size, impl, device = buffer.transition_count, learner.config.batch_size, learner.impl, learner._device
    steps = range(1, run.total + 1)
    if show_progress:
        from tqdm.auto import tqdm

        steps = tqdm(steps, desc=type(learner).__name__)
    for step in steps:
        index = torch.from_numpy(np.random.randint(n, size=size))
        rewards = rows["rewards"][index]
        batch = TorchMiniBatch(
            observations=rows["observations"][index],
            actions=rows["actions"][index],
            rewards=rewards,
            next_observations=rows["next_observations"][index],
            next_actions=rows["next_actions"][index],
            returns_to_go=torch.zeros_like(rewards) if returns_to_go is None else returns_to_go[index],
            terminals=rows["terminals"][index],
            intervals=rows["intervals"][index],
            device=device,
        )
        impl.update(batch, learner.grad_step)
        learner.set_grad_step(learner.grad_step + 1)
        if on_step is not None:
            on_step(learner, step)


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
    (d3rlpy's no-op logger). Runs ``fit_lean`` when it reproduces d3rlpy's ``fit``, else ``fit``.
    """
    run = setup(algo, dataset, seed, n_steps=n_steps, config=config, schedule=schedule)
    learner, total = run.learner, run.total
    marks = (
        set(checkpoint_steps(total, curve_points))
        if on_checkpoint is not None and curve_points > 0
        else set()
    )

    def on_step(learner_: Any, step: int) -> None:
        if step in marks:
            assert on_checkpoint is not None
            on_checkpoint(learner_, step)

    if lean_fit_possible(run):
        fit_lean(run, on_step if marks else None, show_progress)
        return learner
    learner.fit(
        run.buffer,
        n_steps=total,
        n_steps_per_epoch=total,  # one epoch: d3rlpy trains epochs x (n_steps // epochs) steps
        logger_adapter=NoopAdapterFactory(),
        show_progress=show_progress,
        with_timestamp=False,
        experiment_name=f"{algo}-seed{seed}",
        callback=(lambda algo_, epoch, step: on_step(algo_, step)) if marks else None,
    )
    return learner
