"""The protocol's buffer statistics and task-clustered interval: what each input decides, each on a
hand-built buffer (no episode is played)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from harness_gym.core.hms import EVENTS, hms_norm
from harness_gym.evaluation.protocol import (
    HMS,
    buffer_arrays,
    buffer_stats,
    clustered_mean_ci,
    finite_buffer_check,
    mean_ci,
    per_task_advantages,
)

N = 12
G = np.linspace(0.0, 1.0, N)
TASK = np.repeat([0, 1, 2], 4)
FIRED = np.arange(N * len(EVENTS)).reshape(N, len(EVENTS)) % 3 == 0
APPLICABLE = np.arange(N * len(EVENTS)).reshape(N, len(EVENTS)) % 5 != 1
CLIP = (0.8, 1.25)


def test_buffer_stats_recomputes_hms_from_the_applicable_events_and_passes_beta_and_clip() -> None:
    """HMS recomputed per episode from fired and applicable (given flat: reshaped to the fired table);
    every check uses the default beta 0.2 and the given clip, and the summary says so."""
    stats = buffer_stats(G, TASK, FIRED, hms_applicable=APPLICABLE.ravel(), clip=CLIP)
    adv = per_task_advantages(G, TASK)
    hms = [
        hms_norm({e: {"fired": bool(f[j]), "applicable": bool(a[j])} for j, e in enumerate(EVENTS)})
        for f, a in zip(FIRED, APPLICABLE, strict=True)
    ]
    assert stats["checks"][HMS] == finite_buffer_check(G, adv, hms, 0.2, CLIP)
    for j, event in enumerate(EVENTS):
        assert stats["checks"][event] == finite_buffer_check(G, adv, FIRED[:, j], 0.2, CLIP)
    assert stats["checks"][HMS] != finite_buffer_check(G, adv, hms, 0.2)  # the clip binds here
    assert {k: v for k, v in stats.items() if k != "checks"} == {
        "N": N,
        "tasks": 3,
        "mean_G": pytest.approx(0.5),
        "max_G": 1.0,
        "sigma_D": pytest.approx(0.5),
        "beta": 0.2,
        "clip": [0.8, 1.25],
        "hms_source": "recomputed",
    }


def test_buffer_stats_takes_every_event_as_applicable_or_a_given_hms() -> None:
    adv = per_task_advantages(G, TASK)
    every = buffer_stats(G, TASK, FIRED)
    hms = [
        hms_norm({e: {"fired": bool(f[j]), "applicable": True} for j, e in enumerate(EVENTS)}) for f in FIRED
    ]
    assert every["hms_source"] == "all-applicable" and every["clip"] is None
    assert every["checks"][HMS] == finite_buffer_check(G, adv, hms, 0.2)
    given = np.linspace(-1.0, 1.0, N)
    stats = buffer_stats(G, TASK, FIRED, hms_norm=given, hms_applicable=APPLICABLE, beta=0.5)
    assert stats["hms_source"] == "given" and stats["beta"] == 0.5
    assert stats["checks"][HMS] == finite_buffer_check(G, adv, given, 0.5)


def test_per_task_advantages_refuses_unequal_shapes_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^G and task_index differ in shape: \(2,\) vs \(3,\)$"):
        per_task_advantages([0.1, 0.2], [0, 0, 1])


def test_buffer_arrays_gives_fixed_dtypes_whatever_the_info_rows_hold() -> None:
    """Integer G, float task indices and integer flags still come out as float, int and bool arrays."""

    def episode(g: int, task: float, fire: int, applicable: int, hms: int) -> SimpleNamespace:
        return SimpleNamespace(
            infos={
                "G": np.array([0, g]),
                "task_index": np.array([task, task]),
                "hms_fired": np.full((2, 7), fire, dtype=np.int8),
                "hms_applicable": np.full((2, 7), applicable, dtype=np.int8),
                "hms_norm": np.array([0, hms]),
            }
        )

    arrays = buffer_arrays([episode(1, 2.0, 1, 0, 1), episode(0, 5.0, 0, 1, -1)])
    assert {k: v.dtype.kind for k, v in arrays.items()} == {
        "G": "f",
        "task_index": "i",
        "hms_fired": "b",
        "hms_applicable": "b",
        "hms_norm": "f",
    }
    assert arrays["hms_applicable"].tolist() == [[False] * 7, [True] * 7]
    assert arrays["hms_norm"].tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match=r"^no episodes$"):
        buffer_arrays([])


def test_clustered_mean_ci_resamples_whole_tasks_at_95_percent_with_10000_draws() -> None:
    """The estimate is the mean of every value; copies within a task widen the interval against the
    episode-level one; the defaults are 10,000 resamples at 95%, and a seed repeats the interval."""
    values = np.repeat(np.random.default_rng(0).random(20), 3)
    tasks = np.repeat([f"t{i}" for i in range(20)], 3)
    got = clustered_mean_ci(values, tasks, rng=1)
    assert got.estimate == pytest.approx(values.mean())
    assert got == clustered_mean_ci(values, list(tasks), n_boot=10_000, level=0.95, rng=1)
    assert got != clustered_mean_ci(values, tasks, n_boot=10_001, rng=1)
    narrower = clustered_mean_ci(values, tasks, level=0.5, rng=1)
    assert got.low < narrower.low < narrower.high < got.high
    episodes = mean_ci(values, rng=1)
    assert got.high - got.low > episodes.high - episodes.low
    unequal = clustered_mean_ci([0.0, 0.0, 0.0, 1.0], ["a", "a", "a", "b"], rng=1)
    assert unequal.estimate == pytest.approx(0.25)  # per value, not per task


def test_clustered_mean_ci_is_a_point_only_when_every_task_has_one_mean() -> None:
    """Tasks of unequal size are compared by their means, not their sums: [1, 1] against [4] differ."""
    spread = clustered_mean_ci([1.0, 1.0, 4.0], ["a", "a", "b"], rng=0)
    assert spread.estimate == pytest.approx(2.0) and spread.low < spread.high
    same = clustered_mean_ci([0.5, 0.5, 0.5], ["a", "a", "b"], rng=0)
    assert same == (0.5, 0.5, 0.5)


def test_a_profile_is_recorded_by_name_and_the_digest_the_shipped_results_carry(tmp_path) -> None:
    """The default profile's record is the one the bench's shipped results carry (a resume or a merge
    compares digests written by earlier runs), and a profile of the same name with other content has
    another digest."""
    import json

    from harness_gym.envs.registry import executor_profile
    from harness_gym.evaluation.protocol import profile_record
    from harness_gym.evaluation.results import simulator
    from harness_gym.evaluation.scoring import REFERENCE_RESULTS

    shipped = json.loads(REFERENCE_RESULTS.read_text())["simulator"]["profile"]
    assert profile_record("default") == shipped == simulator(profile="default")["profile"]
    changed = executor_profile("default").to_dict()
    changed["domains"]["coding"]["draft"]["informed_gain"] += 0.01
    path = tmp_path / "default.json"
    path.write_text(json.dumps(changed))
    record = profile_record(str(path))
    assert record["name"] == "default" and record["sha256"] != shipped["sha256"]


def _result(fired: tuple[bool, ...], applicable: tuple[bool, ...]):
    from harness_gym.evaluation.protocol import EpisodeResult

    return EpisodeResult("HarnessPlanning-v0", "p", 0, "t", 0, 1, 0.5, 0.0, fired, applicable, 3, "submit")


def test_event_rates_of_one_episode_and_of_none() -> None:
    """One episode is a sample (rates 0 or 1, with counts); no episode at all is refused."""
    from harness_gym.evaluation.protocol import event_rates

    fired = (True,) + (False,) * (len(EVENTS) - 1)
    applicable = (True, True) + (False,) * (len(EVENTS) - 2)
    rates = event_rates([_result(fired, applicable)])
    assert rates[EVENTS[0]] == {
        "fired": 1.0,
        "applicable": 1.0,
        "fired_count": 1,
        "applicable_count": 1,
        "episodes": 1,
    }
    assert rates[EVENTS[1]] == {
        "fired": 0.0,
        "applicable": 1.0,
        "fired_count": 0,
        "applicable_count": 1,
        "episodes": 1,
    }
    with pytest.raises(ValueError, match=r"^no episodes$"):
        event_rates([])


def test_an_episode_record_keeps_the_result_usage_trace_and_audit_trail() -> None:
    """What a checkpoint stores per episode: the result (named by env, policy and trace), the usage keys only,
    the episode id, the rubric and the compacted steps."""
    from harness_gym.evaluation.protocol import USAGE_KEYS, EpisodeResult, _episode_result
    from harness_gym.evaluation.spend import compact_steps, episode_trace

    steps = [{"action": 3, "executor_io": {"cache_key": "k1"}}, {"action": 6}]
    final = {
        "G": 0.5,
        "hms_norm": 0.25,
        "hms": {e: {"fired": e == EVENTS[0], "applicable": True} for e in EVENTS},
        "termination_reason": "submit",
        "trajectory": {"steps": steps, "episode_id": "ep-7"},
        "usage": {key: i for i, key in enumerate(USAGE_KEYS)} | {"other": 9},
        "rubric": {"r": (1, 2)},
    }
    record = _episode_result("HarnessPlanning-v0", "p", (11, "t", 2, 1), final)
    result = EpisodeResult.from_dict(record)
    assert result.env_id == "HarnessPlanning-v0" and result.trace == episode_trace(steps) is not None
    assert (result.episode_seed, result.task_id, result.seed, result.rollout, result.steps) == (
        11,
        "t",
        2,
        1,
        2,
    )
    assert (result.policy, result.G, result.hms_norm, result.termination_reason) == ("p", 0.5, 0.25, "submit")
    assert result.fired == tuple(e == EVENTS[0] for e in EVENTS) and result.applicable == (True,) * len(
        EVENTS
    )
    assert record["usage"] == {key: i for i, key in enumerate(USAGE_KEYS)}
    assert record["episode_id"] == "ep-7" and record["rubric"] == {"r": [1, 2]}
    assert record["step_records"] == compact_steps(steps)


def test_compare_refuses_a_policy_without_episodes_by_name() -> None:
    from harness_gym.evaluation.protocol import PairingError, compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    with pytest.raises(PairingError, match=r"^policy 'late' has no results$"):
        compare({"base": [one], "late": []}, base="base")


def test_unpaired_episodes_are_named_five_at_most_per_side() -> None:
    """Five unmatched keys are shown whole; a sixth is left to "...", and the sides are split by "; "."""
    import dataclasses

    from harness_gym.evaluation.protocol import PairingError, _pair

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))

    def table(rollouts) -> dict:
        return {(r := dataclasses.replace(one, rollout=i)).key: r for i in rollouts}

    with pytest.raises(PairingError) as refused:
        _pair("base", table(range(6)), "p", table(range(6, 11)))
    shown_a = ", ".join(str(("t", 0, i)) for i in range(5))
    shown_b = ", ".join(str(("t", 0, i)) for i in range(6, 11))
    assert str(refused.value) == (
        "results of 'base' and 'p' do not pair on (task_id, seed, rollout): "
        f"6 only in 'base': {shown_a} ...; 5 only in 'p': {shown_b}"
    )


def test_a_paired_effect_uses_the_given_generator_draws_level_and_task_clusters() -> None:
    """The interval and p-value come from the caller's generator (interval first), with its resample
    counts and level; whole tasks are resampled only when asked."""
    import dataclasses

    from harness_gym.evaluation.protocol import _paired_effect, paired_bootstrap_ci, paired_permutation_p

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    g_base = np.random.default_rng(1).random(12)
    g_other = g_base + np.random.default_rng(2).normal(0.1, 0.2, 12)
    tasks = [f"t{i // 3}" for i in range(12)]
    base = [
        dataclasses.replace(one, G=g, task_id=t, rollout=i)
        for i, (g, t) in enumerate(zip(g_base, tasks, strict=True))
    ]
    other = [dataclasses.replace(r, G=g) for r, g in zip(base, g_other, strict=True)]

    def expected(clusters) -> tuple:
        rng = np.random.default_rng(5)
        ci = paired_bootstrap_ci(g_base, g_other, n_boot=500, level=0.8, rng=rng, clusters=clusters)
        return tuple(ci), paired_permutation_p(g_base, g_other, n_perm=300, rng=rng, clusters=clusters)

    for by_task, clusters in ((False, None), (True, tasks)):
        args = (base, other, np.random.default_rng(5), 500, 300, 0.8)
        effect = _paired_effect(*args, by_task=True) if by_task else _paired_effect(*args)
        assert ((effect["delta_G"], effect["ci_low"], effect["ci_high"]), effect["p_value"]) == expected(
            clusters
        )
    assert expected(None) != expected(tasks)


def test_adding_a_policy_never_changes_another_policys_interval() -> None:
    """Each comparison draws from its own stream, seeded by the rng seed and the two names."""
    import dataclasses

    from harness_gym.evaluation.protocol import compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    g = np.random.default_rng(3).random((3, 10))
    runs = {
        name: [dataclasses.replace(one, G=x, rollout=i) for i, x in enumerate(row)]
        for name, row in zip(("base", "a", "b"), g, strict=True)
    }
    alone = compare({"base": runs["base"], "a": runs["a"]}, n_boot=300, n_perm=300)["policies"]["a"]
    beside = compare(runs, n_boot=300, n_perm=300)["policies"]["a"]
    assert (alone["ci_low"], alone["ci_high"], alone["p_value"]) == (
        beside["ci_low"],
        beside["ci_high"],
        beside["p_value"],
    )


def test_aw_weights_refuse_a_zero_temperature_by_name() -> None:
    from harness_gym.evaluation.protocol import aw_weights

    with pytest.raises(ValueError, match=r"^beta must be positive, got 0\.0$"):
        aw_weights([1.0], beta=0.0)


def test_aw_weights_default_to_beta_0_2_and_refuse_an_overflow_in_one_error() -> None:
    """An overflow is one ValueError, with no numpy warning before it."""
    import math
    import warnings

    from harness_gym.evaluation.protocol import aw_weights

    assert aw_weights([0.2]) == pytest.approx([math.e])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^AW weights overflow: advantages / beta too large$"):
            aw_weights([1000.0])


def test_an_empty_buffer_is_refused_by_name() -> None:
    from harness_gym.evaluation.protocol import buffer_slack

    with pytest.raises(ValueError, match=r"^empty buffer$"):
        buffer_slack([])


def test_compare_reports_the_aw_lifts_over_bc_and_forced_check_by_default() -> None:
    import dataclasses

    from harness_gym.evaluation.protocol import compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    g = np.random.default_rng(4).random((4, 8))
    names = ("base", "awr", "bc", "forced-check")
    runs = {
        n: [dataclasses.replace(one, G=x, rollout=i) for i, x in enumerate(row)]
        for n, row in zip(names, g, strict=True)
    }
    lifts = compare(runs, n_boot=200, n_perm=200)["lifts"]
    assert {label: (lift["aw"], lift["other"]) for label, lift in lifts.items()} == {
        "aw_minus_bc": ("awr", "bc"),
        "aw_minus_fc": ("awr", "forced-check"),
    }


def test_compare_defaults_are_recorded_and_a_missing_base_is_named() -> None:
    import dataclasses

    from harness_gym.evaluation.protocol import compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    runs = {
        n: [dataclasses.replace(one, G=0.1 * i + k, rollout=i) for i in range(4)]
        for k, n in enumerate(("base", "a"))
    }
    table = compare(runs)
    assert (table["rng_seed"], table["n_boot"], table["n_perm"], table["level"]) == (0, 10_000, 10_000, 0.95)
    with pytest.raises(KeyError, match=r"base policy 'base' not among \['a'\]"):
        compare({"a": runs["a"]})


def test_compare_refuses_results_of_two_environments() -> None:
    import dataclasses

    from harness_gym.evaluation.protocol import PairingError, compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    other = dataclasses.replace(one, env_id="HarnessCoding-v0")
    message = r"^results come from several environments: \['HarnessCoding-v0', 'HarnessPlanning-v0'\]$"
    with pytest.raises(PairingError, match=message):
        compare({"base": [one], "a": [other]})


def test_env_settings_record_an_executor_by_its_configs_content_and_a_dataclass_by_its_fields() -> None:
    """Resume manifests compare these: an executor instance by its config's content key (never its repr,
    which names an object), a dataclass value (e.g. a profile) field by field, anything else as it is."""
    from dataclasses import dataclass

    from harness_gym.evaluation.protocol import env_settings
    from harness_gym.executors.openai_executor import OpenAIConfig, OpenAIExecutor

    @dataclass(frozen=True)
    class Knobs:
        p_break: float = 0.25

    config = OpenAIConfig("m", "http://127.0.0.1:9/v1")
    recorded = env_settings({"executor": OpenAIExecutor(config), "profile": Knobs(), "token_budget": 500})
    assert recorded == {"executor": config.content_key(), "profile": {"p_break": 0.25}, "token_budget": 500}
    assert env_settings({"executor": config})["executor"] == config.content_key()


def test_finite_buffer_check_reports_each_term_of_the_theorem_by_name() -> None:
    """A buffer whose weights are exactly (1, 1, 1, 3) (clipped at 3): every term the report names, at
    the default beta 0.2; ESS is Kish's (sum w)^2 / sum w^2 = 36 / 12 = 3."""
    G4 = [0.0, 0.5, 0.25, 1.0]
    psi = [1.0, 0.0, 0.0, 1.0]
    got = finite_buffer_check(G4, [0.0, 0.0, 0.0, 5.0], psi, clip=(0.5, 3.0))
    expected = {
        "N": 4,
        "beta": 0.2,
        "mean_G": 0.4375,
        "E_q_G": 0.625,  # q = (1/6, 1/6, 1/6, 1/2)
        "max_G": 1.0,
        "delta_Q": 0.1875,
        "sigma_B": 0.5625,
        "bound_holds": True,
        "mean_psi": 0.5,
        "mean_w": 1.5,
        "cov_w_psi": 0.25,
        "delta_psi_direct": 1 / 6,
        "delta_psi_cov": 1 / 6,
        "identity_error": 0.0,
        "ess": 3.0,
    }
    assert list(got) == list(expected)
    assert got == pytest.approx(expected, abs=1e-15)


