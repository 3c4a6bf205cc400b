"""Aggregate statistics across settings and seeds: the summary offline-RL papers report, via rliable.

The runs are per-seed normalised scores (``seed_scores``): one score per policy x evaluation seed (the
model trained with seed ``s`` plays seed ``s``), 100 x (mean G - random) / (expert - random) with the
fixed per-env-id ends of ``harness_gym.evaluation.reference_scores``, so settings share one scale (random = 0,
expert = 100). ``summarize`` reads them from a results document (``harness_gym.evaluation.results``),
arranges them as rliable score matrices (runs = seeds, tasks = settings) and computes per policy IQM,
mean, median and optimality gap with intervals, probability of improvement and performance profiles
(Agarwal et al., 2021).

Which interval a policy gets depends on where its runs differ (the document's ``per_seed_models``):

- a policy with one model per seed (a learner): runs are independent training runs, and rliable's
  stratified bootstrap resamples them within each setting;
- a policy that plays every seed itself (Base, Forced-CHECK, the references, an outside policy scored
  as one object): its seeds are only different episodes, so its interval resamples the episodes within
  each (setting, seed) run, the episode-level interval it really has.

Every policy of a document played the same episodes (same task, seed and rollout), so comparisons are
paired: ``paired_comparison`` resamples both sides with the same indices (seeds, or episodes when
neither side has per-seed models) and reports the mean paired difference and P(X > Y), the share of
paired runs in which X scores above Y (ties half), averaged over settings. Against Base and against the
best-ranked policy every policy is compared this way; learner pairs (X vs BC) also get rliable's
independent probability of improvement. No interval comes from a single seed: with one seed, only
episode-level intervals are shown.

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
    "best_policy",
    "episode_interval_estimates",
    "improvement_pairs",
    "interval_estimates",
    "paired_comparison",
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
    """Score matrices from a results document (``results["scores"][env_id]["policies"][name]``'s
    ``seed_scores``).

    A policy has a cell on a setting when it has a score for every seed seen anywhere in the results.
    rliable needs every policy on the same settings, so gaps are resolved explicitly: ``drop-policy``
    leaves out the policies lacking a cell on some scored setting, ``drop-setting`` the settings where
    some policy lacks one, ``error`` raises. Both kinds of drop are recorded in the result.
    """
    if missing not in ("drop-policy", "drop-setting", "error"):
        raise ValueError(f"missing must be 'drop-policy', 'drop-setting' or 'error', got {missing!r}")
    settings = results.get("scores") or {}
    table: dict[str, dict[str, dict[int, float]]] = {}  # env id -> policy -> seed -> score
    for env_id, setting in settings.items():
        runs = (setting or {}).get("policies") or {}
        table[env_id] = {
            name: {int(seed): float(v) for seed, v in run["seed_scores"].items()}
            for name, run in runs.items()
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


# -- episode-level and paired intervals ------------------------------------------------------------
Episodes = list[np.ndarray]
"""Per setting, a policy's per-episode normalised scores shaped (seeds x episodes per seed)."""


def _metric_values(runs: np.ndarray) -> np.ndarray:
    """``METRICS`` of run matrices shaped (..., seeds, settings), as rliable defines them: (..., 4)."""
    from scipy.stats import trim_mean

    flat = runs.reshape(*runs.shape[:-2], -1)
    per_setting = runs.mean(axis=-2)
    return np.stack(
        [
            trim_mean(flat, 0.25, axis=-1),
            per_setting.mean(axis=-1),
            np.median(per_setting, axis=-1),
            EXPERT - np.minimum(flat, EXPERT).mean(axis=-1),
        ],
        axis=-1,
    )


def _percentile(point: float, replicates: np.ndarray | None, confidence: float) -> dict[str, Any]:
    """{estimate, ci_low, ci_high}: the percentile interval of ``replicates`` (None: no interval)."""
    if replicates is None:
        return {"estimate": float(point), "ci_low": None, "ci_high": None}
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return {"estimate": float(point), "ci_low": float(low), "ci_high": float(high)}


