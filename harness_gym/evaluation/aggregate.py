"""Aggregate statistics across settings and seeds: the summary offline-RL papers report, via rliable.

The runs are per-seed normalised scores (``seed_scores``): one score per policy x evaluation seed (the
model trained with seed ``s`` plays seed ``s``), 100 x (mean G - random) / (expert - random) with the
fixed per-env-id ends of ``harness_gym.evaluation.reference_scores``, so settings share one scale (random = 0,
expert = 100). ``summarize`` arranges them as rliable score matrices (runs = seeds, tasks = settings)
and computes per policy IQM, mean, median and optimality gap with stratified-bootstrap intervals,
probability of improvement for algorithm pairs and performance profiles (Agarwal et al., 2021).

``pass_k`` is tau-bench's pass^k over the rollouts of each (task, seed): the chance that k i.i.d.
rollouts all succeed (``harness_gym.core.rubric.SOLVED_G``), estimated without bias as C(c, k) / C(n, k).

rliable (and with it pandas, arch, seaborn) is imported inside the functions that need it, never on
``import harness_gym``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from harness_gym.core.rubric import SOLVED_G
from harness_gym.evaluation.reference_scores import normalized_score

__all__ = [
    "METRICS",
    "POI_REPS",
    "REPS",
    "ScoreMatrices",
    "improvement_pairs",
    "interval_estimates",
    "pass_hat_k",
    "pass_k",
    "performance_profiles",
    "probability_of_improvement",
    "score_matrices",
    "seed_scores",
    "summarize",
]

EXPERT = 100.0
"""Normalised score of the expert reference: the optimality gap's target (rliable's ``gamma``)."""
METRICS = ("iqm", "mean", "median", "optimality_gap")
REPS = 2000
"""Bootstrap replications of the metric intervals."""
PROFILE_REPS = 200
"""Replications of the performance-profile bands: a figure only, and rliable evaluates every threshold
per replication in Python (about 10x the cost of the metrics at the same count)."""
POI_REPS = 2000
"""Replications of the probability-of-improvement intervals (rliable's stratified bootstrap)."""
BASELINES = ("base", "bc")
"""Every learner's probability of improvement is computed against these."""
NOT_LEARNERS = frozenset({"base", "forced-check"})
"""Scripted policies of every bench; the bench's reference policies are not learners either."""
Missing = Literal["drop-policy", "drop-setting", "error"]


# -- runs ------------------------------------------------------------------------------------------
def seed_scores(results_by_policy: Mapping[str, Sequence[Any]], env_id: str) -> dict[str, dict[int, float]]:
    """{policy: {seed: normalised score of that seed's mean G}} from ``EpisodeResult`` lists."""
    out: dict[str, dict[int, float]] = {}
    for name, results in results_by_policy.items():
        by_seed: dict[int, list[float]] = {}
        for r in results:
            if r.env_id != env_id:
                raise ValueError(f"{name}: an episode of {r.env_id!r} among results for {env_id!r}")
            by_seed.setdefault(int(r.seed), []).append(float(r.G))
        out[name] = {s: normalized_score(env_id, float(np.mean(g))) for s, g in sorted(by_seed.items())}
    return out


@dataclass(frozen=True)
class ScoreMatrices:
    """rliable's input: per policy a (seeds x settings) matrix, and what was left out and why."""

    scores: dict[str, np.ndarray]
    settings: tuple[str, ...]
    seeds: tuple[int, ...]
    unscored_settings: tuple[str, ...] = ()
    """Settings without any ``seed_scores`` (nothing ran there): no policy has runs on them."""
    dropped_policies: dict[str, list[str]] = field(default_factory=dict)
    """Policy -> the settings it lacks a score for every seed on (``missing="drop-policy"``)."""
    dropped_settings: dict[str, list[str]] = field(default_factory=dict)
    """Setting -> the policies without a score for every seed there (``missing="drop-setting"``)."""


def score_matrices(results: Mapping[str, Any], missing: Missing = "drop-policy") -> ScoreMatrices:
    """Score matrices from a bench results dict (``results["settings"][env_id]["seed_scores"]``).

    A policy has a cell on a setting when it has a score for every seed seen anywhere in the results.
    rliable needs every policy on the same settings, so gaps are resolved explicitly: ``drop-policy``
    leaves out the policies lacking a cell on some scored setting, ``drop-setting`` the settings where
    some policy lacks one, ``error`` raises. Both kinds of drop are recorded in the result.
    """
    if missing not in ("drop-policy", "drop-setting", "error"):
        raise ValueError(f"missing must be 'drop-policy', 'drop-setting' or 'error', got {missing!r}")
    settings = results.get("settings") or {}
    table: dict[str, dict[str, dict[int, float]]] = {}  # env id -> policy -> seed -> score
    for env_id, setting in settings.items():
        scores = (setting or {}).get("seed_scores") or {}
        table[env_id] = {
            name: {int(seed): float(v) for seed, v in by_seed.items()} for name, by_seed in scores.items()
        }
    scored = [env_id for env_id, by_policy in table.items() if by_policy]
    unscored = tuple(env_id for env_id in table if env_id not in scored)
    seeds = tuple(sorted({s for e in scored for by_seed in table[e].values() for s in by_seed}))
    policies = list(dict.fromkeys(name for e in scored for name in table[e]))

    def complete(env_id: str, name: str) -> bool:
        return set(table[env_id].get(name, {})) == set(seeds)

    gaps = {name: [e for e in scored if not complete(e, name)] for name in policies}
    gaps = {name: envs for name, envs in gaps.items() if envs}
    dropped_policies: dict[str, list[str]] = {}
    dropped_settings: dict[str, list[str]] = {}
    if gaps and missing == "error":
        detail = "; ".join(f"{name}: {', '.join(envs)}" for name, envs in gaps.items())
        raise ValueError(f"policies without a score for every seed {list(seeds)} on some setting: {detail}")
    if missing == "drop-policy":
        dropped_policies = gaps
        policies = [name for name in policies if name not in gaps]
    elif missing == "drop-setting":
        for env_id in scored:
            lacking = [name for name in policies if not complete(env_id, name)]
            if lacking:
                dropped_settings[env_id] = lacking
        scored = [env_id for env_id in scored if env_id not in dropped_settings]
    matrices = {
        name: np.array([[table[e][name][s] for e in scored] for s in seeds], dtype=float).reshape(
            len(seeds), len(scored)
        )
        for name in policies
    }
    if not scored or not seeds:
        matrices = {}
    return ScoreMatrices(matrices, tuple(scored), seeds, unscored, dropped_policies, dropped_settings)


# -- rliable ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed NumPy's global RNG for the block and restore its state afterwards.

    rliable 1.2.0's stratified bootstraps draw their indices with ``np.random.choice`` and ignore the
    ``random_state`` they are given (arch also deprecates it), so the global state is what makes the
    intervals reproducible. Every estimate is computed under the same seed: a policy's interval does
    not depend on which other policies are in the results."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def _interval(point: Any, ci: Any, i: int = 0) -> dict[str, float]:
    return {"estimate": float(point[i]), "ci_low": float(ci[0][i]), "ci_high": float(ci[1][i])}


def _quiet_absl() -> None:
    """rliable logs every estimate at INFO through absl; only its warnings are of interest."""
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.WARNING)


