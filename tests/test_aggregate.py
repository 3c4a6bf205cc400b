"""Per-seed normalised scores on the fixed reference ends of each env id."""

from types import SimpleNamespace

import pytest

from harness_gym.aggregate import seed_scores
from harness_gym.reference_scores import reference_scores

ENV = "HarnessPlanning-v0"


def test_seed_scores_normalise_each_seeds_mean() -> None:
    low, high = reference_scores(ENV)
    ep = lambda seed, g: SimpleNamespace(env_id=ENV, seed=seed, G=g)  # noqa: E731
    scores = seed_scores({"awr": [ep(0, low), ep(0, low), ep(1, high), ep(1, low)]}, ENV)
    assert scores["awr"][0] == pytest.approx(0.0)
    assert scores["awr"][1] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="HarnessCoding-v0"):
        seed_scores({"awr": [SimpleNamespace(env_id="HarnessCoding-v0", seed=0, G=0.5)]}, ENV)