def test_finite_buffer_check_computes_in_float64_whatever_the_buffer_is_stored_in() -> None:
    """A float32 buffer (as an HDF5 dataset may hold it) gives the numbers of its float64 copy: means of
    float32 arrays would otherwise be taken in float32."""
    rng = np.random.default_rng(1)
    g32, psi32 = rng.random(9).astype(np.float32), rng.random(9).astype(np.float32)
    adv = rng.normal(0.0, 0.1, 9)
    assert float(g32.mean()) != float(g32.astype(float).mean())  # the case the conversion is for
    assert float(psi32.mean()) != float(psi32.astype(float).mean())
    assert finite_buffer_check(g32, adv, psi32) == finite_buffer_check(
        g32.astype(float), adv, psi32.astype(float)
    )


@pytest.mark.parametrize(
    ("g", "psi", "shown"),
    [
        ([[0.1, 0.2], [0.3, 0.4]], [[1.0, 0.0], [0.0, 1.0]], "(2, 2), (2, 2), (2, 2)"),
        ([], [], "(0,), (0,), (0,)"),
        ([0.1, 0.2, 0.3], [1.0], "(3,), (3,), (1,)"),  # numpy would broadcast the one Psi
    ],
    ids=["two-dimensional", "empty", "psi-shorter"],
)
def test_finite_buffer_check_needs_one_nonempty_1d_shape_in_one_line(g, psi, shown) -> None:
    message = rf"^G, advantages and psi need one equal 1-d shape, got {re.escape(shown)}$"
    with pytest.raises(ValueError, match=message):
        finite_buffer_check(g, np.zeros(np.shape(g)), psi)


