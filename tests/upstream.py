"""Where the upstream benchmark data lives for tests: beside the repository (never inside it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

SHARED_DATA = Path(
    os.environ.get("HARNESS_GYM_UPSTREAM_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)
"""``$HARNESS_GYM_UPSTREAM_DATA``, else ``shared/data`` beside the repository (``harness-gym doctor`` looks
there too)."""


def upstream_path(name: str) -> Path:
    """``shared/data/<name>``; skips the test when absent, fails it when CI requires the data."""
    path = SHARED_DATA / name
    if not path.exists():
        if os.environ.get("HARNESS_GYM_REQUIRE_UPSTREAM_DATA") == "1":
            pytest.fail(f"upstream data {path} is required (HARNESS_GYM_REQUIRE_UPSTREAM_DATA=1) but absent")
        pytest.skip(f"upstream data {path} is absent")
    return path


def dbbench_records(name: str) -> list[dict[str, Any]]:
    """The records of an upstream DB-Bench JSONL file (``standard.jsonl``, ``dev.jsonl``)."""
    with upstream_path(f"dbbench/{name}").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
