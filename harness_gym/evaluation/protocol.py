"""Evaluation protocol and the statistics behind the paper's tables.

``evaluate`` runs a policy through every held-out task x seed x rollout (the paper's 180 episodes per
domain) and keeps one ``EpisodeResult`` per episode (its JSON record also holds the episode's usage and
step records without prompts and replies: ``spend.compact_steps``). ``compare`` turns the results of
several policies into what the tables report: mean G, the paired change against Base with a bootstrap
interval and a permutation p-value, the HMS change, each event's rate base -> policy, and the AW-BC /
AW-FC lifts.
Pairs are the same (task, seed, rollout), which ``protocol_episodes`` gives the same episode seed.
When some episodes are copies of others (``spend.episode_trace``: a chat LLM at temperature 0 with a
deterministic policy repeats an episode call for call over seeds and rollouts), the interval and the
test resample whole tasks instead of pairs (``clusters``), so copies never count as independent draws;
``compare`` says which it did (``"resampled"``: ``"pairs"`` or ``"tasks"``) and how many episodes
were distinct.

The finite-buffer theory (paper section 4) is checked on a rollout buffer by ``finite_buffer_check``:
with ``w = exp(A / beta)`` and ``q = w / sum(w)``, the outcome shift ``E_q[G] - E_mu[G]`` never exceeds
the buffer slack ``max G - mean G``, and any process statistic shifts by exactly ``Cov(w, Psi) / E[w]``.

The intervals and tests are scipy's (``scipy.stats.bootstrap`` with BCa, ``scipy.stats.permutation_test``),
imported inside the functions; no torch, d3rlpy or minari.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from functools import partial
from typing import Any, ClassVar, NamedTuple

import numpy as np

from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.engine import Checkpoints, EngineConfig, config_key
from harness_gym.evaluation.engine import run as run_engine
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import USAGE_KEYS, EpisodeJob, protocol_episodes
from harness_gym.evaluation.spend import compact_steps, distinct_episodes, episode_trace

CBS = "CheckBeforeSubmit"
EARLY_SUBMIT = "EarlySubmit"
HMS = "HMS"
"""Key of the aggregate process statistic beside the seven events in ``buffer_stats``."""

PairKey = tuple[str, int, int]
"""An episode's (task_id, seed, rollout); episodes of two policies with equal keys are a pair."""


class PairingError(ValueError):
    """Results of two policies do not cover the same (task, seed, rollout) episodes."""


# -- per-episode records ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EpisodeResult:
    """One evaluation episode: enough to recompute every table entry without rerunning anything."""

    env_id: str
    policy: str
    seed: int
    task_id: str
    rollout: int
    episode_seed: int
    G: float
    hms_norm: float
    fired: tuple[bool, ...]
    """Per event, in ``EVENTS`` order."""
    applicable: tuple[bool, ...]
    steps: int
    termination_reason: str
    trace: str | None = None
    """The episode's outcome name with a chat LLM (``spend.episode_trace``): equal traces of one task
    are copies. None with the simulated executor."""

    @property
    def key(self) -> PairKey:
        return (self.task_id, self.seed, self.rollout)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (tuples become lists)."""
        data = asdict(self)
        data["fired"] = list(self.fired)
        data["applicable"] = list(self.applicable)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeResult:
        return cls(
            env_id=str(data["env_id"]),
            policy=str(data["policy"]),
            seed=int(data["seed"]),
            task_id=str(data["task_id"]),
            rollout=int(data["rollout"]),
            episode_seed=int(data["episode_seed"]),
            G=float(data["G"]),
            hms_norm=float(data["hms_norm"]),
            fired=tuple(bool(x) for x in data["fired"]),
            applicable=tuple(bool(x) for x in data["applicable"]),
            steps=int(data["steps"]),
            termination_reason=str(data["termination_reason"]),
            trace=data.get("trace"),
        )


def _episode_result(env_id: str, name: str, item: tuple, final: Mapping[str, Any]) -> dict[str, Any]:
    """An engine item ``(episode_seed, task_id, seed, rollout)`` and its final info as a JSON record."""
    episode_seed, task_id, seed, rollout = item
    steps = final["trajectory"]["steps"]
    record = EpisodeResult(
        env_id=env_id,
        policy=name,
        seed=int(seed),
        task_id=task_id,
        rollout=int(rollout),
        episode_seed=int(episode_seed),
        G=float(final["G"]),
        hms_norm=float(final["hms_norm"]),
        fired=tuple(bool(final["hms"][e]["fired"]) for e in EVENTS),
        applicable=tuple(bool(final["hms"][e]["applicable"]) for e in EVENTS),
        steps=len(steps),
        termination_reason=str(final["termination_reason"]),
        trace=episode_trace(steps),
    ).to_dict()
    record["usage"] = {key: final["usage"][key] for key in USAGE_KEYS}  # beside the result, for reports
    record["episode_id"] = final["trajectory"].get("episode_id")
    record["rubric"] = {name: list(value) for name, value in final["rubric"].items()}
    record["step_records"] = compact_steps(steps)  # the audit trail; prompts and replies by cache key
    return record


def env_settings(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The env kwargs as resume-manifest values: an executor (config or instance) by its content key."""
    out: dict[str, Any] = {}
    for key, value in env_kwargs.items():
        config = getattr(value, "config", value)
        if hasattr(config, "content_key"):
            out[key] = config.content_key()
        elif is_dataclass(config) and not isinstance(config, type):
            out[key] = asdict(config)
        else:
            out[key] = value
    return json.loads(json.dumps(out, sort_keys=True, default=repr))