def test_the_process_covariance_is_centred_on_both_sides() -> None:
    """Cov_mu(w, Psi) is the mean of (w - mean w)(Psi - mean Psi): exact to rounding (1e-13 relative,
    against rational arithmetic) even when the weights or Psi share a large common level, where leaving
    either side uncentred (the same value in exact arithmetic) loses some seven digits to cancellation."""
    from fractions import Fraction

    from harness_gym.evaluation.protocol import aw_weights

    def exact(w, p) -> float:
        w, p = [Fraction(float(x)) for x in w], [Fraction(float(x)) for x in p]
        mw, mp = sum(w) / len(w), sum(p) / len(p)
        return float(sum((a - mw) * (b - mp) for a, b in zip(w, p, strict=True)) / len(w))

    rng = np.random.default_rng(0)
    g, psi = rng.random(8), rng.random(8)
    cases = [(10.0 + rng.normal(0.0, 1e-6, 8), psi), (rng.normal(0.0, 0.1, 8), 1e6 + psi)]
    for adv, p in cases:
        want = exact(aw_weights(adv), p)
        assert finite_buffer_check(g, adv, p)["cov_w_psi"] == pytest.approx(want, rel=1e-13, abs=0.0)


def test_the_outcome_bound_forgives_rounding_of_1e_12_and_no_more() -> None:
    """E_q[G] - mean G <= sigma_B + 1e-12: an excess of exactly the tolerance still holds (weights 1e-20,
    1 and 12 by clipping), a constant buffer of 10241 whose E_q[G] rounds 1.8e-12 above its mean does not
    (the tolerance is absolute, not scaled to G)."""
    at = finite_buffer_check([0.0, 6000.0, 6000.0], [-50.0, 0.0, 5.0], [0.0] * 3, clip=(1e-20, 12.0))
    assert at["delta_Q"] == at["sigma_B"] + 1e-12 and at["bound_holds"] is True
    above = finite_buffer_check([10241.0] * 5, [0.0] * 5, [0.0] * 5)
    assert above["delta_Q"] - above["sigma_B"] == pytest.approx(1.82e-12, rel=1e-2)
    assert above["bound_holds"] is False


