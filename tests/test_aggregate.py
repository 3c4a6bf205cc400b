"""Aggregate statistics: normalised runs, rliable's interval estimates, probability of improvement,
performance profiles, pass^k and the report section built from them."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness_gym.bench.report import FIGURES, HEADINGS, markdown_tables, write_figures
from harness_gym.core.rubric import SOLVED_G
from harness_gym.evaluation.aggregate import (
    improvement_pairs,
    interval_estimates,
    pass_hat_k,
    pass_k,
    probability_of_improvement,
    score_matrices,
    seed_scores,
    summarize,
)
from harness_gym.evaluation.reference_scores import reference_scores

ENV = "HarnessPlanning-v0"
DB = "HarnessDBBench-v0"


def test_seed_scores_normalise_each_seeds_mean() -> None:
    low, high = reference_scores(ENV)
    ep = lambda seed, g: SimpleNamespace(env_id=ENV, seed=seed, G=g)  # noqa: E731
    scores = seed_scores({"awr": [ep(0, low), ep(0, low), ep(1, high), ep(1, low)]}, ENV)
    assert scores["awr"][0] == pytest.approx(0.0)
    assert scores["awr"][1] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="HarnessCoding-v0"):
        seed_scores({"awr": [SimpleNamespace(env_id="HarnessCoding-v0", seed=0, G=0.5)]}, ENV)


# -- score matrices --------------------------------------------------------------------------------
def _results(table: dict[str, dict[str, list[float]]], **extra: Any) -> dict[str, Any]:
    """The scores of a results document from {env id: {policy: [score of seed 0, 1, ...]}}, through JSON
    like results.json (no episodes: every policy counts as one with per-seed models)."""
    scores = {
        env_id: {"policies": {name: {"seed_scores": dict(enumerate(s))} for name, s in by_policy.items()}}
        for env_id, by_policy in table.items()
    }
    return json.loads(json.dumps({"scores": scores, **extra}))


def test_score_matrices_are_seeds_by_settings() -> None:
    m = score_matrices(_results({ENV: {"awr": [1.0, 2.0, 3.0]}, DB: {"awr": [4.0, 5.0, 6.0]}}))
    assert m.settings == (ENV, DB) and m.seeds == (0, 1, 2)  # JSON's string seeds read back as ints
    np.testing.assert_array_equal(m.scores["awr"], [[1, 4], [2, 5], [3, 6]])


def test_settings_missing_a_policy_are_handled_explicitly() -> None:
    results = _results(
        {ENV: {"base": [0.0, 1.0], "awr": [2.0, 3.0]}, DB: {"base": [4.0, 5.0]}, "HarnessCoding-v0": {}}
    )
    dropped = score_matrices(results, missing="drop-policy")
    assert set(dropped.scores) == {"base"} and dropped.settings == (ENV, DB)
    assert dropped.dropped_policies == {"awr": [DB]}
    assert dropped.unscored_settings == ("HarnessCoding-v0",)
    narrowed = score_matrices(results, missing="drop-setting")
    assert set(narrowed.scores) == {"base", "awr"} and narrowed.settings == (ENV,)
    assert narrowed.dropped_settings == {DB: ["awr"]}
    with pytest.raises(ValueError, match=f"awr: {DB}"):
        score_matrices(results, missing="error")
    with pytest.raises(ValueError, match="missing must be"):
        score_matrices(results, missing="ignore")  # type: ignore[arg-type]
    # a seed missing counts as a missing cell too
    partial = score_matrices(_results({ENV: {"base": [0.0, 1.0], "awr": [2.0]}}))
    assert set(partial.scores) == {"base"} and partial.dropped_policies == {"awr": [ENV]}


def test_score_matrices_record_only_the_drops_made_and_name_every_gap() -> None:
    """Each drop mode records its own kind of drop and an empty dict for the other; ``error`` names every
    policy with its missing settings (policies joined by "; ", settings by ", ")."""
    results = _results({ENV: {"base": [0.0, 1.0], "awr": [2.0], "bc": [1.0, 2.0]}, DB: {"base": [4.0, 5.0]}})
    by_policy = score_matrices(results, missing="drop-policy")
    assert by_policy.dropped_policies == {"awr": [ENV, DB], "bc": [DB]} and by_policy.dropped_settings == {}
    by_setting = score_matrices(results, missing="drop-setting")
    assert by_setting.dropped_settings == {ENV: ["awr"], DB: ["awr", "bc"]}
    assert by_setting.dropped_policies == {} and by_setting.settings == () and by_setting.scores == {}
    detail = f"awr: {ENV}, {DB}; bc: {DB}"
    message = f"policies without a score for every seed [0, 1] on some setting: {detail}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        score_matrices(results, missing="error")
    complete = score_matrices(_results({ENV: {"base": [0.0, 1.0]}}), missing="error")
    assert complete.dropped_policies == {} and complete.dropped_settings == {}


def test_score_matrices_without_any_seed_or_setting_are_empty() -> None:
    """No matrices at all when nothing was scored, or when the policies of a setting list no seed: an
    empty dict, not matrices with zero rows."""
    no_seeds = score_matrices({"scores": {ENV: {"policies": {"base": {"seed_scores": {}}}}}})
    assert no_seeds.scores == {} and no_seeds.seeds == () and no_seeds.settings == (ENV,)
    nothing = score_matrices({"scores": {ENV: {"policies": {}}}})
    assert nothing.scores == {} and nothing.unscored_settings == (ENV,)
    assert score_matrices({}).scores == {}


# -- interval estimates ----------------------------------------------------------------------------
def test_iqm_mean_median_and_gap_of_known_matrices() -> None:
    from rliable import metrics

    # 2 seeds x 4 settings, 8 distinct values: the IQM drops the two lowest and the two highest
    x = np.array([[0.0, 10.0, 50.0, 1000.0], [-300.0, 20.0, 60.0, 70.0]])
    est = interval_estimates({"p": x}, reps=200)["p"]
    assert est["iqm"]["estimate"] == pytest.approx((10 + 20 + 50 + 60) / 4)
    assert est["iqm"]["estimate"] == pytest.approx(metrics.aggregate_iqm(x))
    assert est["mean"]["estimate"] == pytest.approx(x.mean())
    assert est["median"]["estimate"] == pytest.approx(np.median([-150.0, 15.0, 55.0, 535.0]))
    clipped = np.minimum(x, 100.0)  # the optimality gap counts shortfall below the expert only
    assert est["optimality_gap"]["estimate"] == pytest.approx(100.0 - clipped.mean())
    constant = interval_estimates({"c": np.full((3, 2), 42.0)}, reps=100)["c"]["iqm"]
    assert constant == {"estimate": 42.0, "ci_low": 42.0, "ci_high": 42.0}


def test_bootstrap_interval_contains_the_estimate_and_is_reproducible() -> None:
    rng = np.random.default_rng(7)
    scores = {"a": rng.normal(50, 20, (3, 8)), "b": rng.normal(20, 20, (3, 8))}
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    first = interval_estimates(scores, reps=100, seed=5)
    assert np.array_equal(np.random.get_state()[1], before)  # the caller's global RNG is left alone
    again = interval_estimates(scores, reps=100, seed=5)
    assert first == again
    alone = interval_estimates({"a": scores["a"]}, reps=100, seed=5)
    assert alone["a"] == first["a"]  # a policy's interval does not depend on the other policies
    other = interval_estimates(scores, reps=100, seed=6)
    assert other["a"]["iqm"] != first["a"]["iqm"]
    for by_metric in first.values():
        for e in by_metric.values():
            assert e["ci_low"] <= e["estimate"] <= e["ci_high"]
            assert e["ci_low"] < e["ci_high"]


def test_interval_estimates_seed_defaults_to_zero_and_confidence_sets_the_width() -> None:
    """Without a seed the intervals are those of seed 0; a lower confidence gives a nested, narrower
    interval from the same bootstrap replications."""
    rng = np.random.default_rng(8)
    scores = {"a": rng.normal(50, 20, (4, 6))}
    wide = interval_estimates(scores, reps=100)["a"]
    assert wide == interval_estimates(scores, reps=100, seed=0)["a"]
    narrow = interval_estimates(scores, reps=100, confidence=0.5)["a"]
    for metric in ("iqm", "mean", "median", "optimality_gap"):
        w, n = wide[metric], narrow[metric]
        assert w["estimate"] == n["estimate"]
        assert w["ci_low"] < n["ci_low"] < n["ci_high"] < w["ci_high"]


# -- probability of improvement --------------------------------------------------------------------
def test_probability_of_improvement_on_dominated_and_identical_runs() -> None:
    rng = np.random.default_rng(0)
    low = rng.uniform(0, 10, (3, 4))
    scores = {"high": low + 50, "low": low, "same": low.copy()}
    pairs = [("high", "low"), ("low", "high"), ("same", "low")]
    by_pair = {(p["x"], p["y"]): p for p in probability_of_improvement(scores, pairs, reps=100)}
    assert by_pair["high", "low"] == {"x": "high", "y": "low", "estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    assert by_pair["low", "high"]["estimate"] == 0.0 and by_pair["low", "high"]["ci_high"] == 0.0
    assert by_pair["same", "low"]["estimate"] == 0.5
    noisy = {"a": rng.normal(0, 1, (3, 4)), "b": rng.normal(0, 1, (3, 4))}
    pairs = [("a", "b"), ("b", "a")]
    serial = probability_of_improvement(noisy, pairs, reps=100, seed=1)
    assert probability_of_improvement(noisy, pairs, reps=100, seed=1, workers=2) == serial
    assert serial[0]["ci_low"] < serial[0]["estimate"] < serial[0]["ci_high"]
    with pytest.raises(ValueError, match="no score matrix for \\['bc'\\]"):
        probability_of_improvement(scores, [("high", "bc")], reps=10)


def test_probability_of_improvement_seed_defaults_to_zero_and_confidence_sets_the_width() -> None:
    """Without a seed the interval is that of seed 0; a lower confidence gives a nested, narrower one."""
    rng = np.random.default_rng(9)
    noisy = {"a": rng.normal(0, 1, (4, 5)), "b": rng.normal(0, 1, (4, 5))}
    (wide,) = probability_of_improvement(noisy, [("a", "b")], reps=100)
    assert [wide] == probability_of_improvement(noisy, [("a", "b")], reps=100, seed=0)
    (narrow,) = probability_of_improvement(noisy, [("a", "b")], reps=100, confidence=0.5)
    assert narrow["estimate"] == wide["estimate"]
    assert wide["ci_low"] < narrow["ci_low"] < narrow["ci_high"] < wide["ci_high"]


def test_vectorised_probability_of_improvement_equals_rliables() -> None:
    from rliable import metrics

    from harness_gym.evaluation.aggregate import _poi

    rng = np.random.default_rng(4)
    for shape_x, shape_y in [((3, 8), (3, 8)), ((5, 2), (2, 2))]:
        x = rng.integers(0, 4, shape_x).astype(float)  # small integers: many ties
        y = rng.integers(0, 4, shape_y).astype(float)
        assert _poi(x, y)[0] == pytest.approx(metrics.probability_of_improvement(x, y), abs=1e-12)
    x = rng.normal(size=(3, 4))
    assert _poi(x, x.copy())[0] == 0.5


def test_every_learner_is_compared_with_base_and_bc() -> None:
    policies = ["base", "forced-check", "expert", "awr", "awr-greedy", "bc", "dqn"]
    pairs = improvement_pairs(policies, references=["expert"])
    assert ("awr", "bc") in pairs and ("bc", "base") in pairs and ("bc", "bc") not in pairs
    for learner in ("awr", "awr-greedy", "dqn"):
        assert (learner, "base") in pairs and (learner, "bc") in pairs
    assert not any(x in {"base", "forced-check", "expert"} for x, _ in pairs)
    assert improvement_pairs(["base", "iql"]) == [("iql", "base")]  # no bc in the results


# -- pass^k ----------------------------------------------------------------------------------------
def _brute_force_pass_k(outcomes: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    return sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_pass_hat_k_matches_enumerating_every_k_subset(n: int) -> None:
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            assert pass_hat_k(c, n, k) == pytest.approx(_brute_force_pass_k(outcomes, k))


def test_pass_hat_k_rejects_impossible_inputs() -> None:
    with pytest.raises(ValueError, match="k=4 with n=3"):
        pass_hat_k(2, 3, 4)
    with pytest.raises(ValueError, match="k=0"):
        pass_hat_k(2, 3, 0)
    with pytest.raises(ValueError, match="successes"):
        pass_hat_k(4, 3, 1)


def test_pass_k_groups_rollouts_by_task_and_seed() -> None:
    def episodes(task: str, seed: int, gs: list[float]) -> list[SimpleNamespace]:
        return [SimpleNamespace(task_id=task, seed=seed, G=g) for g in gs]

    # (t0, seed 0): 2 of 3 succeed (G at the threshold counts); (t0, seed 1): 3 of 3; (t1, seed 0): 0 of 3
    results = (
        episodes("t0", 0, [1.0, SOLVED_G, 0.98]) + episodes("t0", 1, [1.0] * 3) + episodes("t1", 0, [0.5] * 3)
    )
    got = pass_k({"awr": results}, ks=[1, 2, 3])["awr"]
    assert got == pytest.approx({"1": (2 / 3 + 1 + 0) / 3, "2": (1 / 3 + 1 + 0) / 3, "3": (0 + 1 + 0) / 3})
    assert pass_k({"awr": results}, ks=[1], threshold=0.5)["awr"]["1"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="k=4 with n=3"):
        pass_k({"awr": results}, ks=[4])
    with pytest.raises(ValueError, match="no episodes"):
        pass_k({"awr": []}, ks=[1])


# -- summary and report ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fake_results() -> dict[str, Any]:
    """3 seeds x 2 settings; bc and awr beat base everywhere; an expert reference; pass^k of 3 rollouts."""
    rng = np.random.default_rng(1)
    shift = {"base": 0.0, "forced-check": 5.0, "expert": 100.0, "bc": 20.0, "awr": 40.0}
    table = {env: {name: list(s + rng.normal(0, 3, 3)) for name, s in shift.items()} for env in (ENV, DB)}
    results = _results(table, config={"references": ["expert"], "seeds": [0, 1, 2], "rollouts": 3})
    results["settings"] = {env: {} for env in (ENV, DB)}
    for env in (ENV, DB):
        results["settings"][env]["pass_k"] = {
            name: {"1": 0.5, "2": 0.25, "3": 0.125} if name == "awr" else {"1": 0.2, "2": 0.1, "3": 0.0}
            for name in shift
        }
    results["aggregate"] = summarize(results, reps=50, poi_reps=20, seed=3, profile_reps=5)
    return json.loads(json.dumps(results))


def test_summarize_is_json_ready_and_reproducible(fake_results: dict[str, Any]) -> None:
    aggregate = fake_results["aggregate"]
    assert aggregate["runs_per_policy"] == 6 and aggregate["seeds"] == [0, 1, 2]
    assert set(aggregate["metrics"]) == {"base", "forced-check", "expert", "bc", "awr"}
    pairs = {(p["x"], p["y"]): p["estimate"] for p in aggregate["improvement"]}
    assert set(pairs) == {("bc", "base"), ("awr", "base"), ("awr", "bc")}
    assert pairs["awr", "bc"] == 1.0
    profile = aggregate["profile"]
    assert profile["tau"][0] <= 0 and profile["tau"][-1] >= 100
    awr = profile["policies"]["awr"]["fraction"]
    assert awr[0] == 1.0 and awr[-1] == 0.0 and all(a >= b for a, b in itertools.pairwise(awr))
    assert summarize(fake_results, reps=50, poi_reps=20, seed=3, profile_reps=5) == aggregate
    for bad in ({"reps": 0}, {"poi_reps": 0}, {"profile_reps": 0}):
        with pytest.raises(ValueError, match=r"^bootstrap replications must be positive, got reps="):
            summarize(fake_results, **bad)


def test_report_renders_the_aggregate_section(
    fake_results: dict[str, Any], tmp_path: Path, saved_figures: dict[str, Any]
) -> None:
    md = markdown_tables(fake_results)
    section = md.split(f"## {HEADINGS['aggregate']}\n", 1)[1]
    assert "3 seeds x 2 settings = 6 runs per policy" in section
    metrics = fake_results["aggregate"]["metrics"]
    rows = [line for line in section.splitlines() if line.startswith("| awr |")]
    iqm = metrics["awr"]["iqm"]
    assert rows[0].startswith(
        f"| awr | {iqm['estimate']:.1f} | [{iqm['ci_low']:.1f}, {iqm['ci_high']:.1f}] |"
    )
    # a point interval is marked and explained, not shown as if it were a bug
    assert "| awr | bc | 1.00 | [1.00, 1.00]° |" in section and "° A point interval" in section
    assert "pass^3:" in section and "| awr | 0.125 | 0.125 | 0.125 |" in section
    paths = write_figures(fake_results, tmp_path)
    assert paths["performance_profile"] == tmp_path / FIGURES["performance_profile"]
    assert paths["performance_profile"].stat().st_size > 0
    # the plotted profiles are the computed ones, one labelled line per policy
    fig = saved_figures[FIGURES["performance_profile"]]
    profile = fake_results["aggregate"]["profile"]
    lines = {
        line.get_label(): line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")
    }
    assert lines.keys() == profile["policies"].keys()
    for name, line in lines.items():
        assert list(line.get_xdata()) == pytest.approx(profile["tau"])
        assert list(line.get_ydata()) == pytest.approx(profile["policies"][name]["fraction"])
    assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == sorted(profile["policies"])


def test_report_without_aggregate_says_so() -> None:
    md = markdown_tables({"settings": {ENV: {}}})
    assert f"## {HEADINGS['aggregate']}\n\n_No aggregate statistics in these results._" in md


def test_profile_thresholds_span_random_to_expert_and_every_score() -> None:
    from harness_gym.evaluation.aggregate import profile_taus

    assert profile_taus({}).tolist() == np.linspace(0.0, 100.0, 41).tolist()
    taus = profile_taus({"a": np.array([[12.5, 80.0]]), "b": np.array([[-3.5], [120.2]])})
    assert (taus[0], taus[-1], len(taus)) == (-4.0, 121.0, 41)
    assert profile_taus({"a": np.array([[5.0, 50.0]])}, points=3).tolist() == [0.0, 50.0, 100.0]


def test_performance_profile_bands_bracket_the_profile() -> None:
    from harness_gym.evaluation.aggregate import performance_profiles

    scores = {"a": np.array([[10.0, 60.0], [30.0, 90.0], [50.0, 20.0]])}
    taus = np.array([0.0, 25.0, 55.0, 100.0])
    out = performance_profiles(scores, taus, reps=200)
    assert set(out["a"]) == {"fraction", "ci_low", "ci_high"}
    assert out["a"]["fraction"] == pytest.approx([1.0, 4 / 6, 2 / 6, 0.0])
    for low, mid, high in zip(out["a"]["ci_low"], out["a"]["fraction"], out["a"]["ci_high"], strict=True):
        assert low <= mid <= high
    assert out["a"]["ci_low"][1] < out["a"]["ci_high"][1]  # a band, not a point, where runs differ
    assert performance_profiles(scores, taus, reps=200) == out  # seeded
    assert performance_profiles(scores, taus, reps=200, seed=0) == out


def test_episode_level_metrics_are_rliables_and_resample_each_runs_episodes() -> None:
    """The episode-level path computes the four metrics as rliable does (also over leading replicate
    axes); its interval resamples the episodes within each run: a point when every run's episodes are
    equal, reproducible by seed, narrower at a lower confidence."""
    from rliable import metrics

    from harness_gym.evaluation.aggregate import _metric_values, episode_interval_estimates

    def rliable_values(x: np.ndarray) -> list[float]:
        return [
            metrics.aggregate_iqm(x),
            metrics.aggregate_mean(x),
            metrics.aggregate_median(x),
            metrics.aggregate_optimality_gap(x, 100.0),
        ]

    x = np.array([[0.0, 10.0, 50.0, 1000.0], [-300.0, 20.0, 60.0, 70.0]])
    y = np.array([[5.0, 5.0, 90.0, 120.0], [0.0, 40.0, 30.0, 20.0]])
    np.testing.assert_allclose(_metric_values(x), rliable_values(x))
    np.testing.assert_allclose(_metric_values(np.stack([x, y])), [rliable_values(x), rliable_values(y)])

    runs = np.array([[20.0, 80.0], [40.0, 60.0]])  # 2 seeds x 2 settings
    flat = [np.repeat(runs[:, [e]], 5, axis=1) for e in range(2)]  # every episode equals its run's mean
    point = episode_interval_estimates(runs, flat, reps=50, seed=1)
    assert list(point) == ["iqm", "mean", "median", "optimality_gap"]
    for metric, value in zip(point, _metric_values(runs), strict=True):
        assert point[metric] == {"estimate": value, "ci_low": value, "ci_high": value}

    spread = [runs[:, [e]] + np.array([[-20.0, -10.0, 0.0, 10.0, 20.0]]) for e in range(2)]
    wide = episode_interval_estimates(runs, spread, reps=400, seed=1)
    assert wide == episode_interval_estimates(runs, spread, reps=400, seed=1)
    assert episode_interval_estimates(runs, spread, reps=400) == episode_interval_estimates(
        runs, spread, reps=400, seed=0
    )
    assert wide != episode_interval_estimates(runs, spread, reps=400, seed=2)
    narrow = episode_interval_estimates(runs, spread, reps=400, seed=1, confidence=0.5)
    for metric in ("iqm", "mean", "median"):
        e, n = wide[metric], narrow[metric]
        assert e["estimate"] == pytest.approx(runs.mean() if metric != "iqm" else e["estimate"])
        assert e["ci_low"] < n["ci_low"] <= e["estimate"] <= n["ci_high"] < e["ci_high"]
        assert e["ci_high"] - e["ci_low"] < 40.0  # episodes are averaged within a run, not pooled


def _episode_document(seeds: int) -> dict[str, Any]:
    """2 settings x ``seeds`` seeds x 4 episodes; base, bc, awr (one shared model: episodes resampled)
    and an expert reference; raw G in [0, 1] with reference scores random 0, expert 1."""
    rng = np.random.default_rng(4)
    shift = {"base": 0.1, "bc": 0.3, "awr": 0.5, "expert": 0.9}
    scores = {}
    for env in (ENV, DB):
        policies = {}
        for name, s in shift.items():
            g = np.clip(s + rng.normal(0, 0.15, (seeds, 4)), 0, 1)
            policies[name] = {"seed_scores": {str(k): 100 * float(g[k].mean()) for k in range(seeds)}}
            policies[name]["episode_G"] = g.ravel().tolist()
        scores[env] = {"policies": policies, "reference": {"random": 0.0, "expert": 1.0}}
    return {
        "scores": scores,
        "protocol": {"seeds": list(range(seeds))},
        "config": {"references": ["expert"]},
        "policies": {"awr": {"per_seed_models": False}, "expert": {"kind": "reference"}},
    }


@pytest.mark.parametrize("seeds", [1, 3])
def test_summarize_is_composed_of_the_documented_estimates(seeds: int) -> None:
    """Each part of the summary is the function that defines it, called with the document's matrices,
    episodes and the bootstrap settings: intervals over episodes for a policy with one shared model,
    over seeds otherwise (none with a single seed); per-setting means; the paired comparisons against
    base and the best non-reference policy; the improvement pairs; the profile."""
    from harness_gym.evaluation.aggregate import (
        _episodes,
        _metric_values,
        best_policy,
        episode_interval_estimates,
        paired_comparison,
        performance_profiles,
        profile_taus,
    )

    doc = _episode_document(seeds)
    out = summarize(doc, reps=30, poi_reps=20, seed=2, confidence=0.8, profile_reps=4)
    m = score_matrices(doc)
    assert out["settings"] == [ENV, DB] and out["seeds"] == list(range(seeds))
    assert out["runs_per_policy"] == 2 * seeds and out["missing"] == "drop-policy"
    assert out["bootstrap"] == {"reps": 30, "poi_reps": 20, "profile_reps": 4, "seed": 2, "confidence": 0.8}
    assert out["references"] == ["expert"]
    episodes = {name: _episodes(doc, name, m.settings) for name in m.scores}
    assert all(e is not None for e in episodes.values())
    for name, runs in m.scores.items():
        metrics = dict(out["metrics"][name])
        interval = metrics.pop("interval")
        if name == "awr":
            assert interval == "episodes"
            assert metrics == episode_interval_estimates(runs, episodes[name], 30, 2, 0.8)
        elif seeds > 1:
            assert interval == "seeds"
            assert metrics == interval_estimates({name: runs}, 30, 2, 0.8)[name]
        else:
            assert interval is None
            point = _metric_values(runs)
            assert metrics == {
                k: {"estimate": float(point[i]), "ci_low": None, "ci_high": None}
                for i, k in enumerate(("iqm", "mean", "median", "optimality_gap"))
            }
        for e, env in enumerate(m.settings):
            entry = out["per_setting"][env][name]
            assert entry["estimate"] == pytest.approx(runs[:, e].mean())
            assert (entry["ci_low"] is None) == (interval is None)
            if interval is not None:
                assert entry["ci_low"] <= entry["ci_high"] and entry["ci_low"] < entry["ci_high"]
    assert out["best"] == best_policy(out["metrics"], ["expert"]) == "awr"

    def side(name: str) -> tuple[np.ndarray, Any, bool]:
        return m.scores[name], episodes[name], name != "awr"

    assert out["paired"]["base"] == {"best": paired_comparison(side("base"), side("awr"), 20, 2, 0.8)}
    assert out["paired"]["awr"] == {"base": paired_comparison(side("awr"), side("base"), 20, 2, 0.8)}
    assert out["paired"]["bc"] == {
        "base": paired_comparison(side("bc"), side("base"), 20, 2, 0.8),
        "best": paired_comparison(side("bc"), side("awr"), 20, 2, 0.8),
    }
    improvement = {(p["x"], p["y"]): p for p in out["improvement"]}
    assert list(improvement) == [("bc", "base"), ("awr", "base"), ("awr", "bc")]
    for x in ("bc", "awr"):
        poi = out["paired"][x]["base"]["poi"]
        assert improvement[x, "base"] == {"x": x, "y": "base", **poi, "paired": True}
    awr_bc = improvement["awr", "bc"]
    assert awr_bc["paired"] is False and awr_bc["x"] == "awr" and awr_bc["y"] == "bc"
    if seeds > 1:
        want = probability_of_improvement(m.scores, [("awr", "bc")], 20, 2, 0.8)[0]
        assert awr_bc == {**want, "paired": False}
    else:
        p = float(((m.scores["awr"] > m.scores["bc"]) + 0.5 * (m.scores["awr"] == m.scores["bc"])).mean())
        assert awr_bc == {
            "x": "awr",
            "y": "bc",
            "estimate": p,
            "ci_low": None,
            "ci_high": None,
            "paired": False,
        }
    taus = profile_taus(m.scores)
    assert out["profile"]["tau"] == [float(t) for t in taus]
    assert out["profile"]["policies"] == performance_profiles(m.scores, taus, 4, 2)
    small = {"reps": 30, "poi_reps": 20, "profile_reps": 4}
    assert summarize(doc, **small) == summarize(doc, seed=0, **small)  # the seed defaults to 0
    assert summarize(doc, reps=1, poi_reps=1, profile_reps=1)["bootstrap"]["reps"] == 1  # one is allowed


def test_paired_comparison_resamples_episodes_seeds_or_nothing() -> None:
    """X against Y on the same runs: the point delta is the mean paired difference and P(X > Y) counts
    ties as half; with both sides one shared model and their episodes, episodes are resampled (runs whose
    episodes all equal their mean leave no spread), otherwise seeds (spread), and a single seed has no
    interval. The seed and confidence default to 0 and 0.95."""
    from harness_gym.evaluation.aggregate import paired_comparison

    x = np.array([[60.0, 40.0], [50.0, 70.0], [30.0, 80.0], [65.0, 20.0]])  # 4 seeds x 2 settings
    y = np.array([[50.0, 40.0], [55.0, 60.0], [35.0, 70.0], [60.0, 30.0]])
    xe = [np.repeat(x[:, [e]], 3, axis=1) for e in range(2)]
    ye = [np.repeat(y[:, [e]], 3, axis=1) for e in range(2)]
    shared = paired_comparison((x, xe, False), (y, ye, False), reps=200)
    assert shared["resampled"] == "episodes"
    assert shared["delta"] == {"estimate": 1.875, "ci_low": 1.875, "ci_high": 1.875}
    assert shared["poi"] == {"estimate": 0.5625, "ci_low": 0.5625, "ci_high": 0.5625}
    for xs, ys in (((x, xe, True), (y, ye, False)), ((x, xe, False), (y, ye, True))):
        assert paired_comparison(xs, ys, reps=200)["resampled"] == "seeds"
    for xs, ys in (((x, None, False), (y, ye, False)), ((x, xe, False), (y, None, False))):
        seeds = paired_comparison(xs, ys, reps=200)
        assert seeds["resampled"] == "seeds" and seeds["delta"]["estimate"] == 1.875
        assert seeds["delta"]["ci_low"] < 1.875 < seeds["delta"]["ci_high"]
        assert seeds["poi"]["ci_low"] < seeds["poi"]["ci_high"]
    assert seeds == paired_comparison((x, xe, False), (y, None, False), reps=200, seed=0, confidence=0.95)
    assert seeds != paired_comparison((x, xe, False), (y, None, False), reps=200, seed=1)
    single = paired_comparison((x[:1], None, True), (y[:1], None, True), reps=200)
    assert single == {
        "delta": {"estimate": 5.0, "ci_low": None, "ci_high": None},
        "poi": {"estimate": 0.75, "ci_low": None, "ci_high": None},
        "resampled": None,
    }


def test_percentile_interval_is_the_central_confidence_share_of_the_replicates() -> None:
    """The interval cuts (1 - confidence) / 2 of the replicates from each end: of 0, 1, ..., 100 at 90%
    confidence, 5 and 95; without replicates there is no interval."""
    from harness_gym.evaluation.aggregate import _percentile

    assert _percentile(50.0, np.arange(101.0), 0.9) == pytest.approx(
        {"estimate": 50.0, "ci_low": 5.0, "ci_high": 95.0}, abs=1e-9
    )
    assert _percentile(50.0, np.arange(101.0), 0.5) == pytest.approx(
        {"estimate": 50.0, "ci_low": 25.0, "ci_high": 75.0}, abs=1e-9
    )
    assert _percentile(7.0, None, 0.9) == {"estimate": 7.0, "ci_low": None, "ci_high": None}


def test_seed_resampling_draws_every_seed_within_its_setting_and_keeps_pairs() -> None:
    """Resampling seeds: a replicate's cell of a setting is one of that setting's runs, every run gets
    drawn (seed 0 too), and both sides draw the same seed, so a replicate's difference is a paired one."""
    from harness_gym.evaluation.aggregate import _resampled

    x = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])  # 3 seeds x 2 settings
    y = x - np.array([[0.5, 5.0], [0.25, 2.5], [0.125, 1.25]])
    xb, yb = _resampled([(x, None), (y, None)], False, 200, np.random.default_rng(0))
    assert xb.shape == yb.shape == (200, 3, 2)
    for e in range(2):
        assert np.unique(xb[:, :, e]).tolist() == x[:, e].tolist()
        assert sorted(set(zip(xb[:, :, e].ravel(), yb[:, :, e].ravel(), strict=True))) == list(
            zip(x[:, e], y[:, e], strict=True)
        )


