"""Executor shift: a controller evaluated against other executor profiles than it was trained with."""

from __future__ import annotations

import pytest

from harness_gym.bench.runner import BenchConfig
from harness_gym.evaluation.protocol import evaluate
from harness_gym.evaluation.shift import check_profiles, evaluate_shift, shift_markdown, shift_rows
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


def test_the_training_profile_travels_as_a_keyword_not_through_the_environment(monkeypatch):
    """Decision: a config names its profile and hands it to every environment; the environment variable
    is only the command line's default, read there (``cli.common.add_simulator_args``)."""
    from harness_gym.cli.main import build_parser

    monkeypatch.setenv(PROFILE_ENV, "strong")
    assert BenchConfig(train_profile="weak").env_kwargs() == {"executor_profile": "weak"}
    assert BenchConfig(token_budget=900).env_kwargs() == {"executor_profile": "default", "token_budget": 900}
    assert build_parser().parse_args(["bench"]).train_profile == "strong"
    assert build_parser().parse_args(["bench", "--train-profile", "weak"]).train_profile == "weak"


def test_each_profile_replaces_the_main_evaluations_profile():
    policies = {"base": [(0, BasePolicy(ENV))]}
    table = evaluate_shift(policies, ENV, ["default", "weak"], 1, evaluate, executor_profile="default")
    assert set(table) == {"default", "weak"}


def test_bad_profiles_fail_early():
    with pytest.raises(ValueError, match="unknown executor profile 'nope'"):
        check_profiles("default", ["nope"])
    with pytest.raises(ValueError, match="simulated executor"):
        check_profiles("weak", [], llm=True)
