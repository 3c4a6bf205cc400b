"""harness-gym headroom on a reduced protocol, and the reference-score table produced by measurement."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import harness_gym
from harness_gym.cli.main import main
from harness_gym.evaluation import headroom, reference_scores
from harness_gym.evaluation.headroom import (
    Protocol,
    measure,
    policy_names,
    reference_table,
    summarize_setting,
    write_reference_scores,
)

PLANNING = "HarnessPlanning-v0"
DBBENCH = "HarnessDBBench-v0"
SMALL = Protocol(seeds=(0,), rollouts=2, max_tasks=3)


def test_headroom_command_on_a_reduced_protocol(tmp_path: Path, capsys) -> None:
    out = tmp_path / "headroom.md"
    names = [
        "random",
        "base",
        "forced-check",
        "check-revise",
        "expert",
        "hindsight-submit",
    ]  # no optional ones
    args = [
        "headroom",
        "--env",
        PLANNING,
        "--tasks",
        "2",
        "--seeds",
        "0",
        "--rollouts",
        "2",
        "--out",
        str(out),
        "--policies",
        *names,
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    table = out.read_text()
    assert table.strip() in printed
    header = table.splitlines()[0]
    for name in (*names, "paper Base", "paper AW"):
        assert f" {name} |" in header
    assert "| base best of rollouts | base best per task | expert best of rollouts |" in table
    raw = json.loads(out.with_suffix(".json").read_text())
    episodes = raw["episodes"][PLANNING]
    assert list(episodes) == names
    assert all(len(records) == 2 * 1 * 2 for records in episodes.values())  # tasks x seeds x rollouts
    summary = raw["summaries"][PLANNING]
    assert summary["mean_G"]["expert"] == pytest.approx(np.mean([r["G"] for r in episodes["expert"]]))


def test_optional_references_join_only_when_installed(monkeypatch) -> None:
    optional = {
        "gone": ("baselines.no_such_module", "Nope"),
        "fc-again": ("harness_gym.policies.scripted", "ForcedCheckPolicy"),
    }
    monkeypatch.setattr(headroom, "OPTIONAL_POLICIES", optional)
    names = policy_names()
    assert names[:6] == ("random", "base", "forced-check", "check-revise", "expert", "hindsight-submit")
    assert "fc-again" in names and "gone" not in names
    assert measure(PLANNING, ("fc-again",), Protocol(seeds=(0,), rollouts=1, max_tasks=1))["fc-again"]
    with pytest.raises(ValueError, match="unknown reference policy"):
        measure(PLANNING, ("gone-too",), SMALL)


def test_reference_scores_are_written_only_from_the_full_protocol() -> None:
    with pytest.raises(SystemExit, match="full eval protocol"):
        main(["headroom", "--env", "all", "--tasks", "1", "--write-reference-scores"])
    with pytest.raises(SystemExit, match="unknown env id"):
        main(["headroom", "--env", "HarnessNope-v0"])


@pytest.mark.parametrize("price", ["-0.5", "nan", "inf"])
def test_a_bad_token_price_is_named(price) -> None:
    with pytest.raises(SystemExit, match="token_price must be a finite number >= 0"):
        main(["headroom", "--env", PLANNING, "--token-price", price])


def test_the_online_reference_is_not_trained_at_a_price() -> None:
    with pytest.raises(SystemExit, match="--train-online trains at price 0 only"):
        main(["headroom", "--env", PLANNING, "--token-price", "0.05", "--train-online"])


def test_summary_ceiling_counts_tasks_any_policy_solves() -> None:
    records = {
        "base": [{"task_id": "a", "seed": 0, "rollout": r, "G": g} for r, g in enumerate((0.2, 0.4))]
        + [{"task_id": "b", "seed": 0, "rollout": r, "G": g} for r, g in enumerate((1.0, 0.0))],
        "oracle": [{"task_id": t, "seed": 0, "rollout": r, "G": 1.0} for t in "ab" for r in range(2)],
    }
    s = summarize_setting(records)
    assert s["mean_G"] == {"base": pytest.approx(0.4), "oracle": 1.0}
    assert s["best_of_rollouts"]["base"] == pytest.approx(0.7)  # mean of (0.4, 1.0)
    assert s["solved_by_observation_only"] == 0.5 and s["solved_by_any"] == 1.0
    assert s["ceiling_G"] == 1.0


def test_reference_table_is_its_measurement_and_deterministic(tmp_path: Path) -> None:
    table = reference_table([PLANNING, DBBENCH], SMALL)
    path = write_reference_scores(table, tmp_path / "reference_scores.json")
    assert json.loads(path.read_text()) == table
    assert reference_table([PLANNING, DBBENCH], SMALL) == table  # same simulator, same numbers
    for env_id in (PLANNING, DBBENCH):
        measured = measure(env_id, ("random", "expert"), SMALL)
        for name in ("random", "expert"):
            expected = round(float(np.mean([r["G"] for r in measured[name]])), 4)
            assert table["scores"][env_id][name] == expected


def test_packaged_table_covers_every_env_id_on_the_full_protocol() -> None:
    packaged = reference_scores.reference_table()
    assert packaged["protocol"] == Protocol().describe()
    from harness_gym.envs.registry import EXTRA_ENV_ENTRY_POINTS

    assert set(harness_gym.ENV_IDS) <= set(packaged["scores"])
    assert set(packaged["scores"]) - set(harness_gym.ENV_IDS) <= set(EXTRA_ENV_ENTRY_POINTS)
    for env_id in harness_gym.ENV_IDS:
        low, high = reference_scores.reference_scores(env_id)
        assert 0.0 <= low < high <= 1.0
        assert reference_scores.normalized_score(env_id, high) == pytest.approx(100.0)
    with pytest.raises(KeyError, match="known ids"):
        reference_scores.reference_scores("HarnessNope-v0")


def test_packaged_table_matches_the_current_simulator_on_planning() -> None:
    """The committed numbers are this code's measurement (rerun `harness-gym headroom
    --write-reference-scores` whenever the simulator changes)."""
    table = reference_table([PLANNING])
    assert table["scores"][PLANNING] == reference_scores.reference_table()["scores"][PLANNING]