def test_env_settings_record_a_value_without_a_json_form_by_its_repr() -> None:
    """A keyword JSON cannot hold (here a path) is recorded by its repr, not refused."""
    from pathlib import PurePosixPath

    from harness_gym.evaluation.protocol import env_settings

    path = PurePosixPath("/profiles/weak.json")
    assert env_settings({"profile": path, "max_steps": 8}) == {"profile": repr(path), "max_steps": 8}


def test_compare_entries_lifts_and_streams_on_repeated_episodes() -> None:
    """Every table entry of ``compare`` on a buffer whose tasks repeat one episode (so whole tasks are
    resampled): Base's own row is a zero effect without interval; each other policy's interval and
    p-value come from the stream of (rng_seed, base, name), a lift's from (rng_seed, other, aw); an
    event is applicable when either side saw it applicable; the lift's estimate is the difference of the
    two lifts."""
    import dataclasses

    from harness_gym.evaluation.protocol import EARLY_SUBMIT, _paired_effect, _policy_rng, compare

    n = len(EVENTS)
    rng = np.random.default_rng(7)
    keys = [(f"t{i // 3}", 0, i % 3) for i in range(12)]

    def run(env_applicable: int, early: list[bool]) -> list:
        applicable = tuple(j != 2 and j != 1 - env_applicable for j in range(n))  # 2: never; 0 or 1: one side
        return [
            dataclasses.replace(
                _result(tuple(e and j == n - 1 for j in range(n)), applicable),
                task_id=task,
                seed=seed,
                rollout=rollout,
                G=float(rng.random()),
                hms_norm=float(rng.random()),
                trace=task,  # one episode per task, played three times
            )
            for (task, seed, rollout), e in zip(keys, early, strict=True)
        ]

    assert EVENTS[-1] == EARLY_SUBMIT
    runs = {
        "base": run(0, [False] * 12),
        "awr": run(1, [i < 3 for i in range(12)]),
        "bc": run(1, [False] * 12),
    }
    table = compare(runs, n_boot=200, n_perm=200, level=0.9)
    assert (table["env_id"], table["base"], table["resampled"]) == ("HarnessPlanning-v0", "base", "tasks")
    base, aw = table["policies"]["base"], table["policies"]["awr"]
    assert {k: base[k] for k in ("episodes", "delta_G", "ci_low", "ci_high", "p_value", "delta_hms")} == {
        "episodes": 12,
        "delta_G": 0.0,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "delta_hms": 0.0,
    }
    assert aw["early_submit"] == 0.25 and base["early_submit"] == 0.0
    assert [aw["events"][e]["applicable"] for e in EVENTS[:3]] == [True, True, False]

    def effect(a: str, b: str, by_task: bool = True) -> dict:
        stream = _policy_rng(0, a, b)
        return _paired_effect(runs[a], runs[b], stream, 200, 200, 0.9, by_task)

    assert {k: aw[k] for k in ("delta_G", "ci_low", "ci_high", "p_value", "delta_hms")} == effect(
        "base", "awr"
    )
    assert effect("base", "awr") != effect("base", "awr", by_task=False)  # the clusters matter here
    lift = effect("bc", "awr")
    assert table["lifts"] == {
        "aw_minus_bc": {
            "aw": "awr",
            "other": "bc",
            "aw_lift": aw["delta_G"],
            "other_lift": table["policies"]["bc"]["delta_G"],
            "estimate": aw["delta_G"] - table["policies"]["bc"]["delta_G"],
            "ci_low": lift["ci_low"],
            "ci_high": lift["ci_high"],
            "p_value": lift["p_value"],
            "delta_hms": lift["delta_hms"],
        }
    }
    assert lift != effect("bc", "awr", by_task=False)


