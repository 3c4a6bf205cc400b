"""Evaluation harness: the finite-buffer identities, the paired statistics and the 180-episode protocol."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import require
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.protocol import (
    EpisodeResult,
    PairingError,
    aw_weights,
    buffer_arrays,
    buffer_slack,
    buffer_stats,
    compare,
    evaluate,
    event_rates,
    finite_buffer_check,
    mean_ci,
    paired_bootstrap_ci,
    paired_permutation_p,
    per_task_advantages,
)

ENV = "HarnessPlanning-v0"


# -- finite-buffer theory --------------------------------------------------------------------------
@st.composite
def buffers(draw, binary_psi: bool | None = None):
    n = draw(st.integers(1, 40))
    unit = st.floats(0.0, 1.0, allow_nan=False)
    G = np.array(draw(st.lists(unit, min_size=n, max_size=n)))
    A = np.array(draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=n, max_size=n)))
    binary = draw(st.booleans()) if binary_psi is None else binary_psi
    if binary:
        psi = np.array(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)))
    else:
        psi = np.array(draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=n, max_size=n)))
    beta = draw(st.floats(0.05, 2.0))
    return G, A, psi, beta


@settings(max_examples=300, deadline=None)
@given(buffers())
def test_outcome_shift_never_exceeds_buffer_slack(buf):
    G, A, psi, beta = buf
    check = finite_buffer_check(G, A, psi, beta)
    assert check["bound_holds"]
    assert check["delta_Q"] <= check["sigma_B"] + 1e-12
    assert check["E_q_G"] <= check["max_G"] + 1e-12
    assert check["sigma_B"] == pytest.approx(buffer_slack(G))


@settings(max_examples=300, deadline=None)
@given(buffers(), st.booleans())
def test_process_shift_equals_weight_covariance(buf, clipped):
    G, A, psi, beta = buf
    clip = (0.1, 10.0) if clipped else None
    check = finite_buffer_check(G, A, psi, beta, clip)
    w = aw_weights(A, beta, clip)
    # independent arithmetic: E_q[psi] from the definition of q, Cov from E[w psi] - E[w] E[psi]
    direct = float(np.sum(w * psi) / np.sum(w) - psi.mean())
    via_cov = float((np.mean(w * psi) - w.mean() * psi.mean()) / w.mean())
    assert abs(check["delta_psi_direct"] - direct) <= 1e-9
    assert abs(check["delta_psi_cov"] - via_cov) <= 1e-9
    assert check["identity_error"] <= 1e-9
    assert abs(check["delta_psi_direct"] - check["delta_psi_cov"]) <= 1e-9


@st.composite
def monotone_buffers(draw):
    """A on a few levels, Psi arbitrary within a level but with E[Psi | A] non-decreasing in A."""
    levels = sorted(set(draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=5))))
    steps = draw(st.lists(st.floats(0.0, 1.0), min_size=len(levels), max_size=len(levels)))
    h = np.cumsum(steps)  # non-decreasing in the level
    A, psi = [], []
    for level, target in zip(levels, h, strict=True):
        k = draw(st.integers(1, 6))
        noise = np.array(draw(st.lists(st.floats(-1.0, 1.0), min_size=k, max_size=k)))
        A += [level] * k
        psi += list(target + noise - noise.mean())
    G = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=len(A), max_size=len(A))))
    return G, np.array(A), np.array(psi), draw(st.floats(0.05, 2.0))


@settings(max_examples=300, deadline=None)
@given(monotone_buffers())
def test_monotone_conditional_process_never_decreases(buf):
    G, A, psi, beta = buf
    check = finite_buffer_check(G, A, psi, beta)
    # exact value >= 0; the sums over weights up to exp(A / beta) leave rounding noise (seen: -2.5e-9)
    assert check["cov_w_psi"] >= -1e-7
    assert check["delta_psi_direct"] >= -1e-7


def test_monotone_corollary_is_not_vacuous():
    """Without the monotone condition the shift can be negative: the property above has teeth."""
    check = finite_buffer_check([0.0, 1.0], [0.0, 1.0], [1.0, 0.0], 0.2)
    assert check["delta_psi_direct"] < 0


@pytest.mark.parametrize("beta", [0.05, 0.2, 1.0, 2.0])
def test_proposition_two_example(beta):
    G, psi, A = np.array([1.0, 0.5, 0.0]), np.array([0.0, 1.0, 1.0]), np.array([0.0, 2.0, 1.0])
    cov_g_psi = np.mean((G - G.mean()) * (psi - psi.mean()))
    assert cov_g_psi < 0
    check = finite_buffer_check(G, A, psi, beta)
    u = math.exp(1.0 / beta)
    assert check["cov_w_psi"] == pytest.approx((u * u + u - 2) / 9, rel=1e-9)
    assert check["cov_w_psi"] > 0
    assert check["delta_psi_direct"] > 0


def test_weights_advantages_and_slack():
    assert aw_weights([0.0, 0.2], beta=0.2) == pytest.approx([1.0, math.e])
    assert aw_weights([-1.0, 0.0, 1.0], beta=0.2, clip=(0.1, 10.0)) == pytest.approx([0.1, 1.0, 10.0])
    with pytest.raises(ValueError):
        aw_weights([1.0], beta=0.0)
    adv = per_task_advantages([0.2, 0.4, 1.0, 0.0], [3, 3, 7, 7])
    assert adv == pytest.approx([-0.1, 0.1, 0.5, -0.5])
    assert buffer_slack([0.0, 0.5, 1.0]) == pytest.approx(0.5)


def test_buffer_stats_covers_every_event_and_hms():
    rng = np.random.default_rng(0)
    n = 200
    G = rng.random(n)
    task = rng.integers(0, 10, n)
    fired = rng.random((n, len(EVENTS))) < 0.3
    stats = buffer_stats(G, task, fired, hms_applicable=np.ones_like(fired))
    assert set(stats["checks"]) == {*EVENTS, "HMS"}
    assert stats["sigma_D"] == pytest.approx(G.max() - G.mean())
    assert stats["tasks"] == 10
    for check in stats["checks"].values():
        assert check["bound_holds"] and check["identity_error"] <= 1e-9
    # a statistic equal to the advantage's sign moves up under AW
    sign = (per_task_advantages(G, task) > 0).astype(float)
    shifted = buffer_stats(G, task, np.tile(sign[:, None], (1, 7)))["checks"]["CheckBeforeSubmit"]
    assert shifted["delta_psi_direct"] > 0.1


def test_buffer_arrays_reads_the_last_info_row():
    def episode(g, task, fire):
        t = 3
        fired = -np.ones((t + 1, 7), dtype=np.int8)
        fired[-1] = fire
        return SimpleNamespace(
            infos={
                "G": np.r_[np.full(t, np.nan), g],
                "task_index": np.full(t + 1, task),
                "hms_fired": fired,
                "hms_applicable": np.where(fired >= 0, 1, -1),
                "hms_norm": np.r_[np.full(t, np.nan), 0.5],
            }
        )

    arrays = buffer_arrays([episode(0.25, 1, [1, 0, 0, 0, 0, 0, 1]), episode(0.75, 2, [0] * 7)])
    assert arrays["G"] == pytest.approx([0.25, 0.75])
    assert list(arrays["task_index"]) == [1, 2]
    assert arrays["hms_fired"][0].tolist() == [True, False, False, False, False, False, True]


# -- paired statistics -----------------------------------------------------------------------------
N_PAIRS = 180


def _pairs(rng, n_sims, effect, noise=0.2):
    base = rng.random((n_sims, N_PAIRS))
    return base, base + effect + noise * rng.standard_normal((n_sims, N_PAIRS))


def test_bootstrap_interval_covers_the_true_effect_at_nominal_rate():
    """400 simulated evaluations; n_boot=1000 inside the loop keeps this fast (percentiles stay stable)."""
    rng = np.random.default_rng(1)
    effect = 0.05
    base, other = _pairs(rng, 400, effect)
    covered = 0
    for b, o in zip(base, other, strict=True):
        ci = paired_bootstrap_ci(b, o, n_boot=1000, rng=rng)
        assert ci.low <= ci.estimate <= ci.high
        covered += ci.low <= effect <= ci.high
    assert 0.90 <= covered / len(base) <= 0.99


def test_permutation_p_values_are_roughly_uniform_without_effect():
    rng = np.random.default_rng(2)
    base, other = _pairs(rng, 400, 0.0)
    p = np.array([paired_permutation_p(b, o, n_perm=1000, rng=rng) for b, o in zip(base, other, strict=True)])
    assert 0.02 <= np.mean(p <= 0.05) <= 0.09
    assert 0.4 <= np.mean(p <= 0.5) <= 0.6
    assert np.all((p > 0) & (p <= 1))


def test_strong_effect_is_detected_and_sign_does_not_matter():
    rng = np.random.default_rng(3)
    base, other = _pairs(rng, 1, 0.1, noise=0.1)
    assert paired_permutation_p(base[0], other[0], n_perm=10_000, rng=rng) < 0.01
    assert paired_permutation_p(other[0], base[0], n_perm=10_000, rng=rng) < 0.01
    # with the +1 correction the smallest attainable p-value is 1 / (n_perm + 1), never 0
    assert paired_permutation_p(base[0], other[0], n_perm=99, rng=rng) == pytest.approx(0.01)
    ci = paired_bootstrap_ci(base[0], other[0], rng=rng)
    assert ci.low > 0.05 and ci.high < 0.15


@pytest.mark.parametrize(
    "d",
    [
        [0.3, -0.1, 0.2, 0.4, 0.1, -0.2, 0.5, 0.15],  # a clear effect: exact p = 28 / 256
        [0.1, -0.3, 0.2, 0.15, -0.1, 0.05, 0.25, -0.05],  # a weak effect: exact p = 162 / 256
        [1.0, 1.0, 1.0, -1.0, 1.0, 1.0],  # ties everywhere: exact p = 14 / 64
    ],
)
def test_permutation_p_matches_the_exact_sign_flip_enumeration_and_scipy(d):
    """On a small sample every one of the 2^n sign patterns can be enumerated: the Monte Carlo p-value
    must match that exact value, and scipy's permutation test (exact here) gives the same exact value."""
    stats = require("scipy.stats")
    d = np.array(d)
    observed = abs(d.mean())
    signs = np.array(list(itertools.product((-1, 1), repeat=d.size)))
    exact = np.mean(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12)
    reference = stats.permutation_test(
        (d,),
        lambda x, axis: np.abs(np.mean(x, axis=axis)),
        permutation_type="samples",
        alternative="greater",
        vectorized=True,
        n_resamples=10_000,
    )
    assert reference.pvalue == pytest.approx(exact, abs=1e-12)
    n_perm = 40_000  # standard error <= 0.0025
    p = paired_permutation_p(np.zeros_like(d), d, n_perm=n_perm, rng=5)
    assert p == pytest.approx(exact, abs=0.01)
    assert paired_permutation_p(d, np.zeros_like(d), n_perm=n_perm, rng=5) == p  # the sign does not matter


