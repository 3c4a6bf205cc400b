"""The package's d3rlpy learnables, registered with d3rlpy whenever d3rlpy is loaded.

``d3rlpy.load_learnable`` finds a saved algorithm's config class in a registry filled by
``register_learnable`` calls at import time, so a saved AWR model raises ``KeyError: 'discrete_awr'``
unless ``baselines.awr`` was imported first. ``import baselines`` must not import d3rlpy and torch itself
(about 6 s and 370 MB: scripted-policy workers never need them), so it installs an import hook instead:
as soon as d3rlpy has been imported (before or after ``baselines``) and no module of this package is
half-way through its own import, every module in ``LEARNABLE_MODULES`` is imported, which registers it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import io
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

LEARNABLE_MODULES: tuple[str, ...] = ("baselines.awr", "baselines.bcq", "baselines.iql", "baselines.sac")
"""Every module of this package that calls ``d3rlpy.base.register_learnable`` (a test keeps it complete)."""

_executing: set[str] = set()
_done = False


def register_all() -> bool:
    """Import the learnable modules if d3rlpy is loaded and nothing here is mid-import; True once done."""
    global _done
    if _done:
        return True
    if "d3rlpy" not in sys.modules or _executing:
        return False
    _done = True  # set first: the imports below come back through the hook
    for name in LEARNABLE_MODULES:
        importlib.import_module(name)
    if _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)
    return True


class _AfterExec(importlib.abc.Loader):
    """Runs a module as its own loader would, then tries :func:`register_all`."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        _executing.add(module.__name__)
        try:
            self.loader.exec_module(module)
        finally:
            _executing.discard(module.__name__)
        register_all()

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, resource readers, ...
        return getattr(self.loader, name)


class _Hook(importlib.abc.MetaPathFinder):
    """Wraps the loaders of ``d3rlpy`` and of this package's modules in :class:`_AfterExec`."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname != "d3rlpy" and not fullname.startswith("baselines."):
            return None
        if fullname == "d3rlpy":
            import_gym_quietly()
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _AfterExec(spec.loader)
                return spec
        return None


_HOOK = _Hook()


def import_gym_quietly() -> None:
    """Import the legacy ``gym`` package (d3rlpy imports it) without its "Gym has been unmaintained"
    notice, which it prints to stderr on every import, so once per worker process; anything else it
    prints is passed on."""
    if "gym" in sys.modules:
        return
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.suppress(ImportError):
        import gym  # noqa: F401
    text = captured.getvalue()
    if "Gym has been unmaintained" in text:
        text = ""
    sys.stderr.write(text)


def install() -> None:
    """Register now if d3rlpy is already loaded, else as soon as it is."""
    if not register_all() and _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