def test_compare_names_the_policy_whose_episodes_do_not_pair_with_base() -> None:
    import dataclasses

    from harness_gym.evaluation.protocol import PairingError, compare

    one = _result((False,) * len(EVENTS), (True,) * len(EVENTS))
    late = dataclasses.replace(one, rollout=1)
    with pytest.raises(PairingError, match=r"^results of 'base' and 'late' do not pair .*1 only in 'late'"):
        compare({"base": [one], "late": [late]})


def test_an_episode_result_round_trips_through_its_json_record() -> None:
    """``to_dict`` holds the flags as JSON lists; ``from_dict`` gives back the same result, every field
    as its plain type even from numpy scalars and 0/1 flags (records read from another writer)."""
    import json

    from harness_gym.evaluation.protocol import EpisodeResult

    fired = tuple(j % 2 == 0 for j in range(len(EVENTS)))
    applicable = tuple(j % 3 != 1 for j in range(len(EVENTS)))
    result = EpisodeResult(
        "HarnessPlanning-v0", "p", 4, "t", 2, 9, 0.75, -0.5, fired, applicable, 6, "budget", "x"
    )
    record = result.to_dict()
    assert record["fired"] == list(fired) and record["applicable"] == list(applicable)
    assert EpisodeResult.from_dict(json.loads(json.dumps(record))) == result
    loose = record | {
        "seed": np.int64(4),
        "G": np.float32(0.75),
        "hms_norm": np.int64(-0.5 * 2) / 2,
        "fired": [int(x) for x in fired],
        "applicable": np.array(applicable, dtype=np.int8),
    }
    back = EpisodeResult.from_dict(loose)
    assert back == result
    assert [type(x) for x in (back.seed, back.G, back.hms_norm, back.fired[0], back.applicable[0])] == [
        int,
        float,
        float,
        bool,
        bool,
    ]