def interval_estimates(
    scores: Mapping[str, np.ndarray], reps: int = REPS, seed: int = 0, confidence: float = 0.95
) -> dict[str, dict[str, dict[str, float]]]:
    """{policy: {metric: {estimate, ci_low, ci_high}}} for ``METRICS``, stratified bootstrap over runs."""
    from rliable import library as rly
    from rliable import metrics

    _quiet_absl()

    def aggregate(x: np.ndarray) -> np.ndarray:
        return np.array(
            [
                metrics.aggregate_iqm(x),
                metrics.aggregate_mean(x),
                metrics.aggregate_median(x),
                metrics.aggregate_optimality_gap(x, gamma=EXPERT),
            ]
        )

    out = {}
    for name, matrix in scores.items():
        with _seeded(seed):
            point, ci = rly.get_interval_estimates(
                {name: matrix}, aggregate, reps=reps, confidence_interval_size=confidence
            )
        out[name] = {metric: _interval(point[name], ci[name], i) for i, metric in enumerate(METRICS)}
    return out


def improvement_pairs(policies: Iterable[str], references: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(X, Y) pairs: every learner (not ``NOT_LEARNERS``, not a reference policy) vs each of ``BASELINES``.

    Includes AWR vs BC and both evaluation modes of the stochastic learners (``awr-greedy`` etc.)."""
    names = list(policies)
    skip = NOT_LEARNERS | set(references)
    learners = [name for name in names if name not in skip]
    return [(x, y) for x in learners for y in BASELINES if y in names and x != y]


def _poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """rliable's ``metrics.probability_of_improvement``, vectorised.

    rliable computes each setting's Mann-Whitney U with scipy, one call per setting and bootstrap
    replication (1-2 ms each); U / (n_x n_y) is the share of run pairs where X beats Y, ties counting
    one half, which is what this computes in one array operation (equal to rliable's value, tested).
    """
    diff = x[:, None, :] - y[None, :, :]
    per_setting = (diff > 0).mean(axis=(0, 1)) + 0.5 * (diff == 0).mean(axis=(0, 1))
    return np.array([per_setting.mean()])


def _poi_interval(x: np.ndarray, y: np.ndarray, reps: int, seed: int, confidence: float) -> dict[str, float]:
    """One pair's estimate and interval (module level: it runs in worker processes too)."""
    from rliable import library as rly

    _quiet_absl()
    with _seeded(seed):
        point, ci = rly.get_interval_estimates(
            {"pair": [x, y]}, _poi, reps=reps, confidence_interval_size=confidence
        )
    return _interval(point["pair"], ci["pair"])


def probability_of_improvement(
    scores: Mapping[str, np.ndarray],
    pairs: Sequence[tuple[str, str]],
    reps: int = POI_REPS,
    seed: int = 0,
    confidence: float = 0.95,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """P(X > Y) per pair (rliable: Mann-Whitney per setting, averaged), independent stratified bootstrap.

    Pairs are spread over ``workers`` processes; each pair is seeded alike, so the numbers do not
    depend on ``workers``."""
    unknown = sorted({name for pair in pairs for name in pair if name not in scores})
    if unknown:
        raise ValueError(f"no score matrix for {unknown}; known: {sorted(scores)}")
    jobs = [(scores[x], scores[y], reps, seed, confidence) for x, y in pairs]
    if workers > 1 and len(jobs) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(workers, len(jobs))) as pool:
            intervals = list(pool.map(_poi_interval, *zip(*jobs, strict=True)))
    else:
        intervals = [_poi_interval(*job) for job in jobs]
    return [{"x": x, "y": y, **interval} for (x, y), interval in zip(pairs, intervals, strict=True)]


def performance_profiles(
    scores: Mapping[str, np.ndarray], taus: np.ndarray, reps: int = REPS, seed: int = 0
) -> dict[str, dict[str, list[float]]]:
    """{policy: {fraction, ci_low, ci_high}}: share of runs scoring above each ``tau`` (rliable)."""
    from rliable import library as rly

    _quiet_absl()
    out = {}
    for name, matrix in scores.items():
        with _seeded(seed):
            profile, ci = rly.create_performance_profile({name: matrix}, taus, reps=reps)
        out[name] = {
            "fraction": [float(v) for v in profile[name]],
            "ci_low": [float(v) for v in ci[name][0]],
            "ci_high": [float(v) for v in ci[name][1]],
        }
    return out


def profile_taus(scores: Mapping[str, np.ndarray], points: int = 41) -> np.ndarray:
    """Thresholds from min(0, lowest score) to max(100, highest score): random and expert always shown."""
    values = np.concatenate([m.ravel() for m in scores.values()]) if scores else np.zeros(1)
    low = min(0.0, math.floor(float(values.min())))
    high = max(EXPERT, math.ceil(float(values.max())))
    return np.linspace(low, high, points)


def summarize(
    results: Mapping[str, Any],
    reps: int = REPS,
    poi_reps: int = POI_REPS,
    seed: int = 0,
    confidence: float = 0.95,
    missing: Missing = "drop-policy",
    profile_reps: int = PROFILE_REPS,
    workers: int = 1,
) -> dict[str, Any]:
    """The aggregate statistics of a bench results dict, JSON-ready (``results["aggregate"]``).

    Keys: the matrices' shape (``settings``, ``seeds``, ``runs_per_policy``) and what was left out,
    the bootstrap settings, ``metrics`` (``interval_estimates``), ``improvement``
    (``probability_of_improvement`` over ``improvement_pairs``) and ``profile`` (``tau`` and
    ``performance_profiles``). ``workers`` processes share the probability-of-improvement pairs."""
    if reps < 1 or poi_reps < 1 or profile_reps < 1:
        raise ValueError(f"bootstrap replications must be positive, got reps={reps}, poi_reps={poi_reps}")
    m = score_matrices(results, missing)
    references = (results.get("config") or {}).get("references") or ()
    pairs = improvement_pairs(m.scores, references)
    taus = profile_taus(m.scores)
    return {
        "settings": list(m.settings),
        "seeds": list(m.seeds),
        "runs_per_policy": len(m.settings) * len(m.seeds),
        "unscored_settings": list(m.unscored_settings),
        "dropped_policies": m.dropped_policies,
        "dropped_settings": m.dropped_settings,
        "missing": missing,
        "bootstrap": {
            "reps": reps,
            "poi_reps": poi_reps,
            "profile_reps": profile_reps,
            "seed": seed,
            "confidence": confidence,
        },
        "metrics": interval_estimates(m.scores, reps, seed, confidence) if m.scores else {},
        "improvement": probability_of_improvement(m.scores, pairs, poi_reps, seed, confidence, workers),
        "profile": {
            "tau": [float(t) for t in taus],
            "policies": performance_profiles(m.scores, taus, profile_reps, seed) if m.scores else {},
        },
    }


# -- pass^k ----------------------------------------------------------------------------------------
def pass_hat_k(successes: int, n: int, k: int) -> float:
    """Unbiased estimate of P(k i.i.d. rollouts all succeed) from ``successes`` of ``n``: C(c,k)/C(n,k)."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n={n}], got {successes}")
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n rollouts, got k={k} with n={n}")
    return math.comb(successes, k) / math.comb(n, k)


def pass_k(
    results_by_policy: Mapping[str, Sequence[Any]], ks: Iterable[int], threshold: float = SOLVED_G
) -> dict[str, dict[str, float]]:
    """{policy: {str(k): pass^k}}: the estimator per (task, seed) group of rollouts, averaged over groups.

    An episode succeeds when its G >= ``threshold``. Raises when some group has fewer than k rollouts."""
    ks = list(ks)
    out: dict[str, dict[str, float]] = {}
    for name, results in results_by_policy.items():
        groups: dict[tuple[str, int], list[bool]] = {}
        for r in results:
            groups.setdefault((r.task_id, int(r.seed)), []).append(float(r.G) >= threshold)
        if not groups:
            raise ValueError(f"{name}: no episodes to compute pass^k from")
        out[name] = {
            str(k): float(np.mean([pass_hat_k(sum(g), len(g), k) for g in groups.values()])) for k in ks
        }
    return out