def _resampled(
    sides: Sequence[tuple[np.ndarray, Episodes | None]], by_episode: bool, reps: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Bootstrap replicates (reps x seeds x settings) of each side's run matrix, with shared indices.

    ``by_episode``: every (setting, seed) run is the mean of its episodes drawn with replacement (the
    same episode positions for every side: pairs stay pairs); otherwise the runs (seeds) are drawn with
    replacement within each setting, rliable's stratified bootstrap, again the same for every side."""
    runs = sides[0][0]
    seeds, settings = runs.shape
    if not by_episode:
        idx = rng.integers(0, seeds, size=(reps, seeds, settings))
        return [matrix[idx, np.arange(settings)] for matrix, _ in sides]
    out = [np.empty((reps, seeds, settings)) for _ in sides]
    for e in range(settings):
        n = sides[0][1][e].shape[1]
        idx = rng.integers(0, n, size=(reps, seeds, n))
        for target, (_, episodes) in zip(out, sides, strict=True):
            target[:, :, e] = np.take_along_axis(episodes[e][None], idx, axis=2).mean(axis=2)
    return out


def _episodes(results: Mapping[str, Any], name: str, settings: Sequence[str]) -> Episodes | None:
    """A policy's per-episode normalised scores on ``settings``, or None when the document lacks them."""
    from harness_gym.evaluation.results import episode_scores

    try:
        return [episode_scores(results, env_id, name) for env_id in settings]
    except (KeyError, TypeError, ValueError):
        return None


def episode_interval_estimates(
    runs: np.ndarray, episodes: Episodes, reps: int = REPS, seed: int = 0, confidence: float = 0.95
) -> dict[str, dict[str, float]]:
    """{metric: {estimate, ci_low, ci_high}} for a policy whose seeds differ only by episodes: the
    runs' episodes resampled within each (setting, seed) run (``METRICS``; percentile intervals)."""
    (replicates,) = _resampled([(runs, episodes)], True, reps, np.random.default_rng(seed))
    point, values = _metric_values(runs), _metric_values(replicates)
    return {metric: _percentile(point[i], values[:, i], confidence) for i, metric in enumerate(METRICS)}


def _pair_poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) over paired runs (..., seeds, settings): share of seeds where X beats Y (ties half),
    averaged over settings."""
    return ((x > y) + 0.5 * (x == y)).mean(axis=(-2, -1))


def paired_comparison(
    x: tuple[np.ndarray, Episodes | None, bool],
    y: tuple[np.ndarray, Episodes | None, bool],
    reps: int = POI_REPS,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """X against Y on the same episodes: ``delta`` (mean of X's run minus Y's run on the same setting
    and seed, normalised points) and ``poi`` (P(X > Y) over those pairs), each with an interval.

    Each side is (run matrix seeds x settings, per-setting episode scores or None, per-seed models).
    When neither side has per-seed models and both have their episodes, the episodes are resampled
    (in pairs); otherwise the seeds are, and with a single seed there is no interval
    (``resampled``: "episodes", "seeds" or None)."""
    (xr, xe, x_models), (yr, ye, y_models) = x, y
    by_episode = not x_models and not y_models and xe is not None and ye is not None
    method = "episodes" if by_episode else "seeds" if xr.shape[0] > 1 else None
    delta, poi = None, None
    if method is not None:
        xb, yb = _resampled([(xr, xe), (yr, ye)], by_episode, reps, np.random.default_rng(seed))
        delta, poi = (xb - yb).mean(axis=(-2, -1)), _pair_poi(xb, yb)
    return {
        "delta": _percentile(float((xr - yr).mean()), delta, confidence),
        "poi": _percentile(float(_pair_poi(xr, yr)), poi, confidence),
        "resampled": method,
    }


def best_policy(metrics: Mapping[str, Mapping[str, Any]], skip: Iterable[str] = ()) -> str | None:
    """The policy with the highest IQM, leaving out ``skip`` (the references: upper bounds, not entries)."""
    ranked = [name for name in metrics if name not in set(skip)]
    return max(ranked, key=lambda name: metrics[name]["iqm"]["estimate"]) if ranked else None


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
    """The aggregate statistics of a results document, JSON-ready (``results["aggregate"]``).

    Keys: the matrices' shape (``settings``, ``seeds``, ``runs_per_policy``) and what was left out,
    the bootstrap settings, ``metrics`` (per policy ``METRICS`` and ``interval``: "seeds" for rliable's
    stratified bootstrap over runs, "episodes" for ``episode_interval_estimates``, None with a single
    seed), ``per_setting`` (each policy's mean score per setting, same intervals), ``best`` (highest IQM,
    references left out), ``paired`` (per policy ``paired_comparison`` against ``base`` and ``best``),
    ``improvement`` (over ``improvement_pairs``: against Base the paired P(X > Y), between learners
    rliable's independent one) and ``profile`` (``tau`` and ``performance_profiles``). Every estimate
    is seeded alike, so a policy's numbers do not depend on which others are in the document.
    ``workers`` processes share the independent probability-of-improvement pairs."""
    if reps < 1 or poi_reps < 1 or profile_reps < 1:
        raise ValueError(f"bootstrap replications must be positive, got reps={reps}, poi_reps={poi_reps}")
    m = score_matrices(results, missing)
    meta = results.get("policies") or {}
    references = set((results.get("config") or {}).get("references") or ())
    references |= {name for name, entry in meta.items() if entry.get("kind") == "reference"}
    models = {name: (meta.get(name) or {}).get("per_seed_models", True) for name in m.scores}
    episodes = {name: _episodes(results, name, m.settings) for name in m.scores}
    by_episode = {name for name in m.scores if not models[name] and episodes[name] is not None}
    several = len(m.seeds) > 1

    metrics: dict[str, dict[str, Any]] = {}
    per_setting: dict[str, dict[str, Any]] = {env_id: {} for env_id in m.settings}
    for name, runs in m.scores.items():
        if name in by_episode:
            metrics[name] = episode_interval_estimates(runs, episodes[name], reps, seed, confidence)
            interval = "episodes"
        elif several:
            metrics[name] = interval_estimates({name: runs}, reps, seed, confidence)[name]
            interval = "seeds"
        else:
            point = _metric_values(runs)
            metrics[name] = {
                metric: _percentile(point[i], None, confidence) for i, metric in enumerate(METRICS)
            }
            interval = None
        metrics[name]["interval"] = interval
        sides = [
            (runs[:, [e]], None if episodes[name] is None else [episodes[name][e]])
            for e in range(len(m.settings))
        ]
        for e, env_id in enumerate(m.settings):
            replicates = None
            if interval is not None:
                (boot,) = _resampled([sides[e]], name in by_episode, reps, np.random.default_rng(seed))
                replicates = boot.mean(axis=(-2, -1))
            per_setting[env_id][name] = _percentile(float(runs[:, e].mean()), replicates, confidence)

    def side(name: str) -> tuple[np.ndarray, Episodes | None, bool]:
        return m.scores[name], episodes[name], models[name]

    best = best_policy(metrics, references)
    paired: dict[str, dict[str, Any]] = {}
    for name in m.scores:
        entry = {}
        for label, other in (("base", "base"), ("best", best)):
            if other is not None and other != name and other in m.scores:
                entry[label] = paired_comparison(side(name), side(other), poi_reps, seed, confidence)
        paired[name] = entry
    pairs = improvement_pairs(m.scores, references)
    independent = [(x, y) for x, y in pairs if y != "base"]
    improvement = {}
    if several:
        found = probability_of_improvement(m.scores, independent, poi_reps, seed, confidence, workers)
        improvement = {(p["x"], p["y"]): {**p, "paired": False} for p in found}
    else:
        for x, y in independent:
            point = _poi(m.scores[x], m.scores[y])[0]
            improvement[x, y] = {"x": x, "y": y, **_percentile(point, None, confidence), "paired": False}
    for x, y in pairs:
        if y == "base":
            poi = paired[x]["base"]["poi"]
            improvement[x, y] = {"x": x, "y": y, **poi, "paired": True}
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
        "references": sorted(references & set(m.scores)),
        "metrics": metrics,
        "per_setting": per_setting,
        "best": best,
        "paired": paired,
        "improvement": [improvement[pair] for pair in pairs],
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