def test_an_evaluations_checkpoint_holds_its_name_keywords_and_price_and_resumes(tmp_path) -> None:
    """``evaluate`` names episodes by the policy's ``name`` (else, with none, its class), keeps the
    other ``gym.make`` keywords (here ``max_steps``) in the resume manifest beside an implicit price 0,
    refuses a resume with other keywords naming the evaluation, and hands a resumed run's episodes to
    ``on_episode``."""
    import json

    from harness_gym.evaluation.engine import ResumeError
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.policies.scripted import ForcedCheckPolicy

    env_id = "HarnessPlanning-v0"

    class Bare:  # no name attribute
        def act(self, obs, mask, rng) -> int:
            return int(np.flatnonzero(mask)[0])

    def run(policy=None, **kwargs) -> tuple[list, list]:
        seen: list = []
        args = {"seeds": (0,), "rollouts": 1, "on_episode": seen.append, "max_steps": 8, **kwargs}
        return evaluate(policy or ForcedCheckPolicy(env_id), env_id, **args), seen

    first, seen = run(checkpoint=tmp_path / "fc")
    assert {r.policy for r in first} == {"forced-check"} and {r.env_id for r in first} == {env_id}
    assert sorted((EpisodeResult_from(record) for record in seen), key=repr) == sorted(first, key=repr)
    manifest = json.loads((tmp_path / "fc" / "manifest.json").read_text())
    assert (manifest["policy"], manifest["env"], manifest["token_price"]) == (
        "forced-check",
        {"max_steps": 8},
        0.0,
    )
    again, resumed = run(checkpoint=tmp_path / "fc")
    assert again == first  # every episode from the checkpoint, each handed on (in the store's order)
    assert sorted(resumed, key=json.dumps) == sorted(seen, key=json.dumps)
    message = (
        r"^cannot resume the interrupted evaluation of forced-check on HarnessPlanning-v0 at .*max_steps"
    )
    with pytest.raises(ResumeError, match=message):
        run(checkpoint=tmp_path / "fc", max_steps=9)
    changes = {
        "seeds": {"seeds": (1,)},
        "rollouts": {"rollouts": 2},
        "split": {"split": "train"},
        "policy_fingerprint": {"fingerprint": "model-b"},
        r"executor_profile\.name": {"executor_profile": "weak"},
        "token_budget": {"token_budget": 5000},
        "env_id": {"env_id": "HarnessCoding-v0"},
    }
    for field_name, change in changes.items():  # every setting an episode depends on is compared
        with pytest.raises(ResumeError, match=rf"[(; ]{field_name}: "):
            if "env_id" in change:
                evaluate(ForcedCheckPolicy(env_id), change["env_id"], seeds=(0,), checkpoint=tmp_path / "fc")
            else:
                run(checkpoint=tmp_path / "fc", **change)
    assert {r.policy for r in run(Bare())[0]} == {"Bare"}


