"""Shared test helpers.

``unavailable`` and ``require`` are the one way a test skips for a missing part of the test environment
(a package of the ``test`` extra, a fixture file, a server binary): locally the test skips with the reason,
under ``CI=true`` (which ``.ci/run`` sets) it fails, so a broken install cannot turn tests into skips and
leave CI green. Tests import them as ``from conftest import require, unavailable``.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest
from upstream import upstream_path


def in_ci() -> bool:
    """True when the declared test environment is required in full (``CI=true``)."""
    return os.environ.get("CI") == "true"


def unavailable(reason: str, *, module_level: bool = False) -> NoReturn:
    """Skip for ``reason`` (a missing part of the test environment); fail instead under ``CI=true``."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def require(module: str) -> ModuleType:
    """``importlib.import_module(module)``; a missing module skips the caller (module level allowed),
    fails it under ``CI=true``. Use instead of ``pytest.importorskip``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        unavailable(f"{module} cannot be imported ({exc}); it is part of the test extra", module_level=True)


@pytest.fixture
def saved_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """File name -> the matplotlib ``Figure`` saved there: figure tests read the plotted data (line data,
    bar heights, legend entries) rather than the file's size."""
    from matplotlib.figure import Figure

    saved: dict[str, object] = {}
    save = Figure.savefig

    def capture(self, fname, *args, **kwargs):
        saved[os.path.basename(fname)] = self
        return save(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    return saved


@pytest.fixture
def upstream_data():
    """``upstream_data(name)``: the upstream data directory; skips when absent, fails when CI requires it."""
    return upstream_path


@pytest.fixture
def loopback_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy for 127.0.0.1 and no LLM settings from the caller's environment: tests of the chat
    client talk to their own loopback server only."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    for var in (
        "HARNESS_GYM_LLM_BASE_URL",
        "HARNESS_GYM_LLM_MODEL",
        "HARNESS_GYM_LLM_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)
