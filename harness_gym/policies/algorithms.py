"""The registry of offline-RL algorithms: how a learner joins the bench, the CLI and model loading.

An algorithm is any object with a ``name``, a ``stochastic`` flag and a ``train`` method that turns
one setting's buffer into a :class:`Trained` (acting policies by evaluation mode). The bench, the
``harness-gym train`` command and ``harness_gym.evaluation.model_files`` find algorithms here, never by
importing a package: ``baselines`` registers its own through the entry-point group ``ENTRY_POINT_GROUP``
(``pyproject.toml``), and an outside algorithm joins the same way, by ``register(...)``, or by naming
it as ``module:attribute`` (``harness-gym bench --algos mypkg.algos:MyAlgorithm``).

A minimal algorithm (behaviour cloning by counting actions per observation)::

    import numpy as np
    from harness_gym.policies.algorithms import Trained, register

    class CountingBC:
        name = "counting-bc"
        stochastic = False

        def train(self, data, *, seed, n_steps=None, curve_points=0, on_checkpoint=None):
            counts = {}
            for ep in data.dataset.iterate_episodes():
                for obs, action in zip(ep.observations[:-1], ep.actions):
                    counts.setdefault(obs.tobytes(), np.zeros(7))[action] += 1

            class Greedy:
                def act(self, obs, mask, rng):
                    c = counts.get(np.asarray(obs, np.float32).tobytes(), np.zeros(7))
                    return int(np.argmax(np.where(mask > 0, c + 1e-9, -np.inf)))

            return Trained({"greedy": Greedy()})

    register(CountingBC())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from harness_gym.policies.scripted import Policy

__all__ = [
    "ACT_MODES",
    "ENTRY_POINT_GROUP",
    "Algorithm",
    "SeedBatchedAlgorithm",
    "Trained",
    "TrainingData",
    "available",
    "get",
    "load_plugins",
    "register",
    "train_seeds",
]

ENTRY_POINT_GROUP = "harness_gym.algorithms"
"""Entry-point group of algorithm providers: each entry point names an ``Algorithm`` or an iterable of
them (or a callable returning either); loading it registers them."""

ACT_MODES = ("sample", "greedy")
"""Evaluation modes of a stochastic learner: draw from its distribution, or take its argmax."""


@dataclass(frozen=True)
class TrainingData:
    """One setting's buffer, as an algorithm receives it."""

    env_id: str
    dataset: Any
    """The buffer as a plain ``minari.MinariDataset`` (observations, actions, masks in ``infos``)."""
    offline: Any
    """The same buffer converted for d3rlpy with observations aligned
    (``harness_gym.datasets.d3rlpy_bridge.OfflineData``: ``dataset``, masks, behaviour log-probs)."""
    token_limit: float | None = None
    """Mean executor tokens per episode the policy should stay within, where the caller sets one (the
    priced track: Base's mean tokens); a cost-constrained learner uses it, the others ignore it."""


@dataclass(frozen=True)
class Trained:
    """What one training run produced: its acting policies by evaluation mode."""

    policies: Mapping[str, Policy]
    """``{"sample": ..., "greedy": ...}`` for a stochastic learner, ``{"greedy": ...}`` otherwise; each
    has ``act(obs, mask, rng)`` (and, for off-policy evaluation, ``action_probs(obs, mask)``)."""
    fingerprint: str | None = None
    """A hash of the learned parameters: a resumed evaluation is accepted only for the same model.
    ``None`` disables that check."""
    model: Any = field(default=None, compare=False)
    """The underlying model, for callers that save it (``harness-gym train``)."""


@runtime_checkable
class Algorithm(Protocol):
    """An offline learner the bench trains with every seed and evaluates on the protocol."""

    name: str
    stochastic: bool
    """Acts by sampling: evaluated in each ``act`` mode (``name`` samples, ``name-greedy`` takes the
    argmax); otherwise evaluated once, greedily, as ``name``."""

    def train(
        self,
        data: TrainingData,
        *,
        seed: int,
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[Trained, int], None] | None = None,
    ) -> Trained:
        """Fit on ``data`` with ``seed``; ``n_steps`` overrides a fixed-budget learner's length (None:
        its own); call ``on_checkpoint(trained_so_far, step)`` at ``curve_points`` evenly spaced steps
        (the last being the end), leaving global random states as they were."""
        ...