def profile_record(spec: Any) -> dict[str, str]:
    """The simulated executor profile a spec resolves to, by name and digest: what a resume compares, so
    that a profile reaching ``gym.make`` by any way (a keyword, a file's changed content, or the
    environment's default when none is given) is seen."""
    import hashlib

    from harness_gym.envs.registry import executor_profile

    resolved = executor_profile(spec)
    text = json.dumps(resolved.to_dict(), sort_keys=True)
    return {"name": resolved.name, "sha256": hashlib.sha256(text.encode()).hexdigest()}


@dataclass(frozen=True)
class EvalSettings:
    """What an evaluation's episodes depend on; its resume manifest is ``content_key``, built from every
    field (none is result-neutral: scheduling is ``EngineConfig``'s, apart)."""

    env_id: str
    split: str
    seeds: tuple[int, ...]
    rollouts: int
    policy: str
    policy_fingerprint: str | None
    """The trained model's fingerprint: a retrained model never resumes another's episodes."""
    executor_profile: Any = None
    """``profile_record`` of the simulated executor's profile."""
    token_budget: int | None = None
    token_price: float = 0.0
    """G per thousand executor tokens charged in the rewards (``gym.make``'s ``token_price``)."""
    env: Mapping[str, Any] = field(default_factory=dict)
    """The other ``gym.make`` keywords (``env_settings``: an executor by its content key, ``max_steps``)."""

    NEUTRAL: ClassVar[frozenset[str]] = frozenset()

    def content_key(self) -> dict[str, Any]:
        return config_key(self, self.NEUTRAL)