def test_summarize_reports_its_drops_and_reference_kinds_and_intervals_from_two_seeds() -> None:
    """Two seeds already give intervals over seeds (metrics and paired comparisons); a policy whose
    document entry has kind "reference" is a reference (not ranked best) without being listed in the
    config; the missing-cell rule reaches the matrices and what was left out is reported; the profile's
    thresholds reach down to the lowest score."""
    doc = _results(
        {
            ENV: {"base": [-10.0, 20.0], "bc": [30.0, 50.0], "oracle": [100.0, 90.0], "awr": [60.0, 70.0]},
            DB: {"base": [0.0, 10.0], "bc": [40.0, 20.0], "oracle": [95.0, 99.0], "awr": [80.0]},
            "HarnessCoding-v0": {},
        },
        policies={"oracle": {"kind": "reference"}},
    )
    small = {"reps": 20, "poi_reps": 10, "profile_reps": 2}
    by_setting = summarize(doc, missing="drop-setting", **small)
    assert by_setting["settings"] == [ENV] and by_setting["missing"] == "drop-setting"
    assert by_setting["dropped_settings"] == {DB: ["awr"]} and by_setting["dropped_policies"] == {}
    assert by_setting["unscored_settings"] == ["HarnessCoding-v0"]
    assert by_setting["references"] == ["oracle"] and by_setting["best"] == "awr"
    assert {name: m["interval"] for name, m in by_setting["metrics"].items()} == dict.fromkeys(
        ("base", "bc", "oracle", "awr"), "seeds"
    )
    assert by_setting["paired"]["bc"]["base"]["resampled"] == "seeds"
    assert by_setting["profile"]["tau"][0] == -10.0 and by_setting["profile"]["tau"][-1] == 100.0
    by_policy = summarize(doc, **small)
    assert by_policy["settings"] == [ENV, DB] and by_policy["missing"] == "drop-policy"
    assert by_policy["dropped_policies"] == {"awr": [DB]} and by_policy["dropped_settings"] == {}
    assert by_policy["unscored_settings"] == ["HarnessCoding-v0"] and by_policy["best"] == "bc"


def test_paired_comparison_of_two_seeds_has_an_interval() -> None:
    """Two seeds are enough to resample seeds: the paired delta gets an interval spanning the two seeds'
    mean differences (here 10 and 0 points)."""
    from harness_gym.evaluation.aggregate import paired_comparison

    x, y = np.array([[60.0, 40.0], [50.0, 70.0]]), np.array([[50.0, 30.0], [50.0, 70.0]])
    out = paired_comparison((x, None, True), (y, None, True), reps=200)
    assert out["resampled"] == "seeds" and out["delta"]["estimate"] == 5.0
    assert (out["delta"]["ci_low"], out["delta"]["ci_high"]) == (0.0, 10.0)


def test_best_policy_is_the_highest_iqm_outside_the_skipped() -> None:
    """The best policy has the highest IQM estimate among those not skipped (the references); none when
    every policy is skipped."""
    from harness_gym.evaluation.aggregate import best_policy

    metrics = {name: {"iqm": {"estimate": v}} for name, v in (("a", 1.0), ("b", 3.0), ("ref", 9.0))}
    assert best_policy(metrics, ["ref"]) == "b"
    assert best_policy(metrics) == "ref"
    assert best_policy(metrics, ("a", "b", "ref")) is None
