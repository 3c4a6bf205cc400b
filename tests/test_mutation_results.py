"""Results files, scoring and the leaderboard: the decisions a merged or ranked file rests on, each on a
hand-built document (no episode is played)."""

from __future__ import annotations

import copy

import pytest
from test_leaderboard import MEAN_AND_IQM_DISAGREE, hand_built

from harness_gym.evaluation import results


def test_merge_keeps_every_policy_and_marks_a_smoke_part() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    other = hand_built({"base": MEAN_AND_IQM_DISAGREE["base"], "late": [50.0] * 8})
    other["smoke"] = True
    other["harness_gym"] = "0.0.other"
    merged = results.merge([("a.json", doc), ("b.json", other)])
    assert merged["smoke"] is True
    assert merged["harness_gym"] == ", ".join(sorted({doc["harness_gym"], "0.0.other"}))
    assert set(merged["policies"]) == {"base", "spiky", "steady", "late"}
    env = next(iter(doc["scores"]))
    assert set(merged["scores"][env]["policies"]) == {"base", "spiky", "steady", "late"}
    assert results.merge([("a.json", doc)])["smoke"] is False


def test_merge_refuses_a_policy_that_played_other_episodes() -> None:
    doc = hand_built(MEAN_AND_IQM_DISAGREE)
    other = copy.deepcopy(doc)
    env = next(iter(doc["scores"]))
    other["scores"][env]["policies"]["base"]["episode_G"][0] += 1.0
    with pytest.raises(
        results.ResultsError, match=r"^'base' on .* played other episodes in b\.json than in a\.json"
    ):
        results.merge([("a.json", doc), ("b.json", other)])
    with pytest.raises(results.ResultsError, match="no results to merge"):
        results.merge([])