def test_clustered_permutation_p_flips_whole_clusters_exactly():
    """With cluster labels the sign flips act on per-cluster sums: d = [1, 2, 3, -0.5] in clusters
    a, a, b, c has sums [3, 3, -0.5] and 8 sign patterns, of which 4 reach |sum| >= 5.5 (p = 1/2); the
    4 pairs flipped one by one give 16 patterns, 4 of them reaching 5.5 (p = 1/4). Both are exact here
    (2 ** units <= n_perm) and equal scipy's permutation test run on the sums directly."""
    stats = require("scipy.stats")
    d = np.array([1.0, 2.0, 3.0, -0.5])
    zeros = np.zeros_like(d)
    clustered = paired_permutation_p(zeros, d, n_perm=1000, rng=0, clusters=["a", "a", "b", "c"])
    assert clustered == pytest.approx(0.5, abs=1e-12)
    assert paired_permutation_p(zeros, d, n_perm=1000, rng=0) == pytest.approx(0.25, abs=1e-12)
    reference = stats.permutation_test(
        (np.array([3.0, 3.0, -0.5]),),
        lambda x, axis: np.abs(np.sum(x, axis=axis)),
        permutation_type="samples",
        alternative="greater",
        vectorized=True,
        n_resamples=1000,
    )
    assert clustered == pytest.approx(reference.pvalue, abs=1e-12)


