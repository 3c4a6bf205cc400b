"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""Upstream benchmark data, beside the repository (never inside it)."""


def _upstream_data(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_dir():
        if os.environ.get("HARNESS_GYM_REQUIRE_UPSTREAM_DATA") == "1":
            pytest.fail(f"upstream data {path} is required (HARNESS_GYM_REQUIRE_UPSTREAM_DATA=1) but absent")
        pytest.skip(f"upstream data {path} is absent")
    return path


@pytest.fixture
def upstream_data():
    """``upstream_data(name)``: the upstream data directory; skips when absent, fails when CI requires it."""
    return _upstream_data