def EpisodeResult_from(record):
    from harness_gym.evaluation.protocol import EpisodeResult

    return EpisodeResult.from_dict(record)


def test_an_evaluation_groups_by_task_and_plays_its_settings_on_the_environment(monkeypatch) -> None:
    """The engine is asked to group items ``(episode_seed, task_id, seed, rollout)`` by task id (one
    process per task keeps its verifier cache warm); the episodes are played on ``gym.make`` with the
    given profile, budget and price beside the other keywords, a price 0 left implicit (the environment
    made as without one)."""
    from harness_gym.evaluation import protocol
    from harness_gym.policies.scripted import ForcedCheckPolicy

    run_engine, asked, played = protocol.run_engine, [], []

    def recording(job, items, on_done, config, group):
        asked.extend((item, group(item)) for item in items)
        played.append(dict(job.env_kwargs))
        return run_engine(job, items, on_done, config, group=group)

    monkeypatch.setattr(protocol, "run_engine", recording)
    policy, env_id = ForcedCheckPolicy("HarnessPlanning-v0"), "HarnessPlanning-v0"
    protocol.evaluate(policy, env_id, seeds=(0,), rollouts=2, max_steps=8)
    assert len(asked) == 40 and all(key == item[1] for item, key in asked)
    assert len({key for _, key in asked}) == 20
    settings = {"executor_profile": "weak", "token_budget": 5000, "token_price": 0.5}
    protocol.evaluate(policy, env_id, seeds=(0,), rollouts=1, max_steps=8, **settings)
    assert played == [{"max_steps": 8}, {"max_steps": 8, **settings}]
    chosen = sorted({key for _, key in asked})[:2]
    asked.clear()
    protocol.evaluate(policy, env_id, seeds=(0,), rollouts=1, task_ids=chosen)
    assert sorted(key for _, key in asked) == chosen  # the tasks of the environment made with the keywords