def test_resampling_batches_hold_about_two_million_values_and_at_least_one_resample():
    """A batch of resamples of n units holds 2,000,000 // n of them, and a sample larger than that
    budget is still resampled, one resample per batch."""
    from harness_gym.evaluation.protocol import _batch

    assert _batch(8) == 250_000
    assert _batch(1_000_000) == 2
    assert _batch(1_500_000) == 1
    assert _batch(5_000_000) == 1


def test_identical_samples_give_p_one_and_point_interval():
    x = np.linspace(0, 1, 30)
    assert paired_permutation_p(x, x, n_perm=200, rng=0) == 1.0
    assert tuple(paired_bootstrap_ci(x, x, n_boot=200, rng=0)) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        paired_bootstrap_ci([0.1, 0.2], [0.3])


# -- protocol and comparison -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def planning_runs():
    from harness_gym.policies.scripted import BasePolicy, ForcedCheckPolicy

    return {
        "base": evaluate(BasePolicy(ENV), ENV),
        "forced-check": evaluate(ForcedCheckPolicy(ENV), ENV),
    }


def test_evaluate_runs_the_180_episode_protocol(planning_runs):
    import gymnasium as gym

    from harness_gym.evaluation.rollout import run_protocol, summarize
    from harness_gym.policies.scripted import BasePolicy

    results = planning_runs["base"]
    assert len(results) == 180
    assert len({r.key for r in results}) == 180
    assert {r.policy for r in results} == {"base"}
    reference = summarize(run_protocol(gym.make(ENV, split="eval"), BasePolicy(ENV), (0, 1, 2), 3))
    assert np.mean([r.G for r in results]) == pytest.approx(reference["G"], abs=1e-12)
    assert np.mean([r.hms_norm for r in results]) == pytest.approx(reference["hms_norm"], abs=1e-12)
    rates = event_rates(results)
    for event in EVENTS:
        assert rates[event]["fired"] == pytest.approx(reference["events"][event]["fired"])
        assert rates[event]["applicable"] == pytest.approx(reference["events"][event]["applicable"])
    assert all(r.steps >= 1 and r.termination_reason in ("submit", "budget") for r in results)


