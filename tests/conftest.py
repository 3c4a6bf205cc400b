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
    ):
        monkeypatch.delenv(var, raising=False)
