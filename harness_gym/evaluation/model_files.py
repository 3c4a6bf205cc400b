"""Saved controllers: d3rlpy learnables that remember where they were trained.

A model file is d3rlpy's own format (``d3rlpy.load_learnable`` reads it unchanged) with one more key,
``"harness_gym"``: the env id and dataset it was trained on and the observation layout (version and
feature names) it expects. :func:`load_model` refuses a model on another env id or layout unless forced,
and every unreadable or missing file is a :class:`ModelError` naming the file.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import FEATURES, LAYOUT_VERSION, LAYOUT_VERSIONS, LAYOUTS

PROVENANCE_KEY = "harness_gym"


class ModelError(ValueError):
    """A model file that is missing, unreadable or made for something else; the message names it."""


@dataclass(frozen=True)
class Provenance:
    """What a model was trained on."""

    env_id: str
    dataset_id: str
    algo: str
    seed: int
    layout_version: int = LAYOUT_VERSION
    features: tuple[str, ...] = FEATURES
    token_price: float = 0.0
    """The token price the training rewards were relabelled at (0: the dataset's rewards as stored)."""

    @classmethod
    def on_layout(
        cls,
        env_id: str,
        dataset_id: str,
        algo: str,
        seed: int,
        obs_layout: str = "v1",
        token_price: float = 0.0,
    ) -> Provenance:
        """The provenance of a model trained on observations of layout ``obs_layout``."""
        return cls(
            env_id,
            dataset_id,
            algo,
            seed,
            LAYOUT_VERSIONS[obs_layout],
            LAYOUTS[obs_layout],
            float(token_price),
        )


def save_model(learner: Any, path: str | os.PathLike, provenance: Provenance) -> None:
    """Save like ``learner.save(path)``, adding the provenance; written atomically."""
    from d3rlpy.base import dump_learnable

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    os.close(fd)
    try:
        dump_learnable(learner, tmp)
        with open(tmp, "rb") as handle:
            obj = pickle.load(handle)
        obj[PROVENANCE_KEY] = dataclasses.asdict(provenance)
        with open(tmp, "wb") as handle:
            pickle.dump(obj, handle)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_provenance(path: str | os.PathLike) -> Provenance | None:
    """The provenance recorded in a model file (``None`` for a file saved by plain d3rlpy)."""
    obj = _read(Path(path))
    found = obj.get(PROVENANCE_KEY)
    if found is None:
        return None
    return Provenance(**{**found, "features": tuple(found["features"])})


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ModelError(f"no model file {path}")
    try:
        with path.open("rb") as handle:
            obj = pickle.load(handle)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError) as exc:
        raise ModelError(
            f"{path} is not a readable d3rlpy model file ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(obj, dict) or not {"torch", "config", "version"} <= obj.keys():
        raise ModelError(f"{path} is not a d3rlpy model file (no config / weights in it)")
    return obj


def refusals(provenance: Provenance | None, env_id: str, obs_layout: str = "v1") -> list[str]:
    """Why a model with this provenance should not be evaluated on ``env_id`` with observation layout
    ``obs_layout`` (empty: it may)."""
    if provenance is None:
        return ["it records no env id or observation layout (saved by plain d3rlpy, not harness-gym)"]
    why = []
    if provenance.env_id != env_id:
        why.append(f"it was trained on {provenance.env_id} (dataset {provenance.dataset_id}), not {env_id}")
    version, features = LAYOUT_VERSIONS[obs_layout], LAYOUTS[obs_layout]
    if provenance.layout_version != version or provenance.features != features:
        why.append(
            f"it expects observation layout version {provenance.layout_version} "
            f"({len(provenance.features)} features), the evaluation plays obs_layout {obs_layout!r} "
            f"(version {version}, {len(features)} features)"
        )
    return why


def load_model(
    path: str | os.PathLike, env_id: str, force: bool = False, obs_layout: str = "v1"
) -> tuple[Any, list[str]]:
    """Load a saved learnable for evaluation on ``env_id`` with observation layout ``obs_layout``; returns
    it and the refusals it overrode.

    Without ``force``, a model trained on another env id or observation layout is a ``ModelError``.
    A model whose network does not take the layout's observations is refused even with ``force``.
    """
    from harness_gym.evaluation.d3rlpy_import import import_d3rlpy
    from harness_gym.policies.algorithms import load_plugins

    d3rlpy = import_d3rlpy()

    load_plugins()  # installed algorithm packages register their d3rlpy learnables (baselines' AWR, IQL, ...)

    path = Path(path)
    obj = _read(path)
    found = obj.get(PROVENANCE_KEY)
    provenance = None if found is None else Provenance(**{**found, "features": tuple(found["features"])})
    why = refusals(provenance, env_id, obs_layout)
    if why and not force:
        raise ModelError(
            f"refusing to evaluate {path} on {env_id}: {'; '.join(why)}; pass --force to do it anyway"
        )
    try:
        learner = d3rlpy.load_learnable(str(path))
    except KeyError as exc:
        raise ModelError(
            f"{path}: unknown d3rlpy algorithm type {exc}; is the package defining it installed?"
        ) from None
    except (RuntimeError, ValueError, pickle.UnpicklingError, EOFError) as exc:
        raise ModelError(f"{path}: the weights cannot be loaded ({type(exc).__name__}: {exc})") from None
    shape, actions = tuple(learner.impl.observation_shape), int(learner.impl.action_size)
    # a mask-trained learner (AWR, BC, IQL, SAC, BCQ) reads the legal-action mask as extra input columns
    n_features = len(LAYOUTS[obs_layout])
    width = n_features + (N_ACTIONS if getattr(learner.config, "masked", False) else 0)
    if shape != (width,) or actions != N_ACTIONS:
        raise ModelError(
            f"{path} takes observations of shape {shape} and {actions} actions; harness-gym environments "
            f"of obs_layout {obs_layout!r} have ({n_features},) and {N_ACTIONS}"
        )
    return learner, why