def test_episode_result_json_round_trip(planning_runs):
    r = planning_runs["forced-check"][7]
    restored = EpisodeResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert restored == r
    assert isinstance(restored.fired, tuple) and len(restored.fired) == len(EVENTS)


def test_compare_base_vs_forced_check(planning_runs):
    report = compare(planning_runs, n_boot=2000, n_perm=2000)
    fc, base = report["policies"]["forced-check"], report["policies"]["base"]
    assert fc["pairs"] == base["pairs"] == 180
    assert fc["events"]["CheckBeforeSubmit"]["base"] == 0.0
    assert fc["events"]["CheckBeforeSubmit"]["policy"] > 0.0
    assert fc["cbs"] > 0.0 and base["cbs"] == 0.0
    g_base = np.mean([r.G for r in planning_runs["base"]])
    g_fc = np.mean([r.G for r in planning_runs["forced-check"]])
    assert fc["G"] == pytest.approx(g_fc) and fc["base_G"] == pytest.approx(g_base)
    assert fc["delta_G"] == pytest.approx(g_fc - g_base)
    assert fc["ci_low"] <= fc["delta_G"] <= fc["ci_high"]
    assert 0.0 < fc["p_value"] <= 1.0
    # the same sign-flip test computed apart from compare, on the differences paired by key
    base_g = {r.key: r.G for r in planning_runs["base"]}
    d = np.array([r.G - base_g[r.key] for r in planning_runs["forced-check"]])
    flips = np.random.default_rng(11).choice((-1.0, 1.0), size=(20_000, d.size))
    independent = (1 + np.count_nonzero(np.abs((flips * d).mean(axis=1)) >= abs(d.mean()) - 1e-12)) / 20_001
    assert fc["p_value"] == pytest.approx(independent, abs=0.02)
    assert fc["delta_hms"] == pytest.approx(fc["hms_norm"] - base["hms_norm"])
    assert report["lifts"] == {}
    json.dumps(report)  # the report is JSON-ready as is
    # deterministic, and a policy's interval does not depend on which other policies are compared
    assert compare(planning_runs, n_boot=2000, n_perm=2000) == report
    shuffled = list(reversed(planning_runs["forced-check"]))  # pairs follow keys, not list positions
    assert compare({**planning_runs, "forced-check": shuffled}, n_boot=2000, n_perm=2000) == report
    fake_awr = [replace(r, policy="awr", G=min(1.0, r.G + 0.1)) for r in planning_runs["base"]]
    both = compare({**planning_runs, "awr": fake_awr}, n_boot=2000, n_perm=2000)
    assert both["policies"]["forced-check"] == fc
    lift = both["lifts"]["aw_minus_fc"]
    assert lift["estimate"] == pytest.approx(both["policies"]["awr"]["delta_G"] - fc["delta_G"])
    assert "aw_minus_bc" not in both["lifts"]