def evaluate(
    policy: Any,
    env_id: str,
    split: str = "eval",
    seeds: Sequence[int] = EVAL_SEEDS,
    rollouts: int = EVAL_ROLLOUTS,
    policy_name: str | None = None,
    *,
    engine: EngineConfig | None = None,
    checkpoint: str | os.PathLike | None = None,
    fingerprint: str | None = None,
    on_episode: Callable[[dict[str, Any]], None] | None = None,
    executor_profile: Any = None,
    token_budget: int | None = None,
    token_price: float = 0.0,
    **env_kwargs: Any,
) -> list[EpisodeResult]:
    """Every task of ``split`` x ``seeds`` x ``rollouts``, in ``protocol_episodes`` order.

    ``engine`` sets episodes in flight, processes and backend (results never depend on it).
    ``executor_profile``, ``token_budget`` and ``token_price`` are ``gym.make``'s, as are the other
    ``env_kwargs``.
    ``checkpoint`` is a directory keeping one file per finished episode: an interrupted evaluation
    rerun with the same arguments resumes there, one with different settings (``EvalSettings``: seeds,
    rollouts, policy name or ``fingerprint``, the resolved executor profile, the token budget and price, env
    kwargs such as the executor's model, endpoint and sampling) is refused with a ``ResumeError``
    naming the difference. The caller removes it when it no longer needs it.
    ``on_episode`` gets every episode's record (``EpisodeResult.to_dict()`` plus its executor
    ``usage``), resumed ones first: progress bars and usage totals across processes.
    """
    import gymnasium as gym

    from harness_gym.envs.env import check_token_price

    name = policy_name or getattr(policy, "name", None) or type(policy).__name__
    settings = {
        "executor_profile": executor_profile,
        "token_budget": token_budget,
        "token_price": token_price,
    }
    token_price = check_token_price(token_price)
    given = {key: value for key, value in settings.items() if value is not None}
    if not token_price:  # price 0 stays implicit: the environment made as without one
        del given["token_price"]
    env_kwargs = {**env_kwargs, **given}
    env = gym.make(env_id, split=split, **env_kwargs)
    task_ids = [task.task_id for task in env.unwrapped.tasks]
    env.close()
    items = [
        (episode_seed, task_id, seed, rollout)
        for seed, task_id, rollout, episode_seed in protocol_episodes(task_ids, seeds, rollouts)
    ]
    records: dict[int, dict[str, Any]] = {}
    store = None
    if checkpoint is not None:
        manifest = EvalSettings(
            env_id,
            split,
            tuple(int(s) for s in seeds),
            int(rollouts),
            name,
            fingerprint,
            profile_record(executor_profile),
            token_budget,
            token_price,
            env_settings({k: v for k, v in env_kwargs.items() if k not in settings}),
        )
        store = Checkpoints(checkpoint, manifest.content_key(), f"evaluation of {name} on {env_id}")
        records = {int(key): record for key, record in store.load().items()}
    position = {item: i for i, item in enumerate(items)}
    job = EpisodeJob(env_id, policy, split, env_kwargs, keep=partial(_episode_result, env_id, name))

    def done(item: tuple, record: dict[str, Any]) -> None:
        index = position[item]
        if store is not None:
            store.save(f"{index:06d}", record)
        records[index] = record
        if on_episode is not None:
            on_episode(record)

    for record in records.values():
        if on_episode is not None:
            on_episode(record)
    pending = [item for i, item in enumerate(items) if i not in records]
    run_engine(job, pending, done, engine or EngineConfig(), group=lambda item: item[1])
    return [EpisodeResult.from_dict(records[i]) for i in range(len(items))]


# -- paired statistics -----------------------------------------------------------------------------
class Interval(NamedTuple):
    estimate: float
    low: float
    high: float


def _paired_differences(base: Sequence[float], other: Sequence[float]) -> np.ndarray:
    b, o = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if b.shape != o.shape or b.ndim != 1:
        raise ValueError(f"paired samples need equal 1-d shapes, got {b.shape} and {o.shape}")
    if b.size == 0:
        raise ValueError("no pairs")
    return o - b


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


_BATCH_VALUES = 2_000_000
"""Resampling works in batches of about this many numbers to bound memory for large samples."""


