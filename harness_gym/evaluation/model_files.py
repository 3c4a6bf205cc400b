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
from harness_gym.core.state import FEATURES, LAYOUT_VERSION, N_FEATURES

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


def refusals(provenance: Provenance | None, env_id: str) -> list[str]:
    """Why a model with this provenance should not be evaluated on ``env_id`` (empty: it may)."""
    if provenance is None:
        return ["it records no env id or observation layout (saved by plain d3rlpy, not harness-gym)"]
    why = []
    if provenance.env_id != env_id:
        why.append(f"it was trained on {provenance.env_id} (dataset {provenance.dataset_id}), not {env_id}")
    if provenance.layout_version != LAYOUT_VERSION or provenance.features != FEATURES:
        why.append(
            f"it expects observation layout v{provenance.layout_version} "
            f"({len(provenance.features)} features), this harness-gym has v{LAYOUT_VERSION} ({N_FEATURES})"
        )
    return why


def load_model(path: str | os.PathLike, env_id: str, force: bool = False) -> tuple[Any, list[str]]:
    """Load a saved learnable for evaluation on ``env_id``; returns it and the refusals it overrode.

    Without ``force``, a model trained on another env id or observation layout is a ``ModelError``.
    A model whose network does not take this suite's observations is refused even with ``force``.
    """
    from harness_gym.evaluation.d3rlpy_import import import_d3rlpy
    from harness_gym.policies.algorithms import load_plugins

    d3rlpy = import_d3rlpy()

    load_plugins()  # installed algorithm packages register their d3rlpy learnables (baselines' AWR, IQL, ...)

    path = Path(path)
    obj = _read(path)
    found = obj.get(PROVENANCE_KEY)
    provenance = None if found is None else Provenance(**{**found, "features": tuple(found["features"])})
    why = refusals(provenance, env_id)
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
    width = N_FEATURES + (N_ACTIONS if getattr(learner.config, "masked", False) else 0)
    if shape != (width,) or actions != N_ACTIONS:
        raise ModelError(
            f"{path} takes observations of shape {shape} and {actions} actions; harness-gym environments "
            f"have ({N_FEATURES},) and {N_ACTIONS}"
        )
    return learner, why