def test_compare_names_the_missing_pairs(planning_runs):
    broken = {"base": planning_runs["base"], "forced-check": planning_runs["forced-check"][:-2]}
    missing = planning_runs["forced-check"][-1].key
    with pytest.raises(PairingError, match="2 only in 'base'") as info:
        compare(broken, n_boot=10, n_perm=10)
    assert str(missing) in str(info.value)
    duplicated = {"base": planning_runs["base"], "x": planning_runs["base"] + planning_runs["base"][:1]}
    with pytest.raises(PairingError, match="twice"):
        compare(duplicated, n_boot=10, n_perm=10)
    with pytest.raises(KeyError):
        compare({"forced-check": planning_runs["forced-check"]})


def test_paired_statistics_defaults_levels_and_seeding():
    import inspect

    assert inspect.signature(paired_bootstrap_ci).parameters["n_boot"].default == 10_000
    assert inspect.signature(paired_bootstrap_ci).parameters["level"].default == 0.95
    assert inspect.signature(paired_permutation_p).parameters["n_perm"].default == 10_000
    base = [0.1, 0.5, 0.3, 0.9, 0.4, 0.2, 0.6, 0.1, 0.8, 0.3, 0.5, 0.7]
    other = [0.2, 0.7, 0.2, 1.0, 0.8, 0.1, 0.9, 0.3, 0.7, 0.6, 0.4, 0.9]  # 2^12 sign patterns > 500 resamples
    # a seed gives the same interval and p-value every time; another seed another draw
    assert paired_bootstrap_ci(base, other, n_boot=500, rng=4) == paired_bootstrap_ci(
        base, other, n_boot=500, rng=4
    )
    assert paired_bootstrap_ci(base, other, n_boot=500, rng=4) != paired_bootstrap_ci(
        base, other, n_boot=500, rng=5
    )
    p = paired_permutation_p(base, other, n_perm=500, rng=4)
    assert p == paired_permutation_p(base, other, n_perm=500, rng=4)
    assert p != paired_permutation_p(base, other, n_perm=500, rng=np.random.default_rng(5))
    for level in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"^level must lie in \(0, 1\), got {level}$"):
            paired_bootstrap_ci(base, other, level=level)
    with pytest.raises(ValueError, match=r"^paired samples need equal 1-d shapes, got \(2,\) and \(1,\)$"):
        paired_permutation_p([0.1, 0.2], [0.3])
    with pytest.raises(ValueError, match=r"^no pairs$"):
        paired_bootstrap_ci([], [])


def test_bootstrap_draws_every_pair_and_its_interval_has_the_asked_level():
    # one pair of three carries the whole effect: a resample's mean is 0, 3, 6 or 9 as it draws that pair
    # 0, 1, 2 or 3 times, with probabilities 8/27, 12/27, 6/27, 1/27 (cumulative 0.30, 0.74, 0.96, 1)
    base, other = [0.0, 0.0, 0.0], [9.0, 0.0, 0.0]
    ci = paired_bootstrap_ci(base, other, n_boot=4000, level=0.2, rng=0)  # quantiles 0.4 and 0.6
    assert tuple(ci) == (3.0, 3.0, 3.0)
    wide = paired_bootstrap_ci(base, other, n_boot=4000, level=0.98, rng=0)  # quantiles 0.01 and 0.99
    assert tuple(wide) == (3.0, 0.0, 9.0)


