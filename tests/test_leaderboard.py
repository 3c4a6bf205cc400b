"""Leaderboard ranking and results files: the order is by IQM, best first; what cannot be compared (another
simulator version, a NaN anywhere) is refused by name, never ranked."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness_gym.bench.leaderboard import leaderboard, ranking
from harness_gym.evaluation import results
from harness_gym.evaluation.reference_scores import reference_scores

ENV = "HarnessPlanning-v0"
TASKS = ("t0", "t1")
SEEDS = tuple(range(8))
"""Eight runs: the IQM drops the two lowest and the two highest."""


def hand_built(seed_scores: dict[str, list[float]]) -> dict[str, Any]:
    """A results document whose policies have these normalised per-seed scores (one per ``SEEDS``),
    every episode of a seed at the G that gives its score; ``base`` is scripted, the others learners
    with one model per seed."""
    random, expert = reference_scores(ENV)
    entry = results.setting(ENV, TASKS)
    for name, scores in seed_scores.items():
        episodes = [
            SimpleNamespace(seed=seed, task_id=task, rollout=0, G=random + score / 100 * (expert - random))
            for seed, score in zip(SEEDS, scores, strict=True)
            for task in TASKS
        ]
        entry["policies"][name] = results.runs(ENV, episodes, TASKS, SEEDS, 1)
    policies = {
        name: results.policy_meta("scripted" if name == "base" else "learner", True) for name in seed_scores
    }
    return results.document(results.protocol("eval", SEEDS, 1), results.simulator(), policies, {ENV: entry})


def write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(doc))
    return path


MEAN_AND_IQM_DISAGREE = {
    "base": [0.0] * 8,
    "spiky": [10.0] * 6 + [100.0] * 2,  # IQM 10, mean 32.5: the outliers carry its mean
    "steady": [30.0] * 8,  # IQM 30, mean 30
}


def test_the_order_is_by_iqm_best_first(tmp_path: Path) -> None:
    path = write(hand_built(MEAN_AND_IQM_DISAGREE), tmp_path / "r.json")
    rows = ranking(leaderboard([path], reps=50, poi_reps=50))
    assert [row["policy"] for row in rows] == ["steady", "spiky", "base"]
    assert [row["rank"] for row in rows] == [1, 2, 3]
    iqm = {row["policy"]: row["iqm"]["estimate"] for row in rows}
    mean = {row["policy"]: row["mean"]["estimate"] for row in rows}
    assert iqm["spiky"] == pytest.approx(10.0) and mean["spiky"] == pytest.approx(32.5)
    assert iqm["steady"] == pytest.approx(30.0) and mean["spiky"] > mean["steady"]


def test_merge_refuses_another_simulator_version(tmp_path: Path) -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    other = copy.deepcopy(doc)
    other["simulator"]["version"] += 1
    with pytest.raises(results.ResultsError, match=r"another simulator \(version \d+ vs \d+\)"):
        results.merge([("a.json", doc), ("b.json", other)])
    files = [write(doc, tmp_path / "a.json"), write(other, tmp_path / "b.json")]
    with pytest.raises(
        results.ResultsError, match=r"b\.json cannot be merged with .*a\.json: another simulator"
    ):
        leaderboard(files, reps=10, poi_reps=10)


def _with(doc: dict[str, Any], where: tuple, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("scores", ENV, "policies", "base", "episode_G", 3), math.nan),  # blanked Base's intervals
        (("scores", ENV, "reference", "expert"), math.inf),
        (("scores", ENV, "policies", "steady", "seed_scores", "0"), -math.inf),
        (("aggregate",), {"metrics": {"steady": {"iqm": math.nan}}}),  # the bench's own keys too
    ],
)
def test_a_non_finite_number_anywhere_is_refused_by_name(tmp_path: Path, where: tuple, value: Any) -> None:
    path = write(_with(hand_built(MEAN_AND_IQM_DISAGREE), where, value), tmp_path / "r.json")
    at = "/".join(map(str, where))
    with pytest.raises(
        results.ResultsError, match=f"r.json does not follow .* at {at}.*: .* is not a finite"
    ):
        results.load(path)


def test_a_forged_file_with_nan_episodes_and_full_seed_scores_does_not_rank(tmp_path: Path) -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    doc["policies"]["forged"] = results.policy_meta("outside")
    doc["scores"][ENV]["policies"]["forged"] = {
        "seed_scores": {str(s): 100.0 for s in SEEDS},
        "episode_G": [math.nan] * (len(SEEDS) * len(TASKS)),
    }
    path = write(doc, tmp_path / "forged.json")
    assert "NaN" in path.read_text()
    with pytest.raises(results.ResultsError, match="forged/episode_G/0: nan is not a finite number"):
        leaderboard([path], reps=10, poi_reps=10)


def test_replications_below_one_are_refused_before_reading(tmp_path: Path) -> None:
    for reps, poi_reps in ((0, None), (-5, None), (None, 0)):
        with pytest.raises(ValueError, match="bootstrap replications must be at least 1"):
            leaderboard([tmp_path / "not-read.json"], reps=reps, poi_reps=poi_reps)
