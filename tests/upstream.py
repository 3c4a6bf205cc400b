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


def one_localised_rate(domain_cls, rate: float = 0.61):
    """The default executor profile with one localised fix rate for both flaw classes, well above the
    blind one: for tests of what a check tells a REVISE (the shipped rates differ by class,
    ``harness_gym.executors.profiles``)."""
    from dataclasses import replace

    from harness_gym.envs.registry import executor_profile
    from harness_gym.executors.profiles import for_domain

    default = for_domain("default", domain_cls)
    rates = {**default.mechanism.p_fix, "localised": rate}
    mechanism = replace(default.mechanism, p_fix=rates, p_fix_form=rate)
    return executor_profile("default").with_domain(domain_cls.name, replace(default, mechanism=mechanism))


def gather_all(env, reserve: int = 5) -> None:
    """OBSERVE, then RETRIEVE and CALL_TOOL while the mask allows them, keeping ``reserve`` steps: a fix
    needs the information a right draft needs (evidence-gated revision)."""
    from harness_gym.core.actions import Action

    inner = env.unwrapped
    for action in [Action.OBSERVE] + [Action.RETRIEVE] * 6 + [Action.CALL_TOOL] * 4:
        if inner._ep.state.t >= inner.max_steps - reserve:
            break
        if inner._mask[action]:
            env.step(int(action))
