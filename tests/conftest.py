"""Shared test helpers."""

from __future__ import annotations

import pytest
from upstream import upstream_path


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
    ):
        monkeypatch.delenv(var, raising=False)
