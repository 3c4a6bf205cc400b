"""The table of learners builds every config from the budgets: a budget value changed in
``baselines.budgets`` reaches every config that uses it, so no config or factory holds a copy of it."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest
from conftest import require

require("d3rlpy")

import baselines.train as train_module
from baselines import budgets, catalog
from baselines.awr import DiscreteAWRConfig
from baselines.catalog import ALGOS
from baselines.iql import DiscreteIQLConfig
from baselines.train import make_config, n_train_steps

AWR_FAMILY = {"awr", "awr-converged", "bc", "bc-converged"}
Q_LEARNERS = {"cql", "bcq", "dqn", "double-dqn"}

READERS: dict[tuple[str, str], tuple[set[str], str]] = {
    ("AWRSchedule", "learning_rate"): (AWR_FAMILY | {"bc-d3rlpy"}, "learning_rate"),
    ("AWRSchedule", "beta"): (AWR_FAMILY, "beta"),
    ("AWRSchedule", "weight_clip"): (AWR_FAMILY, "weight_clip"),
    ("AWRSchedule", "entropy_coef"): (AWR_FAMILY, "entropy_coef"),
    ("QSchedule", "learning_rate"): (Q_LEARNERS, "learning_rate"),
    ("QSchedule", "cql_alpha"): ({"cql"}, "alpha"),
    ("QSchedule", "bcq_action_flexibility"): ({"bcq"}, "action_flexibility"),
    **{("IQLSchedule", f.name): ({"iql"}, f.name) for f in dataclasses.fields(budgets.IQLSchedule)},
    **{("SACSchedule", f.name): ({"sac"}, f.name) for f in dataclasses.fields(budgets.SACSchedule)},
}
"""(budget class, field) -> the learners whose config reads it, and the config field it sets."""


def _other(value: Any) -> Any:
    """A different valid value of a budget field."""
    if isinstance(value, tuple):
        return tuple(v / 2 for v in value)
    return value + 1 if isinstance(value, int) else value / 2


def test_every_budget_field_has_its_readers_listed() -> None:
    fields = {
        (cls.__name__, f.name)
        for cls in (budgets.AWRSchedule, budgets.QSchedule, budgets.IQLSchedule, budgets.SACSchedule)
        for f in dataclasses.fields(cls)
    }
    assert fields - set(READERS) == {("AWRSchedule", "paper_epochs")}  # a length: see the test below


@pytest.mark.parametrize(("budget", "field"), sorted(READERS))
def test_a_changed_budget_value_reaches_exactly_its_readers(
    monkeypatch: pytest.MonkeyPatch, budget: str, field: str
) -> None:
    readers, config_field = READERS[(budget, field)]
    cls = getattr(budgets, budget)
    before = {algo: make_config(algo).serialize() for algo in ALGOS}
    changed = _other(getattr(cls(), field))
    monkeypatch.setattr(catalog, budget, functools.partial(cls, **{field: changed}))
    after = {algo: make_config(algo) for algo in ALGOS}
    assert {algo for algo in ALGOS if after[algo].serialize() != before[algo]} == readers
    for algo in readers:
        assert getattr(after[algo], config_field) == changed


def test_the_shared_schedule_reaches_every_config() -> None:
    s = budgets.Schedule(n_steps=60, gamma=0.5, batch_size=17, hidden_units=5)
    for algo in ALGOS:
        cfg = make_config(algo, s)
        assert cfg.batch_size == 17
        width = getattr(cfg, "hidden_units", None)
        if width is None:
            encoder = getattr(cfg, "encoder_factory", None) or cfg.actor_encoder_factory
            width = encoder.hidden_units[0]
        assert width == 5
        if algo in Q_LEARNERS | {"sac"}:
            assert cfg.target_update_interval == s.target_update_interval == 3
            assert cfg.gamma == 0.5
    assert make_config("iql", s).gamma == 0.5


def test_the_paper_configurations_train_for_the_papers_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    s = budgets.Schedule(n_steps=60, batch_size=10)
    monkeypatch.setattr(train_module, "AWRSchedule", functools.partial(budgets.AWRSchedule, paper_epochs=3))
    lengths = {algo: n_train_steps(algo, 95, s) for algo in ALGOS}
    assert {algo for algo, n in lengths.items() if n != 60} == {"awr", "bc"}
    assert lengths["awr"] == lengths["bc"] == 3 * 10


def test_the_learners_config_defaults_are_the_budgets() -> None:
    """A config made without the table (``DiscreteIQLConfig()``) is the table's, at the default budgets."""
    assert DiscreteIQLConfig().serialize() == make_config("iql").serialize()
    assert DiscreteAWRConfig().serialize() == make_config("awr").serialize()


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown algorithm 'awq'.*awr-converged"):
        make_config("awq")
