"""Executor shift: a controller evaluated against other executor profiles than it was trained with."""

from __future__ import annotations

import pytest

from harness_gym.evaluation.protocol import evaluate
from harness_gym.evaluation.shift import (
    check_profiles,
    evaluate_shift,
    shift_markdown,
    shift_rows,
    training_profile,
)
from harness_gym.executors.profiles import PROFILE_ENV
from harness_gym.policies.profile import CheckReviseLoopPolicy
from harness_gym.policies.scripted import BasePolicy

ENV = "HarnessPlanning-v0"


def test_shift_table_measures_each_policy_under_each_profile():
    policies = {"base": [(0, BasePolicy(ENV))], "loop": [(0, CheckReviseLoopPolicy(ENV))]}
    table = evaluate_shift(policies, ENV, ["default", "weak", "strong"], 1, evaluate)
    assert set(table) == {"default", "weak", "strong"} and set(table["weak"]) == {"base", "loop"}
    # Base never checks or revises: only the mechanism differs between the shipped profiles
    assert table["weak"]["base"] == table["strong"]["base"] == table["default"]["base"]
    # the loop gains with the executor's skill; weak and default differ only in a few fix rates, which
    # greedy draws on one seed's episodes may not tell apart
    assert table["weak"]["loop"] <= table["default"]["loop"] <= table["strong"]["loop"]
    assert table["weak"]["loop"] < table["strong"]["loop"]
    rows = shift_rows("default", table)
    assert [r[:2] for r in rows] == [
        ["weak", "base"],
        ["weak", "loop"],
        ["strong", "base"],
        ["strong", "loop"],
    ]
    gap = float(rows[1][4])
    assert gap == pytest.approx(table["weak"]["loop"] - table["default"]["loop"], abs=1e-3)
    report = shift_markdown({"settings": {ENV: {"shift": {"train_profile": "default", "G": table}}}})
    assert "## Executor shift" in report and "| weak | loop |" in report


def test_training_profile_sets_and_restores_the_default(monkeypatch):
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    restore = training_profile("weak")
    import os

    assert os.environ[PROFILE_ENV] == "weak"
    restore()
    assert PROFILE_ENV not in os.environ


def test_bad_profiles_fail_early():
    with pytest.raises(ValueError, match="unknown executor profile 'nope'"):
        check_profiles("default", ["nope"])
    with pytest.raises(ValueError, match="simulated executor"):
        check_profiles("weak", [], llm=True)