@runtime_checkable
class SeedBatchedAlgorithm(Algorithm, Protocol):
    """An algorithm that can also train several seeds in one call (e.g. as one stacked network).

    Optional: the bench calls ``train_seeds`` when an algorithm has it, ``train`` once per seed
    otherwise. Its runs must be the ones ``train`` gives for each seed."""

    def train_seeds(
        self,
        data: TrainingData,
        *,
        seeds: Sequence[int],
        n_steps: int | None = None,
        curve_points: int = 0,
        on_checkpoint: Callable[[int, Trained, int], None] | None = None,
    ) -> list[Trained]:
        """``[train(data, seed=s, ...) for s in seeds]``; ``on_checkpoint(seed, trained_so_far, step)``."""
        ...


def train_seeds(
    algorithm: Algorithm,
    data: TrainingData,
    *,
    seeds: Sequence[int],
    n_steps: int | None = None,
    curve_points: int = 0,
    on_checkpoint: Callable[[int, Trained, int], None] | None = None,
) -> list[Trained]:
    """One run per seed, in ``seeds`` order: the algorithm's ``train_seeds`` when it offers one, else its
    ``train`` once per seed. ``on_checkpoint(seed, trained_so_far, step)`` as in ``Algorithm.train``."""
    if isinstance(algorithm, SeedBatchedAlgorithm):
        runs = algorithm.train_seeds(
            data, seeds=seeds, n_steps=n_steps, curve_points=curve_points, on_checkpoint=on_checkpoint
        )
        if len(runs) != len(seeds):
            raise ValueError(f"{algorithm.name}.train_seeds returned {len(runs)} runs for {len(seeds)} seeds")
        return list(runs)
    return [
        algorithm.train(
            data,
            seed=seed,
            n_steps=n_steps,
            curve_points=curve_points,
            on_checkpoint=None if on_checkpoint is None else partial(on_checkpoint, seed),
        )
        for seed in seeds
    ]


_REGISTRY: dict[str, Algorithm] = {}
_PLUGINS_LOADED = False


def register(algorithm: Algorithm, *, replace: bool = False) -> Algorithm:
    """Add an algorithm under its ``name``; a second one of the same name is refused unless ``replace``."""
    if not isinstance(algorithm, Algorithm):
        raise TypeError(
            f"{algorithm!r} is not an algorithm: it needs a name, a stochastic flag and a train method"
        )
    if algorithm.name in _REGISTRY and not replace and _REGISTRY[algorithm.name] is not algorithm:
        raise ValueError(f"an algorithm named {algorithm.name!r} is already registered")
    _REGISTRY[algorithm.name] = algorithm
    return algorithm


def _made(obj: Any) -> Any:
    """An object as given, or what a class or factory function returns."""
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Algorithm)):
        return obj()
    return obj


def _register_all(provided: Any, source: str) -> None:
    provided = _made(provided)
    items: Iterable[Any] = [provided] if isinstance(provided, Algorithm) else provided
    try:
        for item in items:
            register(item, replace=True)
    except TypeError as exc:
        raise TypeError(f"{source} provides no algorithms: {exc}") from None


def load_plugins() -> None:
    """Register every algorithm that an installed entry point of ``ENTRY_POINT_GROUP`` provides (once)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        _register_all(point.load(), f"entry point {point.name} ({point.value})")


def available() -> dict[str, Algorithm]:
    """Every registered algorithm by name (entry points loaded first)."""
    load_plugins()
    return dict(_REGISTRY)


def get(spec: str) -> Algorithm:
    """A registered algorithm by name, or one named as ``module:attribute`` (an ``Algorithm``, or a
    class or function returning one), which is then registered under its own name."""
    load_plugins()
    if spec in _REGISTRY:
        return _REGISTRY[spec]
    if ":" not in spec:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"unknown algorithm {spec!r}; registered: {known}; or give module:attribute")
    module_name, _, attribute = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load algorithm {spec!r}: {exc}") from None
    algorithm = _made(obj)
    if not isinstance(algorithm, Algorithm):
        raise ValueError(f"{spec} is not an algorithm (needs name, stochastic and train)")
    return register(algorithm, replace=True)