def test_the_documented_defaults_are_the_ones_used():
    d = [0.3, -0.1, 0.2, 0.4, 0.1, -0.2, 0.5, 0.15, 0.05, -0.3, 0.25, 0.35, 0.1, -0.05]  # 2^14 > 10,000
    zeros = [0.0] * len(d)
    assert paired_permutation_p(zeros, d, rng=1) == paired_permutation_p(zeros, d, n_perm=10_000, rng=1)
    assert paired_bootstrap_ci(zeros, d, rng=1) == paired_bootstrap_ci(
        zeros, d, n_boot=10_000, level=0.95, rng=1
    )


def test_copies_are_resampled_as_whole_tasks(planning_runs):
    """Episodes that repeat one another call for call (a chat LLM at temperature 0) never count as
    independent draws: the interval and the test resample whole tasks, which widens the interval."""
    base = planning_runs["base"]
    pairs = compare(planning_runs, n_boot=2000, n_perm=2000)
    assert pairs["resampled"] == "pairs"
    assert pairs["policies"]["base"]["distinct_episodes"] == 180  # simulated: no traces, all distinct

    # copies: every episode of a task repeats the task's first one (same G, same trace)
    first = {}
    for r in base:
        first.setdefault(r.task_id, r)
    copies = [replace(r, G=first[r.task_id].G, trace=f"trace-{r.task_id}") for r in base]
    better = [replace(r, policy="x", G=min(1.0, r.G + 0.2), trace=f"other-{r.task_id}") for r in copies]
    report = compare({"base": copies, "x": better}, n_boot=2000, n_perm=2000)
    entry = report["policies"]["x"]
    assert report["resampled"] == "tasks" and entry["distinct_episodes"] == 20
    by_pairs = paired_bootstrap_ci([r.G for r in copies], [r.G for r in better], n_boot=2000, rng=1)
    assert entry["ci_high"] - entry["ci_low"] > by_pairs.high - by_pairs.low
    assert entry["delta_G"] == pytest.approx(by_pairs.estimate)  # the estimate is the same mean
    with pytest.raises(ValueError, match="cluster labels"):
        paired_bootstrap_ci([0.0, 1.0], [1.0, 1.0], clusters=["a"])


def test_clustered_interval_is_the_bca_bootstrap_of_the_pooled_ratio() -> None:
    """With ``clusters``, the interval resamples whole clusters and pools them: the statistic is
    sum(differences) / sum(pairs) over the drawn clusters, each summed along the resample's own axis.
    scipy's BCa bootstrap over hand-computed per-cluster sums and counts, with the same generator, gives
    the same interval."""
    from scipy.stats import bootstrap

    d = [1.0, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0, 1.0, 0.25, 0.75, 0.0]
    labels = ["c", "c", "c", "a", "a", "b", "d", "d", "d", "d", "e", "e", "f"]
    sums = np.array([1.0, 0.5, 2.0, 2.0, 1.0, 0.0])  # per label a..f
    counts = np.array([2.0, 1.0, 3.0, 4.0, 2.0, 1.0])
    got = paired_bootstrap_ci([0.0] * len(d), d, n_boot=500, level=0.9, rng=3, clusters=labels)
    want = bootstrap(
        (sums, counts),
        lambda s, c, axis: np.sum(s, axis=axis) / np.sum(c, axis=axis),
        n_resamples=500,
        confidence_level=0.9,
        method="BCa",
        paired=True,
        vectorized=True,
        rng=np.random.default_rng(3),
    ).confidence_interval
    assert got.estimate == pytest.approx(sum(d) / len(d))
    assert (got.low, got.high) == pytest.approx((want.low, want.high))
    assert 0.0 < got.low < got.estimate < got.high < 1.0


