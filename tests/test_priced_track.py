"""The priced track (``harness_gym.bench.priced``): its summary on hand-built episodes, its refusals, and
one small run end to end."""

from __future__ import annotations

import json

import pytest

from harness_gym.bench.priced import PRICES, check, markdown, summarize_setting
from harness_gym.bench.runner import BenchConfig
from harness_gym.evaluation.reference_scores import reference_scores

PLANNING = "HarnessPlanning-v0"


def rows(*episodes):
    """[task, seed, rollout, G, tokens] per episode, tasks t1, t2, ... in order."""
    return [[f"t{i + 1}", 0, 0, g, tokens] for i, (g, tokens) in enumerate(episodes)]


PLAYED = {
    "references": {
        "base": rows((0.5, 1000), (0.7, 1000)),
        "forced-check": rows((0.5, 2000), (0.7, 2000)),
        "expert": rows((0.9, 3000), (0.8, 3000)),
    },
    "prices": {"0.05": {"open-loop": rows((0.7, 2000), (0.7, 2000)), "bc": rows((0.6, 500), (0.6, 500))}},
}


def test_the_summary_prices_every_episode_and_normalises_against_bases_tokens():
    summary = summarize_setting(PLANNING, PLAYED)
    assert summary["threshold_tokens"] == 1000 and summary["token_limit"] == 2 * 3000
    at = summary["prices"]["0.05"]
    bc = at["policies"]["bc"]
    random, expert = reference_scores(PLANNING, "v2")
    assert bc["return"] == pytest.approx(0.6 - 0.05 * 500 / 1000)
    assert bc["normalized_reward"] == pytest.approx((0.6 - random) / (expert - random))
    assert bc["normalized_cost"] == 0.5 and bc["within_threshold"] and bc["kind"] == "learner"
    assert (
        at["policies"]["expert"]["normalized_cost"] == 3.0
        and not at["policies"]["expert"]["within_threshold"]
    )
    assert at["policies"]["open-loop"]["kind"] == "reference"
    # in return: expert 0.9 - 0.15 and 0.8 - 0.15, open-loop 0.7 - 0.1 twice: paired differences 0.15, 0.05
    assert at["gap"]["gap"] == pytest.approx(0.10) and at["gap"]["pairs"] == 2
    assert at["gap"]["ci_low"] <= 0.10 <= at["gap"]["ci_high"]
    # frontiers up to 6,000 tokens: learners (500, .6); references (1000, .6), (2000, .7), (3000, .85)
    assert at["hypervolume"]["learner"] == pytest.approx(0.6 * 5500 / 6000)
    assert at["hypervolume"]["reference"] == pytest.approx((0.6 * 1000 + 0.7 * 1000 + 0.85 * 3000) / 6000)


def test_no_string_for_a_price_means_no_gap_and_mismatched_episodes_are_refused():
    played = json.loads(json.dumps(PLAYED))
    del played["prices"]["0.05"]["open-loop"]
    assert summarize_setting(PLANNING, played)["prices"]["0.05"]["gap"] is None
    played["prices"]["0.05"]["open-loop"] = rows((0.7, 2000))
    with pytest.raises(ValueError, match="did not play the same episodes"):
        summarize_setting(PLANNING, played)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"obs_layout": "v1"}, "needs per-step tokens: MDP v2"),
        ({"token_price": 0.05}, "sets its own prices"),
        ({"eval_profiles": ("weak",)}, "training profile only"),
    ],
)
def test_what_the_track_cannot_do_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        check(BenchConfig(track="priced", **({"obs_layout": "v2"} | change)))


def test_a_small_run_end_to_end(tmp_path):
    pytest.importorskip("d3rlpy")
    from harness_gym.bench.priced import run
    from harness_gym.bench.runner import run as run_paper

    config = BenchConfig(
        settings=(PLANNING,), seeds=(0,), rollouts=1, episodes_per_task=1, algos=("bc-budget",), n_steps=5,
        n_boot=200, out=str(tmp_path / "out"), show_progress=False, workers=1, curves=False,
        obs_layout="v2", track="priced",
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"runs through harness_gym\.bench\.priced\.run"):
        run_paper(config)
    summary = run(config)
    assert summary["prices"] == [f"{p:g}" for p in PRICES]
    setting = summary["settings"][PLANNING]
    for tag in summary["prices"]:
        policies = setting["prices"][tag]["policies"]
        assert {"base", "forced-check", "expert", "bc-budget"} <= set(policies)
        assert policies["bc-budget"]["return"] <= policies["bc-budget"]["G"]
    base = {tag: setting["prices"][tag]["policies"]["base"] for tag in summary["prices"]}
    assert len({(b["G"], b["tokens"]) for b in base.values()}) == 1  # Base's episodes serve every price
    assert (tmp_path / "out" / "priced.md").read_text().startswith("# The priced track")
    assert not (tmp_path / "out" / "checkpoints").exists()
    assert markdown(summary) == (tmp_path / "out" / "priced.md").read_text()
