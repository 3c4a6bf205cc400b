"""Old import paths of modules that moved into the layers, kept for one release with a warning.

``import harness_gym.collect`` (or ``baselines.scripted``) still works and returns
``harness_gym.datasets.collect`` (the same module object), after a ``DeprecationWarning`` naming the new path.
One table, one finder: no alias files.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "baselines.d3rlpy_bridge": "harness_gym.datasets.d3rlpy_bridge",
    "baselines.fqe": "harness_gym.bench.fqe",
    "baselines.masked": "harness_gym.evaluation.d3rlpy_policy",
    "baselines.models": "harness_gym.evaluation.model_files",
    "baselines.ope": "harness_gym.bench.ope",
    "baselines.profile_policy": "harness_gym.policies.profile",
    "baselines.scripted": "harness_gym.policies.scripted",
    "harness_gym.actions": "harness_gym.core.actions",
    "harness_gym.aggregate": "harness_gym.evaluation.aggregate",
    "harness_gym.calibrate": "harness_gym.evaluation.calibrate",
    "harness_gym.collect": "harness_gym.datasets.collect",
    "harness_gym.combine": "harness_gym.datasets.combine",
    "harness_gym.dataset_files": "harness_gym.datasets.files",
    "harness_gym.engine": "harness_gym.evaluation.engine",
    "harness_gym.env": "harness_gym.envs.env",
    "harness_gym.headroom": "harness_gym.evaluation.headroom",
    "harness_gym.hms": "harness_gym.core.hms",
    "harness_gym.paper": "harness_gym.evaluation.paper",
    "harness_gym.profiles": "harness_gym.executors.profiles",
    "harness_gym.reference_scores": "harness_gym.evaluation.reference_scores",
    "harness_gym.registry": "harness_gym.envs.registry",
    "harness_gym.report": "harness_gym.bench.report",
    "harness_gym.rollout": "harness_gym.evaluation.rollout",
    "harness_gym.rubric": "harness_gym.core.rubric",
    "harness_gym.shift": "harness_gym.evaluation.shift",
    "harness_gym.state": "harness_gym.core.state",
    "harness_gym.support": "harness_gym.datasets.support",
    "harness_gym.task": "harness_gym.core.task",
    "harness_gym.trajectory": "harness_gym.core.trajectory",
    "harness_gym.upstream_files": "harness_gym.domains.upstream_files",
    "harness_gym.viewer": "harness_gym.bench.viewer",
}
"""Old module path -> new module path (moved in 0.2.0, the aliases go in 0.3.0)."""


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new one, already executed: give it back its own spec."""
        module.__spec__ = self.spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        if new is None:
            return None
        return importlib.util.spec_from_loader(name, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``import harness_gym`` does this)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