def test_mean_ci_defaults_edges_and_messages() -> None:
    """mean_ci runs 10,000 resamples at 95% by default; takes booleans as 0/1; a single value, or values
    spanning exactly 1, are not special; an empty or 2-d sample is refused by name. With clusters whose
    pooled means differ the interval is a real one, whatever their sums times counts."""
    explicit = mean_ci([0.0, 1.0, 0.5, 1.0, 0.25], n_boot=10_000, level=0.95, rng=4)
    assert mean_ci([0.0, 1.0, 0.5, 1.0, 0.25], rng=4) == explicit
    assert mean_ci([0.0, 1.0, 0.5, 1.0, 0.25], n_boot=10_001, rng=4) != explicit
    assert mean_ci([True, False, True], n_boot=200, rng=1) == mean_ci([1.0, 0.0, 1.0], n_boot=200, rng=1)
    assert mean_ci([0.5]) == (0.5, 0.5, 0.5)
    spans_one = mean_ci([0.0, 1.0, 0.0, 1.0, 1.0], n_boot=500, rng=1)
    assert spans_one.low < spans_one.estimate < spans_one.high
    for bad in ([], [[0.0, 1.0]]):
        with pytest.raises(ValueError, match=r"^need a non-empty 1-d sample, got shape \("):
            mean_ci(bad)
    d = [1.0, 1.0, 0.25, 0.25, 0.25, 0.25, 4.0]  # cluster sums 2, 1, 4 over 2, 4, 1 pairs
    pooled = paired_bootstrap_ci([0.0] * 7, d, n_boot=300, rng=1, clusters=list("aabbbbc"))
    assert pooled.estimate == pytest.approx(1.0) and pooled.low < pooled.estimate < pooled.high


def test_mean_ci_falls_back_to_the_percentile_interval_where_bca_is_undefined() -> None:
    """When every resample falls on one side of the estimate, BCa's bias correction is infinite and scipy's
    interval is NaN; mean_ci then gives the percentile interval of the same resamples, widened to contain
    the estimate. With 3 resamples, seeded: [0, 1, 1] draws means 0, 1/3, 1/3 (all below 2/3), so the
    interval is [2.5th percentile, estimate] = [0 + 0.05 * 1/3, 2/3]; [0, 0, 0, 1] draws 1, 1/2, 1/2 (all
    above 1/4): [estimate, 97.5th percentile] = [1/4, 1/2 + 0.95 * 1/2]. At 90% the fallback reads the 5th
    percentile: 0 + 0.1 * 1/3."""
    import warnings

    from scipy.stats import bootstrap

    for values, seed in (([0.0, 1.0, 1.0], 34), ([0.0, 0.0, 0.0, 1.0], 13)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bca = bootstrap((np.array(values),), np.mean, n_resamples=3, rng=np.random.default_rng(seed))
        assert np.isnan(bca.confidence_interval.low) and np.isnan(bca.confidence_interval.high)
    assert mean_ci([0.0, 1.0, 1.0], n_boot=3, rng=34) == pytest.approx((2 / 3, 0.05 / 3, 2 / 3))
    assert mean_ci([0.0, 0.0, 0.0, 1.0], n_boot=3, rng=13) == pytest.approx((0.25, 0.25, 0.975))
    assert mean_ci([0.0, 1.0, 1.0], n_boot=3, level=0.9, rng=34) == pytest.approx((2 / 3, 0.1 / 3, 2 / 3))


def _result(task: str, seed: int, rollout: int, G: float, trace: str | None) -> EpisodeResult:
    fired = (False,) * len(EVENTS)
    return EpisodeResult(ENV, "p", seed, task, rollout, 0, G, 0.0, fired, fired, 3, "submitted", trace)


def test_whole_tasks_are_resampled_when_any_policy_has_copied_episodes():
    """Decision: if any one policy repeats episodes (equal traces of a task: a deterministic policy with a
    chat LLM at temperature 0), every comparison resamples whole tasks, so copies never count as
    independent draws; pairs are resampled only when no policy has a copy."""
    keys = [(f"t{t}", s, 0) for t in range(4) for s in range(3)]
    base = [_result(t, s, r, 0.1 * s, f"{t}-{s}") for t, s, r in keys]
    copied = [_result(t, s, r, 0.5, f"{t}-same") for t, s, r in keys]  # one episode per task, copied
    distinct = [_result(t, s, r, 0.2 * s, f"{t}-{s}-x") for t, s, r in keys]
    assert compare({"base": base, "other": distinct}, n_boot=200, n_perm=200)["resampled"] == "pairs"
    table = compare({"base": base, "copied": copied, "other": distinct}, n_boot=200, n_perm=200)
    assert table["resampled"] == "tasks"
    assert table["policies"]["copied"]["distinct_episodes"] == 4