def _batch(n: int) -> int:
    return max(1, _BATCH_VALUES // n)


def mean_ci(
    values: Sequence[float],
    n_boot: int = 10_000,
    level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> Interval:
    """BCa bootstrap interval of the mean of ``values`` (``scipy.stats.bootstrap``)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"need a non-empty 1-d sample, got shape {x.shape}")
    return _bootstrap_ci((x,), lambda x, axis: np.mean(x, axis=axis), x, n_boot, level, rng)


def clustered_mean_ci(
    values: Sequence[float],
    clusters: Sequence[Any],
    n_boot: int = 10_000,
    level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> Interval:
    """BCa bootstrap interval of the mean of ``values``, resampling whole clusters (e.g. tasks)."""
    sums, counts = _clustered(np.asarray(values, dtype=float), clusters)
    return _bootstrap_ci((sums, counts), _ratio, sums / counts, n_boot, level, rng)


def _ratio(sums: np.ndarray, counts: np.ndarray, axis: int) -> np.ndarray:
    return np.sum(sums, axis=axis) / np.sum(counts, axis=axis)


def _bootstrap_ci(
    data: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    units: np.ndarray,
    n_boot: int,
    level: float,
    rng: np.random.Generator | int | None,
) -> Interval:
    """BCa bootstrap interval of ``statistic`` over paired samples ``data`` (one row per resampled unit).

    Units whose values (``units``) are all equal give the point interval (the bootstrap has nothing to
    resample); where BCa is undefined (too few distinct values for its acceleration), the percentile
    interval of the same resamples is used."""
    import warnings

    from scipy.stats import bootstrap

    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    estimate = float(statistic(*data, axis=-1))
    if np.ptp(units) == 0:
        return Interval(estimate, estimate, estimate)
    options = dict(
        confidence_level=level, vectorized=True, paired=True, batch=_batch(units.size), rng=_rng(rng)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate BCa is detected below and replaced
        result = bootstrap(data, statistic, n_resamples=n_boot, method="BCa", **options)
    low, high = result.confidence_interval
    if not (np.isfinite(low) and np.isfinite(high)):  # the same resamples, percentile interval
        result = bootstrap(
            data, statistic, n_resamples=0, bootstrap_result=result, method="percentile", **options
        )
        low, high = result.confidence_interval
    return Interval(estimate, float(min(low, estimate)), float(max(high, estimate)))


def _clustered(d: np.ndarray, clusters: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster the sum of the differences and the pair count (each pair its own cluster if None)."""
    if clusters is None:
        return d, np.ones_like(d)
    if len(clusters) != d.size:
        raise ValueError(f"{len(clusters)} cluster labels for {d.size} pairs")
    _, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    return np.bincount(inverse, weights=d), np.bincount(inverse).astype(float)


def paired_bootstrap_ci(
    base: Sequence[float],
    other: Sequence[float],
    n_boot: int = 10_000,
    level: float = 0.95,
    rng: np.random.Generator | int | None = None,
    clusters: Sequence[Any] | None = None,
) -> Interval:
    """BCa bootstrap interval of mean(other - base) (``scipy.stats.bootstrap``), resampling whole pairs,
    or whole clusters of pairs (e.g. tasks) when ``clusters`` labels each pair."""
    d = _paired_differences(base, other)
    if clusters is None:
        return mean_ci(d, n_boot, level, rng)
    sums, counts = _clustered(d, clusters)
    return _bootstrap_ci((sums, counts), _ratio, sums / counts, n_boot, level, rng)


def paired_permutation_p(
    base: Sequence[float],
    other: Sequence[float],
    n_perm: int = 10_000,
    rng: np.random.Generator | int | None = None,
    clusters: Sequence[Any] | None = None,
) -> float:
    """Two-sided sign-flip test of mean(other - base) = 0 (``scipy.stats.permutation_test``).

    The statistic is the absolute mean difference and every resample flips the signs of the pairs'
    differences (with ``clusters``, all pairs of a cluster flip together), so the p-value is
    ``(1 + #{|T*| >= |T|}) / (1 + n_perm)``; with ``2 ** n <= n_perm`` units scipy enumerates every sign
    pattern instead (the exact test)."""
    from scipy.stats import permutation_test

    d = _paired_differences(base, other)
    sums, _ = _clustered(d, clusters)
    if not np.any(sums):
        return 1.0
    result = permutation_test(
        (sums,),
        lambda x, axis: np.abs(np.sum(x, axis=axis)) / d.size,
        permutation_type="samples",
        n_resamples=n_perm,
        alternative="greater",
        vectorized=True,
        batch=_batch(sums.size),
        rng=_rng(rng),
    )
    return float(result.pvalue)


# -- event rates -----------------------------------------------------------------------------------
def event_rates(results: Sequence[EpisodeResult]) -> dict[str, dict[str, float | int]]:
    """Per event: fraction of episodes in which it fired / applied (the paper's rates), with counts."""
    n = len(results)
    if n == 0:
        raise ValueError("no episodes")
    fired = np.array([r.fired for r in results], dtype=bool).reshape(n, len(EVENTS))
    applicable = np.array([r.applicable for r in results], dtype=bool).reshape(n, len(EVENTS))
    return {
        event: {
            "fired": float(fired[:, j].mean()),
            "applicable": float(applicable[:, j].mean()),
            "fired_count": int(fired[:, j].sum()),
            "applicable_count": int(applicable[:, j].sum()),
            "episodes": n,
        }
        for j, event in enumerate(EVENTS)
    }


# -- finite-buffer theory --------------------------------------------------------------------------
def buffer_slack(G: Sequence[float]) -> float:
    """sigma_B = max G - mean G: no reweighting of the buffer can raise mean G by more."""
    g = np.asarray(G, dtype=float)
    if g.size == 0:
        raise ValueError("empty buffer")
    return float(g.max() - g.mean())


def aw_weights(
    advantages: Sequence[float], beta: float = 0.2, clip: tuple[float, float] | None = None
) -> np.ndarray:
    """w = exp(A / beta), optionally clipped to ``clip = (low, high)`` as in training (0.1, 10)."""
    if beta <= 0:
        raise ValueError(f"beta must be positive, got {beta}")
    with np.errstate(over="ignore"):
        w = np.exp(np.asarray(advantages, dtype=float) / beta)
    if not np.all(np.isfinite(w)):
        raise ValueError("AW weights overflow: advantages / beta too large")
    if clip is not None:
        w = np.clip(w, clip[0], clip[1])
    return w


def per_task_advantages(G: Sequence[float], task_index: Sequence[int]) -> np.ndarray:
    """A = G - mean G of the same task's trajectories (the paper's per-task baseline)."""
    g = np.asarray(G, dtype=float)
    idx = np.asarray(task_index)
    if g.shape != idx.shape:
        raise ValueError(f"G and task_index differ in shape: {g.shape} vs {idx.shape}")
    _, inverse = np.unique(idx, return_inverse=True)
    sums = np.bincount(inverse, weights=g)
    counts = np.bincount(inverse)
    return g - (sums / counts)[inverse]


def finite_buffer_check(
    G: Sequence[float],
    advantages: Sequence[float],
    psi: Sequence[float],
    beta: float = 0.2,
    clip: tuple[float, float] | None = None,
) -> dict[str, float | bool]:
    """Theorem (finite buffer): the outcome bound and the process identity, evaluated on one buffer.

    ``delta_psi_direct`` is E_q[Psi] - E_mu[Psi]; ``delta_psi_cov`` is Cov_mu(w, Psi) / E_mu[w]; they
    agree up to rounding (``identity_error``). The identity holds for any positive weights, clipped too.
    Weighted sums are numpy's pairwise sums, not BLAS dot products, whose accumulation order follows the
    CPU's OpenBLAS kernel and thread count: the same buffer gives the same bits on every machine.
    """
    g = np.asarray(G, dtype=float)
    p = np.asarray(psi, dtype=float)
    w = aw_weights(advantages, beta, clip)
    if not g.shape == p.shape == w.shape or g.ndim != 1 or g.size == 0:
        raise ValueError(
            f"G, advantages and psi need one equal 1-d shape, got {g.shape}, {w.shape}, {p.shape}"
        )
    q = w / w.sum()
    mean_g = float(g.mean())
    eq_g = float(np.sum(q * g))
    sigma = buffer_slack(g)
    delta_q = eq_g - mean_g
    mean_w = float(w.mean())
    cov_w_psi = float(np.mean((w - mean_w) * (p - p.mean())))
    delta_direct = float(np.sum(q * p) - p.mean())
    delta_cov = cov_w_psi / mean_w
    return {
        "N": int(g.size),
        "beta": float(beta),
        "mean_G": mean_g,
        "E_q_G": eq_g,
        "max_G": float(g.max()),
        "delta_Q": delta_q,
        "sigma_B": sigma,
        "bound_holds": bool(delta_q <= sigma + 1e-12),
        "mean_psi": float(p.mean()),
        "mean_w": mean_w,
        "cov_w_psi": cov_w_psi,
        "delta_psi_direct": delta_direct,
        "delta_psi_cov": delta_cov,
        "identity_error": abs(delta_direct - delta_cov),
        "ess": float(w.sum() ** 2 / np.sum(w * w)),
    }


def buffer_stats(
    G: Sequence[float],
    task_index: Sequence[int],
    hms_fired: Sequence[Sequence[bool]] | np.ndarray,
    hms_norm: Sequence[float] | None = None,
    hms_applicable: Sequence[Sequence[bool]] | np.ndarray | None = None,
    beta: float = 0.2,
    clip: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """sigma_D and the finite-buffer checks with Psi = each event's indicator and HMS_norm.

    Advantages are per-task (``per_task_advantages``). HMS is ``hms_norm`` when given, else recomputed
    from ``hms_fired`` / ``hms_applicable`` with the default weights (every event applicable if the
    latter is missing too; ``hms_source`` says which).
    """
    from harness_gym.core.hms import hms_norm as _hms_norm

    g = np.asarray(G, dtype=float)
    fired = np.asarray(hms_fired, dtype=float).reshape(g.size, len(EVENTS))
    adv = per_task_advantages(g, task_index)
    if hms_norm is not None:
        hms, source = np.asarray(hms_norm, dtype=float), "given"
    else:
        applicable = (
            np.ones_like(fired, dtype=bool)
            if hms_applicable is None
            else np.asarray(hms_applicable, dtype=bool).reshape(fired.shape)
        )
        hms = np.array(
            [
                _hms_norm({e: {"fired": bool(f[j]), "applicable": bool(a[j])} for j, e in enumerate(EVENTS)})
                for f, a in zip(fired, applicable, strict=True)
            ]
        )
        source = "all-applicable" if hms_applicable is None else "recomputed"
    checks = {e: finite_buffer_check(g, adv, fired[:, j], beta, clip) for j, e in enumerate(EVENTS)}
    checks[HMS] = finite_buffer_check(g, adv, hms, beta, clip)
    return {
        "N": int(g.size),
        "tasks": int(np.unique(np.asarray(task_index)).size),
        "mean_G": float(g.mean()),
        "max_G": float(g.max()),
        "sigma_D": buffer_slack(g),
        "beta": float(beta),
        "clip": list(clip) if clip is not None else None,
        "hms_source": source,
        "checks": checks,
    }


def buffer_arrays(episodes: Iterable[Any]) -> dict[str, np.ndarray]:
    """G, task_index, hms_fired, hms_applicable and hms_norm of collected episodes (last info row).

    Takes anything with an ``infos`` mapping per episode laid out as ``harness_gym.datasets.collect`` writes
    it, e.g. ``minari.load_dataset(id).iterate_episodes()``; minari itself is not imported here.
    """
    rows: dict[str, list[Any]] = {
        k: [] for k in ("G", "task_index", "hms_fired", "hms_applicable", "hms_norm")
    }
    for ep in episodes:
        for key, values in rows.items():
            values.append(np.asarray(ep.infos[key])[-1])
    if not rows["G"]:
        raise ValueError("no episodes")
    return {
        "G": np.asarray(rows["G"], dtype=float),
        "task_index": np.asarray(rows["task_index"], dtype=int),
        "hms_fired": np.asarray(rows["hms_fired"], dtype=bool),
        "hms_applicable": np.asarray(rows["hms_applicable"], dtype=bool),
        "hms_norm": np.asarray(rows["hms_norm"], dtype=float),
    }


# -- comparing policies ----------------------------------------------------------------------------
def _by_key(name: str, results: Sequence[EpisodeResult]) -> dict[PairKey, EpisodeResult]:
    table: dict[PairKey, EpisodeResult] = {}
    for r in results:
        if r.key in table:
            raise PairingError(f"policy {name!r} has episode (task, seed, rollout) = {r.key} twice")
        table[r.key] = r
    if not table:
        raise PairingError(f"policy {name!r} has no results")
    return table


def _pair(
    a_name: str, a: Mapping[PairKey, EpisodeResult], b_name: str, b: Mapping[PairKey, EpisodeResult]
) -> tuple[list[EpisodeResult], list[EpisodeResult]]:
    """Both sides in one (sorted) key order; a clear error naming the unmatched episodes otherwise."""
    only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    if only_a or only_b:
        parts = []
        for name, keys in ((a_name, only_a), (b_name, only_b)):
            if keys:
                shown = ", ".join(str(k) for k in keys[:5]) + (" ..." if len(keys) > 5 else "")
                parts.append(f"{len(keys)} only in {name!r}: {shown}")
        raise PairingError(
            f"results of {a_name!r} and {b_name!r} do not pair on (task_id, seed, rollout): "
            + "; ".join(parts)
        )
    keys = sorted(a)
    return [a[k] for k in keys], [b[k] for k in keys]


def _policy_rng(rng_seed: int, *names: str) -> np.random.Generator:
    """One stream per comparison, so adding a policy never changes another policy's interval."""
    return np.random.default_rng([rng_seed, *(zlib.crc32(n.encode()) for n in names)])


def _paired_effect(
    base: Sequence[EpisodeResult],
    other: Sequence[EpisodeResult],
    rng: np.random.Generator,
    n_boot: int,
    n_perm: int,
    level: float,
    by_task: bool = False,
) -> dict[str, float]:
    gb, go = [r.G for r in base], [r.G for r in other]
    clusters = [r.task_id for r in base] if by_task else None
    ci = paired_bootstrap_ci(gb, go, n_boot=n_boot, level=level, rng=rng, clusters=clusters)
    return {
        "delta_G": ci.estimate,
        "ci_low": ci.low,
        "ci_high": ci.high,
        "p_value": paired_permutation_p(gb, go, n_perm=n_perm, rng=rng, clusters=clusters),
        "delta_hms": float(np.mean([r.hms_norm for r in other]) - np.mean([r.hms_norm for r in base])),
    }


def compare(
    results_by_policy: Mapping[str, Sequence[EpisodeResult]],
    base: str = "base",
    aw: str = "awr",
    bc: str = "bc",
    fc: str = "forced-check",
    rng_seed: int = 0,
    n_boot: int = 10_000,
    n_perm: int = 10_000,
    level: float = 0.95,
) -> dict[str, Any]:
    """Per policy the paper's table entries against ``base``; AW-BC and AW-FC lifts when present.

    A lift difference is ``delta_G(aw) - delta_G(other)`` against the shared Base run, with its own
    paired interval and p-value (aw vs the other policy on the same episodes).
    """
    if base not in results_by_policy:
        raise KeyError(f"base policy {base!r} not among {sorted(results_by_policy)}")
    tables = {name: _by_key(name, res) for name, res in results_by_policy.items()}
    distinct = {
        name: distinct_episodes((r.task_id, r.trace) for r in res)[0]
        for name, res in results_by_policy.items()
    }
    by_task = any(distinct[name] < len(res) for name, res in results_by_policy.items())
    env_ids = {r.env_id for res in results_by_policy.values() for r in res}
    if len(env_ids) > 1:
        raise PairingError(f"results come from several environments: {sorted(env_ids)}")
    base_rates = event_rates(list(tables[base].values()))
    policies: dict[str, Any] = {}
    for name in results_by_policy:
        b, o = _pair(base, tables[base], name, tables[name])
        rates = event_rates(o)
        entry: dict[str, Any] = {
            "episodes": len(o),
            "pairs": len(o),
            "G": float(np.mean([r.G for r in o])),
            "base_G": float(np.mean([r.G for r in b])),
            "hms_norm": float(np.mean([r.hms_norm for r in o])),
            "distinct_episodes": distinct[name],
        }
        if name == base:
            entry.update(delta_G=0.0, ci_low=None, ci_high=None, p_value=None, delta_hms=0.0)
        else:
            rng = _policy_rng(rng_seed, base, name)
            entry.update(_paired_effect(b, o, rng, n_boot, n_perm, level, by_task))
        entry["events"] = {
            e: {
                "base": base_rates[e]["fired"],
                "policy": rates[e]["fired"],
                "applicable": bool(base_rates[e]["applicable_count"] or rates[e]["applicable_count"]),
            }
            for e in EVENTS
        }
        entry["cbs"] = rates[CBS]["fired"]
        entry["early_submit"] = rates[EARLY_SUBMIT]["fired"]
        policies[name] = entry
    lifts: dict[str, Any] = {}
    if aw in tables:
        for label, other in (("aw_minus_bc", bc), ("aw_minus_fc", fc)):
            if other not in tables or other == aw:
                continue
            o, a = _pair(other, tables[other], aw, tables[aw])
            effect = _paired_effect(o, a, _policy_rng(rng_seed, other, aw), n_boot, n_perm, level, by_task)
            lifts[label] = {
                "aw": aw,
                "other": other,
                "aw_lift": policies[aw]["delta_G"],
                "other_lift": policies[other]["delta_G"],
                "estimate": policies[aw]["delta_G"] - policies[other]["delta_G"],
                "ci_low": effect["ci_low"],
                "ci_high": effect["ci_high"],
                "p_value": effect["p_value"],
                "delta_hms": effect["delta_hms"],
            }
    return {
        "env_id": next(iter(env_ids)),  # one: base's episodes exist (event_rates), from one env
        "base": base,
        "level": level,
        "n_boot": n_boot,
        "n_perm": n_perm,
        "rng_seed": rng_seed,
        "resampled": "tasks" if by_task else "pairs",
        "policies": policies,
        "lifts": lifts,
    }
